import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

@Suite("Request metrics")
struct RequestMetricsTests {
    typealias Raw = NetworkRequest<VoidRequest, Data>

    @Test("Times are ordered and plausible against a server that delays the head 200 ms and the body 300 ms")
    func timesAndBytes() async throws {
        let body = Data(repeating: 7, count: 4_000)
        let server = try LoopbackServer { _ in
            usleep(200_000)
            return .split(body: body, splitAt: 100, between: { usleep(300_000) })
        }
        let response = try await server.client().run(Raw(path: "/slow", method: .get))
        let metrics = response.metrics
        let requestStart = try #require(metrics.requestStart)
        let responseStart = try #require(metrics.responseStart)
        #expect(metrics.start <= requestStart)
        #expect(requestStart <= responseStart)
        #expect(responseStart <= metrics.end)
        // The server's waits are lower bounds of what Courier measured; no upper bound on a loaded machine.
        #expect(responseStart.timeIntervalSince(requestStart) >= 0.19)
        #expect(metrics.end.timeIntervalSince(responseStart) >= 0.29)
        #expect(metrics.duration >= 0.48)
        #expect(metrics.bytesReceived == 4_000)
        #expect(metrics.bytesSent == 0)
        #expect(metrics.redirects == 0)
        #expect(metrics.attempts == 1)
        #expect(!metrics.shared && !metrics.fromCache)
    }

    @Test("Bytes sent and redirects followed")
    func bytesSentAndRedirects() async throws {
        let server = try LoopbackServer { request in
            request.path == "/old" ? .redirect(status: 307, location: "/new") : .echo
        }
        let request = NetworkRequest<Data, EchoedRequest>(path: "/old", method: .put, body: Data(count: 1_000))
        let metrics = try await server.client().run(request).metrics
        #expect(metrics.redirects == 1)
        #expect(metrics.bytesSent == 2_000)  // The body goes out again with a 307.
        #expect(metrics.bytesReceived > 0)
    }

    @Test("Attempts count the retries of retrying() and authenticated(by:)")
    func attempts() async throws {
        let count = Locked(0)
        let flaky = try LoopbackServer { _ in
            let seen = count.withLock { value -> Int in
                value += 1
                return value
            }
            return seen == 1 ? .respond(status: 503) : .echo
        }
        let retried = try await flaky.client().retrying(RetryPolicy(baseDelay: 0.01)).run(Echo(method: .get))
        #expect(retried.metrics.attempts == 2)

        let auth = try authServer(accepting: "fresh-1")
        let store = TokenStore(token: "stale")
        let renewed = try await auth.client().authenticated(by: store.authenticator).run(Echo(method: .get))
        #expect(renewed.metrics.attempts == 2)
    }

    @Test("shared is set when deduplicated() handed one response to several callers")
    func shared() async throws {
        let latch = Latch(count: 1)
        let gate = Gate()
        let server = try LoopbackServer { _ in
            _ = latch.arriveAndWait()
            gate.wait()
            return .echo
        }
        let client = server.client().deduplicated()
        async let first = client.run(Echo(path: "/same", method: .get))
        async let second = client.run(Echo(path: "/same", method: .get))
        #expect(await eventually { server.inProgressRequests == 1 && client.waiterCount == 2 })
        gate.open()
        let (a, b) = try await (first, second)
        #expect(a.metrics.shared && b.metrics.shared)
        #expect(server.requestCount == 1)
        let alone = try await client.run(Echo(path: "/alone", method: .get))
        #expect(!alone.metrics.shared)
    }

    @Test("Errors that reached the network carry metrics; logged entries carry the same")
    func errorsAndLogs() async throws {
        let server = try LoopbackServer { _ in .respond(status: 404, body: Data("missing".utf8)) }
        let entries = Locked<[LogEntry]>([])
        let client = server.client().logged(level: .info, to: { entry in entries.withLock { $0.append(entry) } })
        do {
            _ = try await client.run(Raw(path: "/gone", method: .get))
            Issue.record("a 404 must throw")
        } catch let error as NetworkClientError {
            let metrics = try #require(error.metrics)
            #expect(metrics.responseStart != nil)
            #expect(metrics.bytesReceived == 7)
            #expect(entries.withLock { $0.first?.metrics } == metrics)
        }

        let refusing = RefusingPort()
        do {
            _ = try await NetworkClient(configuration: refusing.configuration()).run(Raw(method: .get))
            Issue.record("a refused connection must throw")
        } catch let error as NetworkClientError {
            let metrics = try #require(error.metrics)
            #expect(metrics.requestStart != nil)
            #expect(metrics.responseStart == nil)
        }

        let ok = try await server.client().logged(level: .info, to: { entry in entries.withLock { $0.append(entry) } })
            .run(NetworkRequest<VoidRequest, VoidResponse>(method: .get, acceptableStatusCodes: [404]))
        #expect(entries.withLock { $0.last?.metrics } == ok.metrics)
    }

    @Test("A stub's response has no network times")
    func stubMetrics() async throws {
        let stub = StubNetworkClient()
        stub.stub(.get, "/x", returning: "hello")
        let metrics = try await stub.run(NetworkRequest<VoidRequest, String>(path: "/x", method: .get)).metrics
        #expect(metrics.requestStart == nil && metrics.responseStart == nil)
        #expect(metrics.attempts == 1)
    }
}
