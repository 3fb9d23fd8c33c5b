import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

@Suite("Throttled client")
struct ThrottledClientTests {
    private func echo(_ path: String) -> Echo { Echo(path: path, method: .get) }

    private static func get(_ path: String) -> NetworkRequest<VoidRequest, VoidResponse> {
        NetworkRequest(path: path, method: .get)
    }

    @Test("200 callers never have more than N requests in flight at the server")
    func neverMoreThanN() async throws {
        let server = try LoopbackServer { _ in
            usleep(3_000)
            return .echo
        }
        let client = NetworkClient(configuration: server.configuration(connectionsPerHost: 16)).throttled(
            maxConcurrent: 4)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask { _ = try await client.run(self.echo("/\(index)")) }
            }
            try await group.waitForAll()
        }
        #expect(server.requestCount == 200)
        #expect(server.maxConcurrentRequests <= 4)
        #expect(client.inFlightCount == 0 && client.waitingCount == 0)
    }

    @Test("Waiting callers start in the order they arrived")
    func arrivalOrder() async throws {
        let gate = Gate()
        let server = try LoopbackServer { request in
            if request.path == "/hold" { gate.wait() }
            return .echo
        }
        let client = NetworkClient(configuration: server.configuration()).throttled(maxConcurrent: 1)
        let holder = Task { try await client.run(echo("/hold")) }
        #expect(await eventually { server.inProgressRequests == 1 })
        var callers: [Task<NetworkResponse<EchoedRequest>, any Error>] = []
        for index in 1...20 {
            callers.append(Task { try await client.run(echo("/\(index)")) })
            #expect(await eventually { client.waitingCount == index })
        }
        gate.open()
        _ = try await holder.value
        for caller in callers { _ = try await caller.value }
        let paths = server.recordedRequests.map(\.path)
        #expect(paths == ["/hold"] + (1...20).map { "/\($0)" })
    }

    @Test("A cancelled waiter leaves the line at once and is never sent")
    func cancelledWaiter() async throws {
        let gate = Gate()
        let server = try LoopbackServer { request in
            if request.path == "/hold" { gate.wait() }
            return .echo
        }
        let client = NetworkClient(configuration: server.configuration()).throttled(maxConcurrent: 1)
        let holder = Task { try await client.run(echo("/hold")) }
        #expect(await eventually { server.inProgressRequests == 1 })
        let waiter = Task { try await client.run(echo("/cancelled")) }
        #expect(await eventually { client.waitingCount == 1 })
        waiter.cancel()
        let outcome = await firstWithin(promptly) { () -> String? in
            do {
                _ = try await waiter.value
                return "returned"
            } catch {
                return error is CancellationError ? "cancelled" : "\(error)"
            }
        }
        #expect(outcome == "cancelled")
        #expect(client.waitingCount == 0)
        gate.open()
        _ = try await holder.value
        _ = try await client.run(echo("/after"))
        #expect(server.recordedRequests.map(\.path) == ["/hold", "/after"])
    }

    @Test("One 429 with Retry-After pauses the origin: the 199 callers waiting are not sent into it")
    func pauseOn429() async throws {
        let clock = VirtualThrottleClock()
        defer { clock.wakeEveryone() }
        let released = AnswerGate()
        let answeredAt = Locked<[TimeInterval]>([])
        let transport = InMemoryTransport { request in
            if request.url.path == "/first" {
                await released.wait()
                return .status(429, headers: ["Retry-After": "1"])
            }
            answeredAt.withLock { $0.append(clock.elapsed) }
            return .status(204)
        }
        let client = ThrottledClient(
            wrapping: NetworkClient(
                configuration: NetworkConfiguration(transport: transport, baseURL: URL(string: "https://api.test")!)),
            maxConcurrent: 1, perSecond: nil, clock: clock.clock)
        let first = Task { try await client.run(Self.get("/first")) }
        #expect(await eventually { transport.requests.count == 1 })
        let waiting = (1...199).map { index in Task { try await client.run(Self.get("/\(index)")) } }
        #expect(await eventually { client.waitingCount == 199 })

        released.open()
        await #expect {
            _ = try await first.value
        } throws: { error in
            guard case NetworkClientError.unacceptableStatusCode(429, _, _) = error else { return false }
            return true
        }
        // The throttle read the 429 before the call returned: the origin is paused, and the time has not moved.
        #expect(client.waitingCount == 199)
        #expect(transport.requests.count == 1)
        // Its wake-up is scheduled from a task of its own: wait for it, then check when it is due.
        #expect(await eventually { clock.nextWake != nil })
        #expect(clock.nextWake == clock.now + 1_000_000_000)

        clock.advance(to: try #require(clock.nextWake))
        for caller in waiting { _ = try await caller.value }
        #expect(transport.requests.count == 200)
        #expect(answeredAt.withLock { $0 }.allSatisfy { $0 == 1 })
    }

    @Test("throttled().retrying(): the retry's Retry-After wait and the origin pause run side by side")
    func composesWithRetrying() async throws {
        let clock = VirtualThrottleClock()
        defer { clock.wakeEveryone() }
        let startedAt = Locked<[TimeInterval]>([])
        let stub = StubNetworkClient()
        stub.stub(
            label: "503, then 204", where: { _ in true },
            answer: { _ in
                let attempt = startedAt.withLock { started in
                    started.append(clock.elapsed)
                    return started.count
                }
                return attempt == 1
                    ? .body(Data(), statusCode: 503, headers: ["Retry-After": "2"])
                    : .body(Data(), statusCode: 204, headers: [:])
            })
        let throttled = ThrottledClient(wrapping: stub, maxConcurrent: 2, perSecond: nil, clock: clock.clock)
        // The retry's wait passes on the same clock: if the pause ran after it instead of beside it, the retried
        // request would start at 4 s.
        let environment = RetryEnvironment(
            sleep: { seconds in clock.advance(by: seconds) }, now: { clock.date }, random: { $0.lowerBound })
        let client = RetryingDecorator(wrapping: throttled, policy: RetryPolicy(), environment: environment)

        let response = try await client.run(Self.get("/once"))

        #expect(response.statusCode == 204)
        #expect(response.metrics.attempts == 2)
        #expect(startedAt.withLock { $0 } == [0, 2])
    }

    @Test("perSecond: a burst of maxConcurrent, then no faster than the rate, to the nanosecond of virtual time")
    func rateLimit() async throws {
        let clock = VirtualThrottleClock()
        defer { clock.wakeEveryone() }
        let startedAt = Locked<[TimeInterval]>([])
        let stub = StubNetworkClient()
        stub.stub(
            label: "any", where: { _ in true },
            answer: { _ in
                startedAt.withLock { $0.append(clock.elapsed) }
                return .body(Data(), statusCode: 204, headers: [:])
            })
        let client = ThrottledClient(wrapping: stub, maxConcurrent: 2, perSecond: 10, clock: clock.clock)
        let callers = (0..<52).map { index in Task { try await client.run(Self.get("/\(index)")) } }
        let started = { startedAt.withLock { $0.count } }
        // All 52 in: the burst of 2 started, 50 wait for tokens.
        try #require(await eventually { started() == 2 && client.waitingCount == 50 && clock.nextWake != nil })
        // Each wake-up of the throttle brings one token: move the time to it, then wait until the call it let go has
        // run (its start is stamped when it reaches the stub) before moving the time again.
        for expected in 3...52 {
            clock.advance(to: try #require(clock.nextWake))
            let ran = await eventually { started() == expected && (clock.nextWake != nil || expected == 52) }
            try #require(ran, "after wake-up \(expected - 2), \(started()) calls had started")
        }
        for caller in callers { _ = try await caller.value }

        let times = startedAt.withLock { $0 }.sorted()
        #expect(times.count == 52)
        #expect(times.prefix(2) == [0, 0], "the burst")
        // Call i >= 2 starts as the (i - 1)th token after the burst arrives, 0.1 s apart: never sooner, and, since
        // nothing else holds it, as soon as the token is there.
        for (index, time) in times.enumerated() where index >= 2 {
            let due = Double(index - 1) / 10
            #expect(time >= due - 1e-9 && time < due + 1e-6, "call \(index) started at \(time) s")
        }
    }

    @Test("Values below 1 count as 1; a rate of zero or NaN sets no rate")
    func clampedSettings() throws {
        let server = try echoServer()
        let client = server.client().throttled(maxConcurrent: 0, perSecond: .nan)
        #expect(client.maxConcurrent == 1)
        #expect(client.perSecond == nil)
        #expect(server.client().throttled(maxConcurrent: 3, perSecond: 0).perSecond == nil)
    }
}

