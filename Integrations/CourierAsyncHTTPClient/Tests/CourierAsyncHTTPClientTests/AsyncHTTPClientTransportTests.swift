import AsyncHTTPClient
import Courier
import CourierAsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private struct Memo: Codable, Sendable, Equatable {
    let id: Int
    let text: String
}

@Suite("AsyncHTTPClientTransport over HTTP")
struct AsyncHTTPClientTransportHTTPTests {
    @Test("A JSON answer over loopback HTTP is decoded by the real client")
    func plainGet() async throws {
        let server = try await TestServer { request in
            request.uri == "/memos/1" ? .json(#"{"id":1,"text":"over NIO"}"#) : .text("no", status: .notFound)
        }
        let transport = try AsyncHTTPClientTransport()
        let memo = try await client(transport, baseURL: server.url("/")).run(
            NetworkRequest<VoidRequest, Memo>(path: "memos/1", method: .get)
        ).value
        #expect(memo == Memo(id: 1, text: "over NIO"))
        #expect(server.requests.first?.method == .GET)
        try await transport.shutdown()
        try await server.stop()
    }

    @Test("A body that passes maximumResponseSize in its middle fails with responseTooLarge")
    func sizeLimit() async throws {
        let server = try await TestServer { _ in TestServer.Response(body: patternBytes(100_000), pieces: 4) }
        let transport = try AsyncHTTPClientTransport()
        let small = NetworkRequest<VoidRequest, Data>(path: "blob", method: .get, maximumResponseSize: 30_000)
        let error = try await #require(throws: NetworkClientError.self) {
            try await client(transport, baseURL: server.url("/")).run(small)
        }
        guard case .responseTooLarge(let limit) = error else {
            Issue.record("expected responseTooLarge, got \(error)")
            return
        }
        #expect(limit == 30_000)
        let whole = NetworkRequest<VoidRequest, Data>(path: "blob", method: .get, maximumResponseSize: 100_000)
        #expect(try await client(transport, baseURL: server.url("/")).run(whole).value == Data(patternBytes(100_000)))
        try await transport.shutdown()
        try await server.stop()
    }

    @Test("Cancelling the caller ends the call with CancellationError and closes the connection")
    func cancellation() async throws {
        let server = try await TestServer { _ in nil }
        let transport = try AsyncHTTPClientTransport()
        let client = client(transport, baseURL: server.url("/"))
        let call = Task { try await client.run(NetworkRequest<VoidRequest, Data>(path: "slow", method: .get)) }
        // Waits until the request reached the server, without sleeping as synchronisation.
        try await withTimeLimit(.seconds(30)) {
            while server.requests.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        }
        call.cancel()
        let outcome = try await withTimeLimit(.seconds(30)) { await call.result }
        #expect(throws: CancellationError.self) { try outcome.get() }
        let closed = try await withTimeLimit(.seconds(30)) {
            var iterator = server.closures.makeAsyncIterator()
            return await iterator.next() != nil
        }
        #expect(closed)
        try await transport.shutdown()
        try await server.stop()
    }

    @Test("A cross-origin 307 is followed by Courier: method and body kept, Authorization dropped")
    func crossOriginRedirect() async throws {
        let mirror = try await TestServer { request in
            TestServer.Response(headers: [("Content-Type", "application/json")], body: request.body)
        }
        let mirrorURL = mirror.url("/upload")
        let origin = try await TestServer { _ in .redirect(to: mirrorURL.absoluteString, status: .temporaryRedirect) }
        let transport = try AsyncHTTPClientTransport()
        let request = NetworkRequest<Memo, Memo>(
            path: "upload", method: .post, body: Memo(id: 5, text: "kept"),
            additionalHeaders: ["Authorization": "Bearer s3cr3t", "X-Trace": "abc"])
        let echoed = try await client(transport, baseURL: origin.url("/")).run(request).value
        #expect(echoed == Memo(id: 5, text: "kept"))
        #expect(origin.requests.first?.headers["Authorization"] == ["Bearer s3cr3t"])
        let second = try #require(mirror.requests.first)
        #expect(second.method == .POST)
        #expect(second.headers["Authorization"].isEmpty)
        #expect(second.headers["X-Trace"] == ["abc"])
        #expect(second.body == origin.requests.first?.body)
        try await transport.shutdown()
        try await origin.stop()
        try await mirror.stop()
    }

