import Courier
import CourierAsyncHTTPClient
import Foundation
import NIOSSL
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension TimedSuites {
    /// What a stopped exchange must do over plain HTTP and over TLS: close its connection at once (the server sees it
    /// closed within 1 s of the call's failure, where NIOSSL's default waits 5 s for the server's `close_notify`) and read
    /// nothing more (the server's writes stop once the kernel buffers are full: a few MiB, where a client still reading
    /// takes hundreds of MiB a second on loopback).
    @Suite("AsyncHTTPClientTransport: a stopped exchange closes its connection at once and reads no more")
    struct StoppedExchangeTests {
        /// The most bytes the server may write after the stop: what the sockets' kernel buffers hold (the client's receive
        /// buffer autotuned to a few MiB, the server's send buffer fixed at 512 KiB), with room.
        private static let afterStopLimit = 16 << 20

        private static func transport(tls: Bool, authority: TestAuthority) throws -> AsyncHTTPClientTransport {
            tls
                ? try AsyncHTTPClientTransport(tls: TLSOptions(trustRoots: .only(pem: try authority.pem)))
                : try AsyncHTTPClientTransport()
        }

        /// How the stopped call fails.
        enum Failure: Equatable {
            case transport(URLError.Code)
            case responseTooLarge(limit: Int)

            init?(_ error: any Error) {
                if case .responseTooLarge(let limit) = error as? NetworkClientError {
                    self = .responseTooLarge(limit: limit)
                } else if let code = transportCode(error) {
                    self = .transport(code)
                } else {
                    return nil
                }
            }
        }

        /// Runs `call` against `server`, which floods the connection or stays silent, and checks the stop: the call fails
        /// with `expected`, the server sees the connection close within 1 s, and wrote at most ``afterStopLimit``
        /// bytes after the failure.
        private static func checkStop(
            server: RawServer, expected: Failure, _ call: @escaping @Sendable () async throws -> Void
        ) async throws {
            let (error, stopped) = try await failure(of: call)
            let writtenAtStop = server.bytesWritten
            let failed = try #require(error, "the call succeeded")
            #expect(Failure(failed) == expected, "\(failed)")
            let closed = try await nextClosure(server.closures)
            #expect(
                closed - stopped < .seconds(1), "the server saw the connection close \(closed - stopped) after the stop"
            )
            let after = server.bytesWritten - writtenAtStop
            #expect(after < afterStopLimit, "the server wrote \(after) bytes after the stop")
        }

        /// A server that behaves so, plain or over TLS, and a client of it whose connection is open.
        private static func setUp(
            tls: Bool, _ behaviour: RawServer.Behaviour
        ) async throws -> (RawServer, AsyncHTTPClientTransport, NetworkClient) {
            let authority = try TestAuthority(name: "Courier Test CA")
            let server = try await RawServer(tls: tls ? try authority.serverTLS() : nil, behaviour: behaviour)
            let transport = try Self.transport(tls: tls, authority: authority)
            return (server, transport, try await server.warmClient(transport, host: tls ? "localhost" : "127.0.0.1"))
        }

        /// A `200` whose body never ends, declaring a length or not.
        private static func endlessBody(declaring length: Int? = nil) -> RawServer.Behaviour {
            let framing = length.map { "Content-Length: \($0)" } ?? "Connection: close"
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\(framing)\r\n\r\n"
            return .flood(prefix: Array(head.utf8), filler: Array(repeating: UInt8(ascii: "z"), count: 1_024))
        }

        @Test("totalTimeout against a silent server", arguments: [false, true])
        func totalTimeout(tls: Bool) async throws {
            let (server, transport, client) = try await Self.setUp(tls: tls, .silent)
            try await Self.checkStop(server: server, expected: .transport(.timedOut)) {
                _ = try await client.run(NetworkRequest<VoidRequest, Data>(path: "x", method: .get, totalTimeout: 1))
            }
            try await transport.shutdown()
            try await server.stop()
        }

        @Test(
            "responseTooLarge against a body that never ends, and one that declares a length over the limit",
            arguments: [false, true], [nil, 1 << 30])
        func responseTooLarge(tls: Bool, declared: Int?) async throws {
            let (server, transport, client) = try await Self.setUp(tls: tls, Self.endlessBody(declaring: declared))
            try await Self.checkStop(server: server, expected: .responseTooLarge(limit: 1 << 20)) {
                _ = try await client.run(
                    NetworkRequest<VoidRequest, Data>(path: "x", method: .get, maximumResponseSize: 1 << 20))
            }
            try await transport.shutdown()
            try await server.stop()
        }

        @Test("A malformed head: a flood of header lines that never ends", arguments: [false, true])
        func headerFlood(tls: Bool) async throws {
            let flood = RawServer.Behaviour.flood(
                prefix: Array("HTTP/1.1 200 OK\r\n".utf8),
                filler: Array("X-Filler: \(String(repeating: "f", count: 100))\r\n".utf8))
            let (server, transport, client) = try await Self.setUp(tls: tls, flood)
            try await Self.checkStop(server: server, expected: .transport(.badServerResponse)) {
                _ = try await client.run(NetworkRequest<VoidRequest, Data>(path: "x", method: .get))
            }
            try await transport.shutdown()
            try await server.stop()
        }

        @Test("totalTimeout on a stream whose reader holds back while the server floods", arguments: [false, true])
        func streamDeadline(tls: Bool) async throws {
            let (server, transport, client) = try await Self.setUp(tls: tls, Self.endlessBody())
            let started = ContinuousClock.now
            let stream = try await client.run(
                NetworkRequest<VoidRequest, ByteStream>(path: "x", method: .get, totalTimeout: 2)
            ).value
            // The reader reads nothing: the server is held back (a few MiB) until the deadline stops the exchange.
            let closed = try await nextClosure(server.closures)
            let deadline = started + .seconds(2)
            #expect(
                closed - deadline < .seconds(1),
                "the server saw the connection close \(closed - deadline) after the deadline")
            // Held back, then stopped: all the server wrote is what the buffers took while the reader held back, and
            // whatever the client read after the stop (nothing, or what NIOSSL reads while it waits for close_notify).
            #expect(server.bytesWritten < 2 * Self.afterStopLimit, "the server wrote \(server.bytesWritten) bytes")
            let (error, _) = try await failure {
                for try await _ in stream {}
            }
            #expect(transportCode(error) == .timedOut, "\(String(describing: error))")
            try await transport.shutdown()
            try await server.stop()
        }
    }
}