/// A virtual clock for ``ThrottledClient``: time moves only when the test moves it, and a wake-up the throttle
/// scheduled runs when the time reaches it. Nothing really waits.
final class VirtualThrottleClock: Sendable {
    private struct Sleeper {
        let deadline: UInt64
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var now: UInt64 = 1_000_000_000
        var sleepers: [Sleeper] = []
    }

    private let state = Locked(State())
    private static let start: UInt64 = 1_000_000_000

    /// The clock to give the throttle.
    var clock: ThrottleClock {
        ThrottleClock(
            now: { self.now },
            sleep: { deadline in
                await withCheckedContinuation { continuation in
                    let due = self.state.withLock { state -> Bool in
                        guard state.now < deadline else { return true }
                        state.sleepers.append(Sleeper(deadline: deadline, continuation: continuation))
                        return false
                    }
                    if due { continuation.resume() }
                }
            },
            date: { self.date })
    }

    /// The time, in nanoseconds.
    var now: UInt64 { state.withLock { $0.now } }
    /// Seconds since the clock was made.
    var elapsed: TimeInterval { Double(now - Self.start) / 1e9 }
    /// The wall clock that goes with it.
    var date: Date { Date(timeIntervalSince1970: 1_800_000_000 + elapsed) }
    /// When the earliest wake-up the throttle scheduled is due; `nil` when none is.
    var nextWake: UInt64? { state.withLock { $0.sleepers.map(\.deadline).min() } }

    /// Moves the time to `deadline` (never back) and runs every wake-up due by then.
    func advance(to deadline: UInt64) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = max(state.now, deadline)
            let due = state.sleepers.filter { $0.deadline <= state.now }
            state.sleepers.removeAll { $0.deadline <= state.now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Moves the time by `seconds`.
    func advance(by seconds: TimeInterval) {
        advance(to: now + UInt64(seconds * 1e9))
    }

    /// Runs every scheduled wake-up without moving the time, so that no task stays suspended after the test.
    func wakeEveryone() {
        let sleepers = state.withLock { state in
            defer { state.sleepers = [] }
            return state.sleepers
        }
        for sleeper in sleepers { sleeper.continuation.resume() }
    }
}
