import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

#if canImport(Glibc)
import Glibc
#endif

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
extension Tag {
    /// Long-running load tests; run them alone with `swift test --filter Soak`.
    @Tag static var soak: Self
}

/// Many requests, some cancelled mid-flight, through the plain client and through the decorators: every call ends
/// with a value, an error or `CancellationError`, nothing deadlocks, no bookkeeping is left behind and memory does
/// not grow.
@Suite("Soak", .tags(.soak), .serialized)
struct SoakTests {
    /// One call of the run, drawn in advance from the seed.
    struct Call: Sendable {
        enum Route: Sendable {
            /// The plain `NetworkClient`, at full concurrency.
            case plain
            /// `deduplicated().sequential()`: one at a time, in call order.
            case strict
            /// `deduplicated().sequential(policy: .concurrentReads)`: GETs overlap and share, POSTs are barriers.
            case reads
        }

        let route: Route
        let method: HTTPMethod
        let path: String
        /// Cancel the call this long after it started, or never.
        let cancelAfter: Duration?
    }

    /// How the calls ended.
    struct Tally: Sendable {
        var succeeded = 0
        var failed = 0
        var cancelled = 0
        /// Calls to the shared paths through the decorators, the only ones deduplication can merge.
        var sharedCalls = 0

        var total: Int { succeeded + failed + cancelled }

        static func + (lhs: Tally, rhs: Tally) -> Tally {
            Tally(
                succeeded: lhs.succeeded + rhs.succeeded, failed: lhs.failed + rhs.failed,
                cancelled: lhs.cancelled + rhs.cancelled, sharedCalls: lhs.sharedCalls + rhs.sharedCalls)
        }
    }

    static let totalCalls = 20_000
    static let warmUpCalls = 2_000
    static let workers = 64
    /// Identical GETs go to one of this many paths, so that calls in flight at the same time share.
    static let sharedPaths = 8

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("20,000 requests, about 10% cancelled mid-flight, through the plain client and the decorators")
    func soak() async throws {
        try await MemoryHeavyTests.exclusively {
            try await Self.soak(cancelling: 0.1, seed: InputEncodingTests.seed(default: 0x50AC_0001))
        }
    }

    /// Runs the warm-up and the 20,000 calls, cancelling the given share of them 0 to 2 ms after they start.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func soak(cancelling cancelShare: Double, seed: UInt64) async throws {
        let sharedHits = Locked(0)
        let server = try LoopbackServer { request in
            if request.path.hasPrefix("/shared/") { sharedHits.withLock { $0 += 1 } }
            return .respond(status: 200, body: Data(request.target.utf8))
        }
        let plain = server.client()
        let deduplicating = plain.deduplicated()
        let strict = deduplicating.sequential()
        let reads = deduplicating.sequential(policy: .concurrentReads)
        let clients = Clients(plain: plain, strict: strict, reads: reads)

        let clock = ContinuousClock()
        let start = clock.now
        let (rssAfterWarmUp, rssAfterRun, tally) = try await withTimeLimit(timeLimit) {
            let warmUp = plan(count: warmUpCalls, cancelling: cancelShare, seed: seed &+ 1)
            _ = await run(warmUp, on: clients, server: server)
            server.resetStatistics()
            let rssAfterWarmUp = residentMegabytes()
            sharedHits.withLock { $0 = 0 }
            let tally = await run(
                plan(count: totalCalls, cancelling: cancelShare, seed: seed), on: clients, server: server)
            server.resetStatistics()
            return (rssAfterWarmUp, residentMegabytes(), tally)
        }
        let duration = clock.now - start
        print(
            "soak: \(tally.succeeded) succeeded, \(tally.failed) failed, \(tally.cancelled) cancelled in \(duration) "
                + "(seed \(seed), time limit \(timeLimit))")

        #expect(tally.total == totalCalls)
        #expect(tally.succeeded >= totalCalls - Int(Double(totalCalls) * cancelShare * 1.5))
        // Identical GETs in flight at the same time shared one request.
        let hits = sharedHits.withLock { $0 }
        #expect(hits < tally.sharedCalls, "\(hits) server hits for \(tally.sharedCalls) shared calls")
        // Nothing left behind once every caller has returned.
        #expect(deduplicating.inFlightCount == 0)
        #expect(deduplicating.waiterCount == 0)
        #expect(strict.pendingCount == 0)
        #expect(reads.pendingCount == 0)