    @Test("A DownloadedFile lands the body in its file, progress ending at the total")
    func download() async throws {
        let body = patternBytes(300_000)
        let server = try await TestServer { _ in
            TestServer.Response(headers: [("Content-Type", "text/csv")], body: body, pieces: 1)
        }
        let transport = try AsyncHTTPClientTransport()
        let destination = temporaryFile("export.csv")
        defer { try? FileManager.default.removeItem(at: destination) }
        let last = NIOLockedValueBox<TransferProgress?>(nil)
        let request = NetworkRequest<VoidRequest, DownloadedFile>(
            path: "export.csv", method: .get, downloadDestination: destination,
            onProgress: { progress in last.withLockedValue { $0 = progress } })
        let file = try await client(transport, baseURL: server.url("/")).run(request).value
        #expect(file.byteCount == 300_000)
        #expect(file.contentType == "text/csv")
        #expect(try Data(contentsOf: destination) == Data(body))
        #expect(last.withLockedValue { $0 }?.bytesReceived == 300_000)
        try await transport.shutdown()
        try await server.stop()
    }

    @Test("A FileUpload streams the file: it arrives byte for byte with its Content-Length, progress reaching it")
    func fileUpload() async throws {
        let bytes = patternBytes(1_000_000)
        let source = temporaryFile("upload.bin")
        try Data(bytes).write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }
        let server = try await TestServer { _ in TestServer.Response(status: .noContent) }
        let transport = try AsyncHTTPClientTransport()
        let sent = NIOLockedValueBox<Int64>(0)
        let request = NetworkRequest<FileUpload, VoidResponse>(
            path: "files/upload.bin", method: .put, body: FileUpload(url: source),
            onProgress: { progress in sent.withLockedValue { $0 = progress.bytesSent } })
        _ = try await client(transport, baseURL: server.url("/")).run(request)
        let received = try #require(server.requests.first)
        #expect(received.body == bytes)
        #expect(received.headers["Content-Length"] == ["1000000"])
        #expect(received.headers["Transfer-Encoding"].isEmpty)
        #expect(sent.withLockedValue { $0 } == 1_000_000)
        try await transport.shutdown()
        try await server.stop()
    }

    @Test("An HTTPClient that follows redirects is refused: Courier follows them")
    func refusesFollowingClient() async throws {
        let following = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup,
            configuration: HTTPClient.Configuration(redirectConfiguration: .follow(max: 5, allowCycles: false)))
        #expect(throws: AsyncHTTPClientTransportError.clientFollowsRedirects) {
            try AsyncHTTPClientTransport(client: following)
        }
        try await following.shutdown()
        let fitting = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup,
            configuration: try AsyncHTTPClientTransport.configuration())
        let transport = try AsyncHTTPClientTransport(client: fitting)
        #expect(!transport.ownsClient)
        try await transport.shutdown()  // Does nothing: the client is the caller's.
        try await fitting.shutdown()
    }
}

