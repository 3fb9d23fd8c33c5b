import Courier
import Foundation
import NIOConcurrencyHelpers
import NIOSSL
import Testing

@testable import CourierAsyncHTTPClient

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("IdleTimer: the silence that counts, without sockets")
struct IdleTimerTests {
    private let second: UInt64 = 1_000_000_000

    @Test("It expires once a whole timeout passed without activity, and activity starts the silence again")
    func expiry() {
        var timer = IdleTimer(timeout: 2 * second, now: 10 * second)
        #expect(timer.check(now: 11 * second) == .checkAgain(at: 12 * second))
        timer.activity(now: 11 * second)
        #expect(timer.check(now: 12 * second) == .checkAgain(at: 13 * second))
        #expect(timer.check(now: 13 * second) == .expired)
        #expect(timer.phase == .expired)
        #expect(timer.check(now: 14 * second) == .over)
        timer.end()
        #expect(timer.phase == .expired, "an expired timeout stays so when the exchange ends")
    }

    @Test("Waiting for Courier does not count; asking the server again starts a fresh silence")
    func pause() {
        var timer = IdleTimer(timeout: 2 * second, now: 0)
        timer.pause()
        #expect(timer.check(now: 5 * second) == .checkAgain(at: 7 * second))
        timer.activity(now: 6 * second)  // Ignored while paused: nothing was asked of the server.
        timer.resume(now: 9 * second)
        #expect(timer.check(now: 10 * second) == .checkAgain(at: 11 * second))
        #expect(timer.check(now: 11 * second) == .expired)
    }

    @Test("An ended exchange is never expired; a deadline past the clock's end saturates")
    func endAndOverflow() {
        var timer = IdleTimer(timeout: .max, now: 5)
        #expect(timer.deadline == .max)
        #expect(timer.check(now: .max - 1) == .checkAgain(at: .max))
        timer.end()
        #expect(timer.check(now: .max) == .over)
        #expect(timer.phase == .ended)
    }

    @Test(
        "The idle timeout is the request's timeoutInterval; not a positive number counts as 60 s; huge ones are capped")
    func interval() throws {
        var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1/")))
        #expect(AsyncHTTPClientTransport.idleTimeout(of: request) == 60, "URLRequest's default")
        request.timeoutInterval = 2.5
        #expect(AsyncHTTPClientTransport.idleTimeout(of: request) == 2.5)
        for odd in [0, -1, TimeInterval.nan] {
            request.timeoutInterval = odd
            #expect(AsyncHTTPClientTransport.idleTimeout(of: request) == 60)
        }
        request.timeoutInterval = .infinity
        #expect(AsyncHTTPClientTransport.idleTimeout(of: request) == NetworkConfiguration.maximumTimeout)
    }
}

/// A transport that records the idle timeout Courier hands it, then fails.
private final class RecordingTransport: HTTPTransport {
    let intervals = NIOLockedValueBox<[TimeInterval]>([])

    func send(_ exchange: HTTPExchange) async throws {
        intervals.withLockedValue { $0.append(exchange.request.timeoutInterval) }
        throw URLError(.cannotConnectToHost)
    }
}

/// A plain server, or one with a certificate of `authority` for localhost; and the transport that trusts it.
private func transportAndScheme(
    tls: Bool, authority: TestAuthority
) throws -> (AsyncHTTPClientTransport, TLSConfiguration?, host: String) {
    guard tls else { return (try AsyncHTTPClientTransport(), nil, "127.0.0.1") }
    let transport = try AsyncHTTPClientTransport(tls: TLSOptions(trustRoots: .only(pem: try authority.pem)))
    return (transport, try authority.serverTLS(), "localhost")
}

