import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// Server-side arrival times, in seconds on the monotonic clock.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
final class Arrivals: Sendable {
    private let times = Locked<[(path: String, at: TimeInterval)]>([])

    func record(_ path: String) {
        let now = ProcessInfo.processInfo.systemUptime
        times.withLock { $0.append((path, now)) }
    }

    var all: [(path: String, at: TimeInterval)] { times.withLock { $0 } }
}

@Suite("Throttled client")
struct ThrottledClientTests {
    private func echo(_ path: String) -> Echo { Echo(path: path, method: .get) }

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
        let arrivals = Arrivals()
        let first = Locked(true)
        let server = try LoopbackServer { request in
            arrivals.record(request.path)
            let isFirst = first.withLock { state -> Bool in
                defer { state = false }
                return state
            }
            if isFirst {
                return .respond(status: 429, headers: [ServerHeader(name: "Retry-After", value: "1")])
            }
            return .echo
        }
        let client = NetworkClient(configuration: server.configuration()).throttled(maxConcurrent: 1)
        let outcomes = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<200 {
                group.addTask {
                    do {
                        return try await client.run(self.echo("/\(index)")).statusCode
                    } catch NetworkClientError.unacceptableStatusCode(let status, _, _) {
                        return status
                    }
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == 429 }.count == 1)
        #expect(outcomes.filter { $0 == 200 }.count == 199)
        let times = arrivals.all.map(\.at)
        #expect(times.count == 200)
        // Courier pauses when it reads the 429, after the server sent it: every later request arrives at least the
        // Retry-After's second after the 429 was answered.
        if let pausedAt = times.first, let next = times.dropFirst().min() {
            #expect(next - pausedAt >= 0.95)
        }
    }

    @Test("throttled().retrying(): the retry's Retry-After wait and the origin pause run side by side")
    func composesWithRetrying() async throws {
        let arrivals = Arrivals()
        let server = try LoopbackServer { request in
            arrivals.record(request.path)
            if arrivals.all.count == 1 {
                return .respond(status: 503, headers: [ServerHeader(name: "Retry-After", value: "2")])
            }
            return .echo
        }
        let throttled = NetworkClient(configuration: server.configuration()).throttled(maxConcurrent: 2)
        // The retry's wait, checked where Courier acts: when it starts, the origin's pause must end no later than
        // the wait does, so the retried request finds the line open instead of waiting a second time.
        let overlaps = Locked<[Bool]>([])
        let environment = RetryEnvironment(
            sleep: { seconds in
                let wakes = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
                overlaps.withLock { $0.append((throttled.pauseEnd ?? 0) <= wakes) }
                try await RetryEnvironment.live.sleep(seconds)
            },
            now: { Date() }, random: { $0.lowerBound })
        let client = RetryingDecorator(wrapping: throttled, policy: RetryPolicy(), environment: environment)
        let response = try await client.run(echo("/once"))
        #expect(response.statusCode == 200)
        #expect(response.metrics.attempts == 2)
        #expect(overlaps.withLock { $0 } == [true])
        let times = arrivals.all.map(\.at)
        #expect(times.count == 2)
        if times.count == 2 { #expect(times[1] - times[0] >= 1.9) }
    }

    @Test("perSecond: after the burst, no faster than the rate")
    func rateLimit() async throws {
        let arrivals = Arrivals()
        let server = try LoopbackServer { request in
            arrivals.record(request.path)
            return .echo
        }
        let client = NetworkClient(configuration: server.configuration()).throttled(maxConcurrent: 2, perSecond: 10)
        let began = ProcessInfo.processInfo.systemUptime
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<52 {
                group.addTask { _ = try await client.run(self.echo("/\(index)")) }
            }
            try await group.waitForAll()
        }
        let times = arrivals.all.map(\.at).sorted()
        #expect(times.count == 52)
        guard let end = times.last else { return }
        // A burst of 2, then 50 starts at 10 a second: the request of index i >= 2 starts (i - 1) / 10 s after the
        // first at the earliest, and arrives later still. Lower bounds only: a loaded machine may only slow it down.
        #expect(end - began >= 5 * 0.95)
        for (index, time) in times.enumerated() where index >= 2 {
            #expect(time - began >= Double(index - 1) / 10 * 0.95)
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