@Suite("AsyncHTTPClientTransport over HTTPS")
struct AsyncHTTPClientTransportHTTPSTests {
    @Test("A private CA trusted by this client only: the HTTPS request succeeds")
    func trustedPrivateCA() async throws {
        let authority = try TestAuthority(name: "Courier Test CA")
        let server = try await TestServer(tls: try authority.serverTLS()) { _ in .json(#"{"id":7,"text":"tls"}"#) }
        let transport = try AsyncHTTPClientTransport(tls: TLSOptions(trustRoots: .only(pem: try authority.pem)))
        let memo = try await client(transport, baseURL: server.url("/", host: "localhost")).run(
            NetworkRequest<VoidRequest, Memo>(path: "memo", method: .get)
        ).value
        #expect(memo == Memo(id: 7, text: "tls"))
        try await transport.shutdown()
        try await server.stop()
    }

    @Test("A server whose CA this client does not trust is refused with serverCertificateHasUnknownRoot")
    func untrustedCA() async throws {
        let authority = try TestAuthority(name: "Courier Test CA")
        let other = try TestAuthority(name: "Another CA")
        let server = try await TestServer(tls: try authority.serverTLS()) { _ in .text("never") }
        for trust in [TLSOptions.TrustRoots.only(pem: try other.pem), .system] {
            let transport = try AsyncHTTPClientTransport(tls: TLSOptions(trustRoots: trust))
            let error = try await #require(throws: NetworkClientError.self) {
                try await client(transport, baseURL: server.url("/", host: "localhost")).run(
                    NetworkRequest<VoidRequest, Data>(path: "memo", method: .get))
            }
            #expect(transportCode(error) == .serverCertificateHasUnknownRoot, "\(error)")
            try await transport.shutdown()
        }
        #expect(server.requests.isEmpty)
        try await server.stop()
    }

    @Test("A server requiring a client certificate: refused without one, answered with one (mTLS)")
    func mutualTLS() async throws {
        let authority = try TestAuthority(name: "Courier Test CA")
        let clients = try TestAuthority(name: "Courier Client CA")
        let server = try await TestServer(tls: try authority.serverTLS(requiringClientsOf: clients)) { _ in
            .json(#"{"id":9,"text":"mutual"}"#)
        }
        let request = NetworkRequest<VoidRequest, Memo>(path: "memo", method: .get)
        let anonymous = try AsyncHTTPClientTransport(tls: TLSOptions(trustRoots: .only(pem: try authority.pem)))
        let error = try await #require(throws: NetworkClientError.self) {
            try await client(anonymous, baseURL: server.url("/", host: "localhost")).run(request)
        }
        #expect(transportCode(error) == .clientCertificateRequired, "\(error)")
        try await anonymous.shutdown()

        let identity = try clients.issue(commonName: "courier-client", forServer: false)
        let presenting = try mutualTLSTransport(trusting: authority, presenting: identity)
        let memo = try await client(presenting, baseURL: server.url("/", host: "localhost")).run(request).value
        #expect(memo == Memo(id: 9, text: "mutual"))
        #expect(server.requests.count == 1)
        try await presenting.shutdown()
        try await server.stop()
    }

    @Test("PEM that is not a certificate is refused with invalidPEM naming what, never its text")
    func invalidPEM() {
        #expect(throws: AsyncHTTPClientTransportError.invalidPEM("trust roots")) {
            try AsyncHTTPClientTransport(tls: TLSOptions(trustRoots: .only(pem: "not a certificate")))
        }
    }
}

/// A gate a test opens once; the server side waits on it.
private final class Gate: Sendable {
    private let (opened, opener) = AsyncStream.makeStream(of: Void.self)

    func open() { opener.finish() }

    func wait() async {
        for await _ in opened {}
    }
}

/// One line of the backpressure test's body: exactly `exportLineSize` bytes with its line end.
private struct ExportLine: Decodable, Sendable {
    let id: Int
    let pad: String
}

private let exportLineSize = 1_024

