import Courier
import CourierOpenAPI
import Foundation
import LoopbackHTTPServer
import OpenAPIRuntime
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The recommended stack over Courier's default transport (`URLSession`), for a server on loopback: a bearer token,
/// retries of transient failures, logging.
private func loopbackClient(_ server: LoopbackServer) throws -> Client {
    let serverURL = server.url("/api")
    let configuration = NetworkConfiguration(baseURL: serverURL)
    let courier = NetworkClient(configuration: configuration)
        .logged(to: { _ in })
        .retrying(RetryPolicy(maxAttempts: 3, baseDelay: 0))
        .authenticated(by: BearerTokenAuthenticator(token: { "t0ken" }, refresh: { _ in "t0ken-2" }))
    return Client(serverURL: serverURL, transport: CourierClientTransport(client: courier))
}

private func line(_ memo: Components.Schemas.Memo) -> String {
    #"{"id":\#(memo.id),"text":"\#(memo.text)"}"# + "\n"
}

private let memos = [
    Components.Schemas.Memo(id: 1, text: "first"), Components.Schemas.Memo(id: 2, text: "second"),
    Components.Schemas.Memo(id: 3, text: "third"),
]

@Suite("CourierClientTransport over loopback")
struct LoopbackStreamingTests {
    @Test("A streamed operation's body yields its first lines before the server has written the rest")
    func firstLinesBeforeTheRest() async throws {
        let gate = DispatchSemaphore(value: 0)
        let server = try LoopbackServer { request in
            guard request.path == "/api/memos/export" else { return .respond(status: 404) }
            return .writer(headers: [ServerHeader(name: "Content-Type", value: "application/x-ndjson")]) { writer in
                writer.send(line(memos[0]))
                // Holds the rest until the test has read the first line (30 s at most, should the test fail first).
                guard gate.wait(timeout: .now() + 30) == .success else { return .close }
                writer.send(line(memos[1]))
                writer.send(line(memos[2]))
                return .finish
            }
        }
        defer { server.stop() }
        let api = try loopbackClient(server)

        let response = try await api.exportMemos()
        let body = try response.ok.body.application_x_hyphen_ndjson
        var lines = body.asDecodedJSONLines(of: Components.Schemas.Memo.self).makeAsyncIterator()

        #expect(try await lines.next() == memos[0])
        // The server waits on the gate: it has written the first line and nothing more.
        #expect(server.bodyBytesSent == line(memos[0]).utf8.count)
        gate.signal()
        #expect(try await lines.next() == memos[1])
        #expect(try await lines.next() == memos[2])
        #expect(try await lines.next() == nil)

        let request = try #require(server.recordedRequests.first)
        #expect(request.header("Authorization") == "Bearer t0ken")
        #expect(request.header("Accept") == "application/x-ndjson")
        #expect(body.length == .unknown)  // Chunked: no Content-Length.
    }

    @Test("A reader that stops iterating ends the transfer: the server sees the connection close")
    func stopReading() async throws {
        let server = try LoopbackServer { _ in
            .writer(headers: [ServerHeader(name: "Content-Type", value: "application/x-ndjson")]) { writer in
                writer.send(line(memos[0]))
                // Sends nothing more; returns at once when the client closes the connection.
                writer.wait(.seconds(30))
                return .close
            }
        }
        defer { server.stop() }
        let api = try loopbackClient(server)

        let body = try await api.exportMemos().ok.body.application_x_hyphen_ndjson
        var read: [Components.Schemas.Memo] = []
        for try await memo in body.asDecodedJSONLines(of: Components.Schemas.Memo.self) {
            read.append(memo)
            break
        }

        #expect(read == [memos[0]])
        #expect(await server.waitUntil(timeout: .seconds(10)) { $0.clientClosedCount == 1 })
    }

    @Test("A body with a Content-Length streams with that length known")
    func knownLength() async throws {
        let bytes = Data((0..<300_000).map { UInt8($0 % 251) })
        let server = try LoopbackServer { _ in
            .respond(
                status: 200, headers: [ServerHeader(name: "Content-Type", value: "application/octet-stream")],
                body: bytes)
        }
        defer { server.stop() }
        let api = try loopbackClient(server)

        let body = try await api.getAttachment(path: .init(id: "1")).ok.body.binary

        #expect(body.length == .known(300_000))
        #expect(try await Data(collecting: body, upTo: 1_000_000) == bytes)
    }
}