extension TimedSuites {
    @Suite("AsyncHTTPClientTransport: the idle timeout (timeoutInterval)")
    struct IdleTimeoutTests {
        @Test("The seam hands the transport the request's timeoutInterval, and URLRequest's 60 s when it sets none")
        func seamCarriesTheInterval() async throws {
            let transport = RecordingTransport()
            let client = NetworkClient(
                configuration: NetworkConfiguration(
                    transport: transport, baseURL: try #require(URL(string: "http://a.test"))))
            _ = try? await client.run(NetworkRequest<VoidRequest, Data>(path: "x", method: .get))
            _ = try? await client.run(NetworkRequest<VoidRequest, Data>(path: "x", method: .get, timeoutInterval: 3))
            #expect(transport.intervals.withLockedValue { $0 } == [60, 3])
        }

        @Test(
            "A server that accepts and never answers: timedOut once timeoutInterval of silence passed",
            arguments: [false, true])
        func silentServer(tls: Bool) async throws {
            let authority = try TestAuthority(name: "Courier Test CA")
            let (transport, serverTLS, host) = try transportAndScheme(tls: tls, authority: authority)
            let server = try await RawServer(tls: serverTLS, behaviour: .silent)
            let client = try await server.warmClient(transport, host: host)
            let started = ContinuousClock.now
            let (error, at) = try await failure {
                _ = try await client.run(NetworkRequest<VoidRequest, Data>(path: "x", method: .get, timeoutInterval: 1))
            }
            #expect(transportCode(error) == .timedOut, "\(String(describing: error))")
            #expect(transportError(error)?.localizedDescription == "The request timed out.")
            // The timer never fires early; the upper bound only says it fired (without it, the call waits forever).
            #expect(at - started >= .seconds(1), "timed out after \(at - started)")
            #expect(at - started < .seconds(20), "timed out after \(at - started)")
            #expect(server.requestCount == 1)
            _ = try await nextClosure(server.closures)  // The request's connection was closed.
            try await transport.shutdown()
            try await server.stop()
        }

        @Test(
            "A server that stops in the middle of the head: timedOut after timeoutInterval", arguments: [false, true])
        func unfinishedHead(tls: Bool) async throws {
            let authority = try TestAuthority(name: "Courier Test CA")
            let (transport, serverTLS, host) = try transportAndScheme(tls: tls, authority: authority)
            let server = try await RawServer(
                tls: serverTLS, behaviour: .send(Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n".utf8)))
            let client = try await server.warmClient(transport, host: host)
            let started = ContinuousClock.now
            let (error, at) = try await failure {
                _ = try await client.run(NetworkRequest<VoidRequest, Data>(path: "x", method: .get, timeoutInterval: 1))
            }
            #expect(transportCode(error) == .timedOut, "\(String(describing: error))")
            #expect(at - started >= .seconds(1))
            #expect(at - started < .seconds(20))
            try await transport.shutdown()
            try await server.stop()
        }

        @Test(
            "A body that keeps coming for longer than timeoutInterval, then stops: every piece, then timedOut after the silence",
            arguments: [false, true])
        func stopsMidBody(tls: Bool) async throws {
            let authority = try TestAuthority(name: "Courier Test CA")
            let (transport, serverTLS, host) = try transportAndScheme(tls: tls, authority: authority)
            let lastByte = NIOLockedValueBox<ContinuousClock.Instant?>(nil)
            let pieces = 12
            let server = try await TestServer(tls: serverTLS) { request in
                if request.uri == "/warm" { return .text("warm") }
                return TestServer.Response(
                    headers: [("Content-Type", "application/octet-stream")],
                    writer: { body in
                        for index in 0..<pieces {
                            // Before the write: the silence the client times starts later than this.
                            lastByte.withLockedValue { $0 = ContinuousClock.now }
                            try await body.send("\(index % 10)")
                            // The server's pace, 3 s in all with the timeout at 2 s: what is under test.
                            if index < pieces - 1 { try await Task.sleep(for: .milliseconds(250)) }
                        }
                        await body.closed()  // Nothing more until the client closes the connection.
                    })
            }
            let client = client(transport, baseURL: server.url("/", host: host))
            _ = try await client.run(NetworkRequest<VoidRequest, VoidResponse>(path: "warm", method: .get))
            let stream = try await client.run(
                NetworkRequest<VoidRequest, ByteStream>(path: "x", method: .get, timeoutInterval: 2)
            ).value
            let received = NIOLockedValueBox(0)
            let (error, at) = try await failure {
                for try await piece in stream { received.withLockedValue { $0 += piece.count } }
            }
            #expect(received.withLockedValue { $0 } == pieces, "every piece came: the silence restarted with each")
            #expect(transportCode(error) == .timedOut, "\(String(describing: error))")
            let last = try #require(lastByte.withLockedValue { $0 })
            #expect(at - last >= .seconds(2), "timed out \(at - last) after the last byte")
            #expect(at - last < .seconds(20))
            _ = try await nextClosure(server.closures)
            try await transport.shutdown()
            try await server.stop()
        }

        @Test("A stream reader that holds back longer than timeoutInterval is not timed out: the server was not silent")
        func slowReaderIsNotSilence() async throws {
            let lines = 8 * 1_024  // 8 MiB.
            let server = try await TestServer { _ in
                TestServer.Response(
                    headers: [("Content-Type", "application/octet-stream")],
                    flood: TestServer.Flood(
                        lines: lines, line: { _ in Array(repeating: UInt8(ascii: "x"), count: 1_024) }))
            }
            let transport = try AsyncHTTPClientTransport()
            let stream = try await client(transport, baseURL: server.url("/")).run(
                NetworkRequest<VoidRequest, ByteStream>(path: "export", method: .get, timeoutInterval: 1)
            ).value
            // The reader reads nothing until the server's writes stopped progressing for 2.5 s: more than two idle
            // timeouts in which the transport waited for the reader, not for the server.
            try await withTimeLimit(.seconds(60)) {
                var last = -1
                var stableSince = ContinuousClock.now
                while ContinuousClock.now - stableSince < .milliseconds(2_500) {
                    let now = server.bodyBytesWritten
                    if now != last { (last, stableSince) = (now, ContinuousClock.now) }
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            #expect(server.bodyBytesWritten < lines * 1_024, "the server was held back")
            var count = 0
            for try await piece in stream { count += piece.count }
            #expect(count == lines * 1_024)
            try await transport.shutdown()
            try await server.stop()
        }

        @Test("An upload the server stops reading: timedOut once timeoutInterval passed without progress, not a hang")
        func stalledUpload() async throws {
            let server = try await RawServer(behaviour: .stopReading)
            let transport = try AsyncHTTPClientTransport()
            let client = try await server.warmClient(transport)
            let body = Data(count: 32 << 20)  // More than the sockets' buffers take.
            let started = ContinuousClock.now
            let (error, at) = try await failure {
                _ = try await client.run(
                    NetworkRequest<Data, VoidResponse>(path: "upload", method: .put, body: body, timeoutInterval: 1))
            }
            #expect(transportCode(error) == .timedOut, "\(String(describing: error))")
            #expect(at - started >= .seconds(1))
            #expect(at - started < .seconds(20))
            try await transport.shutdown()
            try await server.stop()
        }

        @Test("A data body over 64 KiB goes out in pieces and arrives whole, with its Content-Length and progress")
        func largeDataBody() async throws {
            let server = try await TestServer { _ in TestServer.Response(status: .noContent) }
            let transport = try AsyncHTTPClientTransport()
            let reports = NIOLockedValueBox<[Int64]>([])
            let request = NetworkRequest<Data, VoidResponse>(
                path: "blob", method: .put, body: Data(patternBytes(1_000_000)),
                onProgress: { progress in reports.withLockedValue { $0.append(progress.bytesSent) } })
            _ = try await client(transport, baseURL: server.url("/")).run(request)
            let received = try #require(server.requests.first)
            #expect(received.body == patternBytes(1_000_000))
            #expect(received.headers["Content-Length"] == ["1000000"])
            #expect(reports.withLockedValue { $0 }.last == 1_000_000)
            try await transport.shutdown()
            try await server.stop()
        }
    }
}