private func exportLine(_ id: Int) -> [UInt8] {
    let start = Array(#"{"id":\#(id),"pad":""#.utf8)
    let end = Array(#""}"#.utf8) + [0x0A]
    return start + Array(repeating: UInt8(ascii: "x"), count: exportLineSize - start.count - end.count) + end
}

extension TimedSuites {
    @Suite("AsyncHTTPClientTransport streams")
    struct AsyncHTTPClientTransportStreamingTests {
        @Test("A ServerSentEvents GET returns at the head and yields each event as the server writes it")
        func serverSentEvents() async throws {
            let gate = Gate()
            let server = try await TestServer { _ in
                .eventStream { body in
                    try await body.send("id: 1\ndata: one\n\n")
                    await gate.wait()
                    try await body.send("event: update\ndata: two\n\n")
                    try await body.send("data: three\n\n")
                    try await body.end()
                }
            }
            let transport = try AsyncHTTPClientTransport()
            let events = try await withTimeLimit(.seconds(30)) {
                try await client(transport, baseURL: server.url("/")).run(
                    NetworkRequest<VoidRequest, ServerSentEvents>(path: "events", method: .get)
                ).value
            }
            var iterator = events.makeAsyncIterator()
            // The server holds the rest of the body until the gate opens: this event came while the body was open.
            let first = try await iterator.next()
            #expect(first?.data == "one")
            #expect(first?.id == "1")
            gate.open()
            let second = try await iterator.next()
            #expect(second?.event == "update")
            #expect(second?.data == "two")
            #expect(try await iterator.next()?.data == "three")
            #expect(try await iterator.next() == nil)
            #expect(server.requests.first?.headers["Accept"] == ["text/event-stream"])
            try await transport.shutdown()
            try await server.stop()
        }

        @Test("Breaking out of the loop closes the connection at once")
        func breakCloses() async throws {
            let server = try await TestServer { _ in
                .eventStream { body in
                    try await body.send("data: first\n\n")
                    await body.closed()  // Writes nothing more until the client closes the connection.
                }
            }
            let transport = try AsyncHTTPClientTransport()
            let events = try await client(transport, baseURL: server.url("/")).run(
                NetworkRequest<VoidRequest, ServerSentEvents>(path: "events", method: .get)
            ).value
            var seen: [String] = []
            for try await event in events {
                seen.append(event.data)
                break
            }
            let broke = ContinuousClock.now
            let closed = try await withTimeLimit(.seconds(30)) {
                var iterator = server.closures.makeAsyncIterator()
                return await iterator.next() != nil
            }
            let took = ContinuousClock.now - broke
            #expect(seen == ["first"])
            #expect(closed)
            #expect(took < .seconds(1), "the server saw the connection close \(took) after the break")
            try await transport.shutdown()
            try await server.stop()
        }

        @Test(
            "A reader that holds back holds the server back: what it wrote stays bounded, then the whole body arrives")
        func backpressure() async throws {
            let lines = 64 * 1_024  // 64 MiB in all.
            let server = try await TestServer { _ in
                TestServer.Response(
                    headers: [("Content-Type", "application/x-ndjson")],
                    flood: TestServer.Flood(lines: lines, line: exportLine))
            }
            let transport = try AsyncHTTPClientTransport()
            let export = try await client(transport, baseURL: server.url("/")).run(
                NetworkRequest<VoidRequest, JSONLines<ExportLine>>(path: "export", method: .get)
            ).value

            // The reader reads nothing yet. Waits until the server's writes stop progressing (unchanged for 0.5 s) and
            // reads the count: a poll for a stable state, not a sleep the outcome depends on (without backpressure the
            // server writes the whole 64 MiB in well under a second on loopback, and the count stops there).
            let held = try await withTimeLimit(.seconds(60)) {
                var last = -1
                var stableSince = ContinuousClock.now
                while true {
                    let now = server.bodyBytesWritten
                    if now != last {
                        (last, stableSince) = (now, ContinuousClock.now)
                    } else if ContinuousClock.now - stableSince >= .milliseconds(500) {
                        return now
                    }
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            // What can sit between the server's writes and a reader that reads nothing, once the transport waits in
            // readyForMore(): Courier's buffer (NetworkConfiguration.streamBufferCapacity, 1 MiB, plus the piece that filled);
            // AsyncHTTPClient's one buffered piece and what NIO's last reads took (a few 64 KiB reads); the client
            // socket's receive buffer, which Linux autotunes from what the client read before it was held back (1 to 3 MiB
            // seen here); and the server socket's send buffer (512 KiB: the test server fixes it). About 2 to 5 MiB in all
            // (2.2 to 4.3 MiB measured); 8 MiB bounds it with room, an eighth of the body. Without the wait the transport
            // read on: the server wrote 17 MiB and the stream failed at NetworkConfiguration.maximumStreamBacklog.
            #expect(held >= NetworkConfiguration.streamBufferCapacity, "the server wrote \(held) bytes")
            #expect(held < 8 << 20, "the server wrote \(held) bytes while the reader held back")

            var count = 0
            for try await line in export {
                guard line.id == count else {
                    Issue.record("line \(count) came as \(line.id)")
                    break
                }
                count += 1
            }
            #expect(count == lines)
            #expect(server.bodyBytesWritten == lines * exportLineSize)
            try await transport.shutdown()
            try await server.stop()
        }
    }
}