        if let before = rssAfterWarmUp, let after = rssAfterRun {
            print("soak: RSS after warm-up \(before) MB, after run \(after) MB")
            #expect(after - before < memoryGrowthLimit, "RSS grew from \(before) MB to \(after) MB")
        }
    }

    // MARK: Running

    struct Clients: Sendable {
        let plain: NetworkClient
        let strict: SequentialClient
        let reads: SequentialClient

        func client(for route: Call.Route) -> any NetworkClientProtocol {
            switch route {
            case .plain: plain
            case .strict: strict
            case .reads: reads
            }
        }
    }

    /// Draws `count` calls: half plain, a quarter each through the two decorated stacks; identical and distinct GETs,
    /// some POSTs (never shared, barriers for `.reads`), and `cancelShare` of them cancelled after 0 to 2 ms.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func plan(count: Int, cancelling cancelShare: Double, seed: UInt64) -> [Call] {
        var random = SplitMix64(seed: seed)
        return (0..<count).map { index in
            let route: Call.Route = random.chance(0.5) ? .plain : random.chance(0.5) ? .strict : .reads
            let kind = Double.random(in: 0..<1, using: &random)
            let prefix = route == .plain ? "/plain" : ""
            let (method, path): (HTTPMethod, String) =
                if kind < 0.1 {
                    (.post, "\(prefix)/write/\(index)")
                } else if kind < 0.55 {
                    (.get, "\(prefix)/shared/\(Int.random(in: 0..<sharedPaths, using: &random))")
                } else {
                    (.get, "\(prefix)/distinct/\(index)")
                }
            let cancelAfter: Duration? =
                random.chance(cancelShare) ? .microseconds(Int.random(in: 0...2_000, using: &random)) : nil
            return Call(route: route, method: method, path: path, cancelAfter: cancelAfter)
        }
    }

    /// Runs `calls` with `workers` callers, each taking the next call when it is done with one.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func run(_ calls: [Call], on clients: Clients, server: LoopbackServer) async -> Tally {
        let next = Locked(0)
        return await withTaskGroup(of: Tally.self) { group in
            for _ in 0..<workers {
                group.addTask {
                    var tally = Tally()
                    while true {
                        let index = next.withLock { next in
                            defer { next += 1 }
                            return next
                        }
                        guard index < calls.count else { return tally }
                        // Keeps the server's request log short, so it does not count as growth.
                        if index % 1_000 == 999 { server.resetStatistics() }
                        await perform(calls[index], on: clients, into: &tally)
                    }
                }
            }
            return await group.reduce(Tally(), +)
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func perform(_ call: Call, on clients: Clients, into tally: inout Tally) async {
        let client = clients.client(for: call.route)
        let request = NetworkRequest<VoidRequest, String>(path: call.path, method: call.method)
        if call.route != .plain && call.path.hasPrefix("/shared/") { tally.sharedCalls += 1 }
        let result: Result<NetworkResponse<String>, any Error>
        if let cancelAfter = call.cancelAfter {
            let task = Task { try await client.run(request) }
            if cancelAfter > .zero { try? await Task.sleep(for: cancelAfter) }
            task.cancel()
            result = await task.result
        } else {
            do { result = .success(try await client.run(request)) } catch { result = .failure(error) }
        }
        switch result {
        case .success(let response):
            tally.succeeded += 1
            #expect(response.value == call.path, "\(call)")
            #expect(response.statusCode == 200)
        case .failure(let error as NetworkClientError):
            tally.failed += 1
            // Only a cancelled call may fail: the server answers every request.
            #expect(call.cancelAfter != nil, "\(call): \(error)")
        case .failure(is CancellationError):
            tally.cancelled += 1
            #expect(call.cancelAfter != nil, "\(call) was not cancelled, yet threw CancellationError")
        case .failure(let error):
            Issue.record("\(call): unexpected \(type(of: error)): \(error)")
        }
    }

    // MARK: Measuring

    /// The bound on the whole run: a deadlock fails the test instead of hanging it. Generous, since the thread
    /// sanitizer makes the run many times slower.
    static var timeLimit: Duration {
        isThreadSanitizerActive ? .seconds(900) : .seconds(120)
    }

    /// The bound on RSS growth over the run, in MB. corelibs itself leaks about 50 bytes of heap per request
    /// (`CFURLSessionCurlHostIsEqual` frees its `CURLU` with `curl_free`, not `curl_url_cleanup`), which shows as
    /// about 5 MB of RSS over 20,000 requests. The thread sanitizer adds shadow memory for every byte the run
    /// touches, so its figures are several times larger.
    static var memoryGrowthLimit: Double {
        isThreadSanitizerActive ? 60 : 20
    }

    static var isThreadSanitizerActive: Bool {
        #if canImport(Glibc)
        return dlsym(nil, "__tsan_init") != nil  // nil is RTLD_DEFAULT: every loaded image.
        #else
        return false
        #endif
    }

    /// `VmRSS` from `/proc/self/status`, in MB; `nil` where there is no such file (not Linux).
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func residentMegabytes() -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Double($0) }
            return kilobytes.map { ($0 / 1024 * 10).rounded() / 10 }
        }
        return nil
    }
}
