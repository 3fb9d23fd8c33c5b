import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A port on 127.0.0.1 that refuses connections: bound but never listening, so that no other test's server can take
/// it while the test runs (a stopped server's port can be reused at once by a server of a test running in parallel).
final class RefusingPort: Sendable {
    let port: Int
    private let fd: Int32

    init() {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        _ = inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length)
                return getsockname(fd, pointer, &length)
            }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit {
        close(fd)
    }

    /// `http://127.0.0.1:<port>`, optionally with user info.
    func url(userInfo: String = "") -> URL {
        URL(string: "http://\(userInfo)127.0.0.1:\(port)")!
    }

    /// A configuration pointed at this port.
    func configuration() -> NetworkConfiguration {
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.timeoutIntervalForRequest = 10
        return NetworkConfiguration(sessionConfiguration: sessionConfiguration, baseURL: url())
    }
}

/// A virtual clock for ``RetryingClient``: sleeping records the delay and moves the clock, nothing really waits.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
final class VirtualTime: Sendable {
    /// 2023-11-14T22:13:20Z.
    static let start = Date(timeIntervalSince1970: 1_700_000_000)

    private struct State {
        var now = VirtualTime.start
        var sleeps: [TimeInterval] = []
        var ranges: [ClosedRange<TimeInterval>] = []
        var generator: SplitMix64
    }

    private let state: Locked<State>
    private let longestWaits: Bool

    /// - Parameter longestWaits: Draw every jittered wait at the top of its range, for exact budgets.
    init(seed: UInt64 = 42, longestWaits: Bool = false) {
        state = Locked(State(generator: SplitMix64(seed: seed)))
        self.longestWaits = longestWaits
    }

    /// The delays slept, in order.
    var sleeps: [TimeInterval] { state.withLock { $0.sleeps } }

    /// Moves the clock on by `seconds` without a sleep: time that passes while something else happens (a connection
    /// that stays open).
    func advance(by seconds: TimeInterval) {
        state.withLock { $0.now += seconds }
    }
    /// The ranges the jitter was drawn from, in order.
    var ranges: [ClosedRange<TimeInterval>] { state.withLock { $0.ranges } }

    var environment: RetryEnvironment {
        RetryEnvironment(
            sleep: { seconds in
                self.state.withLock {
                    $0.sleeps.append(seconds)
                    $0.now += seconds
                }
                try Task.checkCancellation()
            },
            now: { self.state.withLock { $0.now } },
            random: { range in
                self.state.withLock {
                    $0.ranges.append(range)
                    if self.longestWaits { return range.upperBound }
                    return Double.random(in: range, using: &$0.generator)
                }
            })
    }
}

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
extension LoopbackServer {
    /// A retrying client for this server on virtual time.
    func retryingClient(_ policy: RetryPolicy = RetryPolicy(), time: VirtualTime) -> RetryingDecorator {
        RetryingDecorator(wrapping: client(), policy: policy, environment: time.environment)
    }
}

/// A server that answers the first `failures.count` requests with those responses, then with `.echo`.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func failingThenEcho(_ failures: [ServerResponse]) throws -> LoopbackServer {
    try LoopbackServer { request in
        request.sequenceNumber < failures.count ? failures[request.sequenceNumber] : .echo
    }
}

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func status(_ code: Int, _ headers: [ServerHeader] = [], body: String = "") -> ServerResponse {
    .respond(status: code, headers: headers, body: Data(body.utf8))
}

@Suite("RetryingClient")
struct RetryingClientTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The documented defaults")
    func defaults() {
        let policy = RetryPolicy()
        #expect(policy.maxAttempts == 3)
        #expect(policy.baseDelay == 0.5)
        #expect(policy.maxDelay == 30)
        #expect(policy.retryableMethods == [.get, .head, .put, .delete, .options])
        #expect(policy.retryableStatusCodes == [408, 429, 500, 502, 503, 504])
        #expect(
            policy.retryableURLErrorCodes == [
                .timedOut, .networkConnectionLost, .cannotConnectToHost, .notConnectedToInternet, .cannotFindHost,
                .dnsLookupFailed,
            ])
        #expect(policy.totalBudget == nil)
        #expect(policy.shouldRetry == nil)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Two 503s then success: 3 requests, waits drawn with full jitter from 0...0.5 and 0...1")
    func backoffWithJitter() async throws {
        let server = try failingThenEcho([status(503), status(503)])
        let time = VirtualTime(seed: 7)
        let echo = try await server.retryingClient(time: time).run(Echo(path: "r", method: .get)).value
        #expect(echo.path == "/r")
        #expect(server.requestCount == 3)
        var expected = SplitMix64(seed: 7)
        let first = Double.random(in: 0...0.5, using: &expected)
        let second = Double.random(in: 0...1.0, using: &expected)
        #expect(time.ranges == [0...0.5, 0...1.0])
        #expect(time.sleeps == [first, second])
        #expect(first != second)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The backoff doubles up to maxDelay")
    func backoffCap() async throws {
        let server = try LoopbackServer { _ in status(500) }
        let time = VirtualTime()
        let policy = RetryPolicy(maxAttempts: 5, baseDelay: 1, maxDelay: 3)
        await #expect(throws: NetworkClientError.self) {
            try await server.retryingClient(policy, time: time).run(Echo(method: .get))
        }
        #expect(time.ranges == [0...1, 0...2, 0...3, 0...3])
        #expect(server.requestCount == 5)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("After the last attempt the error is the last response's, unchanged: status and body")
    func lastErrorUnchanged() async throws {
        let bodies = ["first", "second", "third"]
        let server = try LoopbackServer { request in status(503, body: bodies[min(request.sequenceNumber, 2)]) }
        let time = VirtualTime()
        await #expect {
            try await server.retryingClient(time: time).run(Echo(method: .get))
        } throws: { error in
            guard case NetworkClientError.unacceptableStatusCode(503, _, let data) = error else { return false }
            return data.map { String(decoding: $0, as: UTF8.self) } == "third"
        }
        #expect(server.requestCount == 3)
        #expect(time.sleeps.count == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Retry-After in seconds sets the wait")
    func retryAfterSeconds() async throws {
        let server = try failingThenEcho([status(429, [ServerHeader(name: "Retry-After", value: "7")])])
        let time = VirtualTime()
        _ = try await server.retryingClient(time: time).run(Echo(method: .get))
        #expect(time.sleeps == [7])
        #expect(time.ranges.isEmpty)
        #expect(server.requestCount == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Retry-After as an HTTP-date sets the wait; a date in the past waits 0")
    func retryAfterDate() async throws {
        // The virtual clock reads 2023-11-14T22:13:20Z.
        let server = try failingThenEcho([
            status(503, [ServerHeader(name: "Retry-After", value: "Tue, 14 Nov 2023 22:13:45 GMT")]),
            status(503, [ServerHeader(name: "Retry-After", value: "Tue, 14 Nov 2023 22:00:00 GMT")]),
        ])
        let time = VirtualTime()
        _ = try await server.retryingClient(time: time).run(Echo(method: .get))
        #expect(time.sleeps == [25, 0])
        #expect(server.requestCount == 3)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A garbage Retry-After falls back to the backoff")
    func retryAfterGarbage() async throws {
        let server = try failingThenEcho([status(503, [ServerHeader(name: "Retry-After", value: "soon, maybe")])])
        let time = VirtualTime(seed: 3)
        _ = try await server.retryingClient(time: time).run(Echo(method: .get))
        var expected = SplitMix64(seed: 3)
        #expect(time.sleeps == [Double.random(in: 0...0.5, using: &expected)])
        #expect(server.requestCount == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A Retry-After beyond maxDelay ends the retries at once with the server's error")
    func retryAfterTooLong() async throws {
        for value in ["3600", "Tue, 14 Nov 2023 23:13:20 GMT", "99999999999999999999999"] {
            let server = try failingThenEcho([status(429, [ServerHeader(name: "Retry-After", value: value)])])
            let time = VirtualTime()
            await #expect {
                try await server.retryingClient(time: time).run(Echo(method: .get))
            } throws: { error in
                guard case NetworkClientError.unacceptableStatusCode(429, let response, _) = error else { return false }
                return response.value(forHTTPHeaderField: "Retry-After") == value
            }
            #expect(server.requestCount == 1)
            #expect(time.sleeps.isEmpty)
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("POST is not retried, unless it carries an Idempotency-Key or the policy names POST")
    func postRule() async throws {
        let plain = try LoopbackServer { _ in status(503) }
        await #expect(throws: NetworkClientError.self) {
            try await plain.retryingClient(time: VirtualTime()).run(Echo(method: .post))
        }
        #expect(plain.requestCount == 1)

        let keyed = try failingThenEcho([status(503), status(503)])
        let request = Echo(method: .post, additionalHeaders: ["idempotency-key": "8e03978e-40d5"])
        _ = try await keyed.retryingClient(time: VirtualTime()).run(request)
        #expect(keyed.requestCount == 3)
        #expect(keyed.recordedRequests.allSatisfy { $0.header("Idempotency-Key") == "8e03978e-40d5" })

        let optedIn = try failingThenEcho([status(503)])
        let policy = RetryPolicy(retryableMethods: RetryPolicy.idempotentMethods.union([.post]))
        _ = try await optedIn.retryingClient(policy, time: VirtualTime()).run(Echo(method: .post))
        #expect(optedIn.requestCount == 2)

        let patch = try LoopbackServer { _ in status(502) }
        await #expect(throws: NetworkClientError.self) {
            try await patch.retryingClient(time: VirtualTime()).run(Echo(method: .patch))
        }
        #expect(patch.requestCount == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Other 4xx, decoding errors and invalid requests are never retried")
    func neverRetried() async throws {
        for code in [400, 401, 403, 404, 409, 422] {
            let server = try LoopbackServer { _ in status(code) }
            await #expect(throws: NetworkClientError.self) {
                try await server.retryingClient(time: VirtualTime()).run(Echo(method: .get))
            }
            #expect(server.requestCount == 1, "status \(code)")
        }

        let garbage = try LoopbackServer { _ in .respond(status: 200, body: Data("not json".utf8)) }
        await #expect {
            try await garbage.retryingClient(time: VirtualTime()).run(NetworkRequest<VoidRequest, Post>(method: .get))
        } throws: { error in
            guard case NetworkClientError.decodingFailed = error else { return false }
            return true
        }
        #expect(garbage.requestCount == 1)

        let echo = try echoServer()
        let time = VirtualTime()
        await #expect {
            try await echo.retryingClient(time: time).run(Echo(method: .get, additionalHeaders: ["X-Bad": "a\r\nb"]))
        } throws: { error in
            guard case NetworkClientError.invalidHeader = error else { return false }
            return true
        }
        #expect(echo.requestCount == 0)
        #expect(time.sleeps.isEmpty)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A connection reset is transient: retried, then the value")
    func transportErrorRetried() async throws {
        let server = try failingThenEcho([.resetMidBody(status: 200, declaredLength: 100, body: Data("{".utf8))])
        let time = VirtualTime()
        let echo = try await server.retryingClient(time: time).run(Echo(path: "again", method: .get)).value
        #expect(echo.path == "/again")
        #expect(server.requestCount == 2)
        #expect(time.sleeps.count == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A server that is gone: every attempt made, the transport error unchanged")
    func cannotConnect() async throws {
        let refusing = RefusingPort()
        let configuration = refusing.configuration()
        let time = VirtualTime()
        let client = RetryingDecorator(
            wrapping: NetworkClient(configuration: configuration), policy: RetryPolicy(), environment: time.environment)
        await #expect {
            try await client.run(Echo(method: .get))
        } throws: { error in
            guard case NetworkClientError.transportFailed(let urlError) = error else { return false }
            return urlError.code == .cannotConnectToHost
        }
        #expect(time.sleeps.count == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The predicate decides about other failures, with the attempt number")
    func predicate() async throws {
        let asked = Locked<[Int]>([])
        let policy = RetryPolicy(shouldRetry: { error, attempt in
            asked.withLock { $0.append(attempt) }
            guard case NetworkClientError.unacceptableStatusCode(409, _, _) = error else { return false }
            return attempt < 2
        })
        let server = try LoopbackServer { _ in status(409) }
        await #expect(throws: NetworkClientError.self) {
            try await server.retryingClient(policy, time: VirtualTime()).run(Echo(method: .get))
        }
        #expect(server.requestCount == 2)
        #expect(asked.withLock { $0 } == [1, 2])

        // Never asked about what is never retried.
        let garbage = try LoopbackServer { _ in .respond(status: 200, body: Data("x".utf8)) }
        let always = RetryPolicy(shouldRetry: { _, _ in true })
        await #expect(throws: NetworkClientError.self) {
            try await garbage.retryingClient(always, time: VirtualTime()).run(
                NetworkRequest<VoidRequest, Post>(method: .get))
        }
        #expect(garbage.requestCount == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The total budget stops the retries before a wait that would pass it")
    func budget() async throws {
        let server = try LoopbackServer { _ in status(503) }
        let time = VirtualTime(longestWaits: true)
        // Waits of 1 s then 2 s: the second would end at 3 s, past the budget of 2.5 s.
        let policy = RetryPolicy(maxAttempts: 5, baseDelay: 1, totalBudget: 2.5)
        await #expect(throws: NetworkClientError.self) {
            try await server.retryingClient(policy, time: time).run(Echo(method: .get))
        }
        #expect(time.sleeps == [1])
        #expect(server.requestCount == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Cancelling during a backoff ends the call at once; nothing is sent after")
    func cancelDuringBackoff() async throws {
        let server = try LoopbackServer { _ in status(503) }
        let sleeping = Locked(false)
        let environment = RetryEnvironment(
            sleep: { _ in
                sleeping.withLock { $0 = true }
                try await Task.sleep(nanoseconds: 60_000_000_000)
            },
            now: { Date() }, random: { $0.upperBound })
        let client = RetryingDecorator(wrapping: server.client(), policy: RetryPolicy(), environment: environment)
        let task = Task { try await client.run(Echo(method: .get)) }
        #expect(await eventually { sleeping.withLock { $0 } })
        let took = await elapsed {
            task.cancel()
            await #expect(throws: CancellationError.self) { try await task.value }
        }
        #expect(took < promptly)
        // The call has ended, and the decorator keeps no task of its own: the first attempt is all that was sent.
        #expect(server.requestCount == 1)
    }
}
