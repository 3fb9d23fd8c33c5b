import Courier
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How many rounds to run and how many requests make one chunk in each scenario.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct Plan: Sendable {
    /// Rounds per comparison, the first one a discarded warm-up.
    let rounds: Int
    /// Requests per chunk of the small GET scenarios.
    let smallChunk: Int
    /// Requests per chunk of the 1 KB POST scenario.
    let postChunk: Int
    /// Requests per chunk of the 1 MB scenario.
    let largeChunk: Int
    /// Identical concurrent calls in one dedup fan-out.
    let fanOutCalls: Int

    /// The full run: at least 3,000 measured small requests per side over the default 9 rounds.
    static func full(rounds: Int) -> Plan {
        Plan(rounds: rounds, smallChunk: 1_000, postChunk: 800, largeChunk: 24, fanOutCalls: 1_000)
    }

    /// A smoke test that finishes in seconds.
    static func quick(rounds: Int) -> Plan {
        Plan(rounds: rounds, smallChunk: 30, postChunk: 30, largeChunk: 2, fanOutCalls: 1_000)
    }
}

/// The clients under test, all on the target's one `URLSession`.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct Clients: Sendable {
    let raw: RawCalls
    let courier: CourierCalls<NetworkClient>
    let deduplicated: CourierCalls<DeduplicatingClient>
    let sequential: CourierCalls<SequentialClient>
    /// `throttled(maxConcurrent: 16)`: at concurrency 16 it never makes a caller wait, so the row is its own cost.
    let throttled: CourierCalls<ThrottledClient>
    /// Raw URLSession on a session of its own made from `URLSessionConfiguration.default` (on Linux without a
    /// `URLCache`, like the one Courier creates).
    let rawOwnSession: RawCalls
    /// Courier on the session it makes from `URLSessionConfiguration.default` (on Linux, without a `URLCache`).
    let courierOwnSession: CourierCalls<NetworkClient>
    /// The bare client sending `Authorization: Bearer …` on every request, as ``resilient`` does.
    let courierBearer: CourierCalls<NetworkClient>
    /// Raw URLSession sending the same `Authorization: Bearer …` as ``resilient``: its like-for-like baseline.
    let rawBearer: RawCalls
    /// The bare client with a ``ResponseCache`` in memory: `/cached.json` is answered fresh from it.
    let courierCached: CourierCalls<NetworkClient>
    /// `logged(level: .info).retrying().authenticated(by:).deduplicated()` on the shared session.
    let resilient: CourierCalls<DeduplicatingClient>
    /// `logged(level: .info).retrying().authenticated(by:)` on the shared session, through ``Forwarding`` (the stack's
    /// type is opaque: one protocol hop more than the outermost decorator of the other rows).
    let resilientNoDedup: CourierCalls<Forwarding>
    /// ``AnsweringDouble`` behind ``Forwarding``: no decorator, no network.
    let double: CourierCalls<Forwarding>
    /// `.deduplicated()` over ``AnsweringDouble``.
    let dedupDouble: CourierCalls<DeduplicatingClient>
    /// The recommended stack (as ``resilient``) over ``AnsweringDouble``.
    let resilientDouble: CourierCalls<DeduplicatingClient>
    /// Where the resilient stacks' log lines go: formatted, then counted.
    let logBytes = LogBytes()

    init(target: Target) {
        let configuration = NetworkConfiguration(session: target.session, baseURL: target.baseURL)
        let client = NetworkClient(configuration: configuration)
        raw = RawCalls(session: target.session, base: target.base)
        courier = CourierCalls(client: client)
        deduplicated = CourierCalls(client: client.deduplicated())
        sequential = CourierCalls(client: client.sequential())
        throttled = CourierCalls(client: client.throttled(maxConcurrent: 16))
        rawOwnSession = RawCalls(
            session: URLSession(configuration: Target.sessionConfiguration(.default)), base: target.base)
        courierOwnSession = CourierCalls(
            client: NetworkClient(
                configuration: NetworkConfiguration(sessionConfiguration: .default, baseURL: target.baseURL)))
        courierBearer = CourierCalls(client: client, headers: ["Authorization": "Bearer " + benchmarkToken])
        rawBearer = RawCalls(session: target.session, base: target.base, authorization: "Bearer " + benchmarkToken)
        let cachedConfiguration = NetworkConfiguration(session: target.session, baseURL: target.baseURL)
        cachedConfiguration.responseCache = ResponseCache(memoryCapacity: 1 << 20)
        courierCached = CourierCalls(client: NetworkClient(configuration: cachedConfiguration))
        let authenticator = BearerTokenAuthenticator(
            token: { benchmarkToken }, refresh: { _ in benchmarkToken })
        let stack = client.logged(level: .info) { [logBytes] entry in logBytes.add(entry.description) }
            .retrying()
            .authenticated(by: authenticator)
        resilientNoDedup = CourierCalls(client: Forwarding(wrapped: stack))
        resilient = CourierCalls(client: stack.deduplicated())
        double = CourierCalls(client: Forwarding(wrapped: AnsweringDouble()))
        dedupDouble = CourierCalls(client: AnsweringDouble().deduplicated())
        resilientDouble = CourierCalls(
            client: AnsweringDouble().logged(level: .info) { [logBytes] entry in logBytes.add(entry.description) }
                .retrying().authenticated(by: authenticator).deduplicated())
    }
}

/// Calls its client through `any NetworkClientProtocol`, as a decorator does: the `double` row's double then runs
/// unspecialized, as it does under the decorators of the other `-double` rows.
struct Forwarding: NetworkClientProtocol {
    let wrapped: any NetworkClientProtocol

    func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        try await wrapped.run(networkRequest)
    }
}

/// A test double that answers every request at once with ``SmallItem/sample``: under it, a decorator's cost is its
/// own, with none of the network's or corelibs' threads (whose polling moves a networked run's count by a few
/// thousand instructions per request between runs).
struct AnsweringDouble: NetworkClientProtocol {
    private let response = HTTPURLResponse(
        url: URL(string: "http://127.0.0.1/small.json")!, statusCode: 200, httpVersion: "HTTP/1.1",
        headerFields: ["Content-Type": "application/json"])!

    func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        guard let value = SmallItem.sample as? ResponseModel else { throw URLError(.cannotDecodeContentData) }
        return NetworkResponse(value: value, response: response)
    }
}

/// The access token of the `resilient` and `courier-bearer` profiles.
let benchmarkToken = "eyJhbGciOiJIUzI1NiJ9.benchmark-token"

/// Counts log lines and their bytes, so the formatting is really done.
final class LogBytes: @unchecked Sendable {  // `lines` and `bytes` are guarded by `lock`.
    private let lock = NSLock()
    private var lineCount = 0
    private var byteCount = 0

    func add(_ line: String) {
        lock.lock()
        lineCount += 1
        byteCount += line.utf8.count
        lock.unlock()
    }

    var lines: Int {
        lock.lock()
        defer { lock.unlock() }
        return lineCount
    }

    var bytes: Int {
        lock.lock()
        defer { lock.unlock() }
        return byteCount
    }
}

/// Which optional endpoints the target serves.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct Availability: Sendable {
    var post = true
    var large = true
    var slow = true
    /// Why scenarios were skipped, for the notes under the table.
    var notes: [String] = []
}

/// Sends one request of every kind, raw and through Courier, to check that the target serves what the scenarios
/// need and that both sides decode it. `/small.json` is required; a missing optional endpoint skips its scenario.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func probe(_ clients: Clients) async throws -> Availability {
    do {
        try await clients.raw.small(-1)
        try await clients.courier.small(-1)
    } catch {
        throw BenchmarkError.badResponse("GET \(EndpointPath.small) failed: \(error)")
    }
    var availability = Availability()
    do {
        try await clients.raw.post(PostBody.sample)
        try await clients.courier.post(PostBody.sample)
    } catch {
        availability.post = false
        availability.notes.append("POST scenario skipped: POST \(EndpointPath.post) failed: \(error)")
    }
    do {
        let counts = [try await clients.raw.large(), try await clients.courier.large()]
        guard counts == [Fixtures.largeCount, Fixtures.largeCount] else {
            throw BenchmarkError.badResponse("expected \(Fixtures.largeCount) items, got \(counts)")
        }
    } catch {
        availability.large = false
        availability.notes.append("1 MB scenario skipped: GET \(EndpointPath.large) failed: \(error)")
    }
    do {
        try await clients.courier.slow()
    } catch {
        availability.slow = false
        availability.notes.append("fan-out scenario skipped: GET \(EndpointPath.slow) failed: \(error)")
    }
    return availability
}

/// The raw-versus-Courier comparisons of scenarios 1 to 3, in the order they run.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func comparisons(_ clients: Clients, plan: Plan, availability: Availability) -> [Comparison] {
    let raw = clients.raw
    let courier = clients.courier
    let deduplicated = clients.deduplicated
    let sequential = clients.sequential
    let throttled = clients.throttled
    var result: [Comparison] = []
    for concurrency in [1, 16, 64] {
        func small(_ client: String, _ operation: @escaping @Sendable (Int) async throws -> Void) -> Contender {
            Contender(
                client: client, concurrency: concurrency, requestsPerChunk: plan.smallChunk, operation: operation)
        }
        var contenders = [
            small("raw URLSession") { try await raw.small($0) },
            small("Courier") { try await courier.small($0) },
            small("Courier .deduplicated()") { try await deduplicated.small($0) },
        ]
        if concurrency == 1 {
            contenders.append(small("Courier .sequential()") { try await sequential.small($0) })
        }
        if concurrency == 16 {
            contenders.append(small("Courier .throttled(maxConcurrent: 16)") { try await throttled.small($0) })
        }
        result.append(Comparison(scenario: "small GET", contenders: contenders))
    }
    /// Raw URLSession against one Courier client, small GETs at `concurrency`.
    func smallPair(
        _ scenario: String, _ client: String, concurrency: Int, raw: RawCalls,
        courier: @escaping @Sendable (Int) async throws -> Void
    ) -> Comparison {
        Comparison(
            scenario: scenario,
            contenders: [
                Contender(client: "raw URLSession", concurrency: concurrency, requestsPerChunk: plan.smallChunk) {
                    try await raw.small($0)
                },
                Contender(
                    client: client, concurrency: concurrency, requestsPerChunk: plan.smallChunk, operation: courier),
            ])
    }
    // The recommended stack against raw URLSession sending the same bearer token: like for like.
    let resilient = clients.resilient
    for concurrency in [1, 16] {
        result.append(
            smallPair(
                "small GET with a bearer token", "Courier .logged().retrying().authenticated(by:).deduplicated()",
                concurrency: concurrency, raw: clients.rawBearer
            ) { try await resilient.small($0) })
    }
    // What a user gets from `NetworkConfiguration(sessionConfiguration:)`: each side on its own `.default` session.
    let courierOwn = clients.courierOwnSession
    for concurrency in [1, 16, 64] {
        result.append(
            smallPair(
                "small GET, own .default session", "Courier", concurrency: concurrency, raw: clients.rawOwnSession
            ) {
                try await courierOwn.small($0)
            })
    }
    if availability.post {
        let body = PostBody.sample
        result.append(
            Comparison(
                scenario: "POST 1 KB JSON",
                contenders: [
                    Contender(client: "raw URLSession", concurrency: 16, requestsPerChunk: plan.postChunk) { _ in
                        try await raw.post(body)
                    },
                    Contender(client: "Courier", concurrency: 16, requestsPerChunk: plan.postChunk) { _ in
                        try await courier.post(body)
                    },
                ]))
    }
    if availability.large {
        result.append(
            Comparison(
                scenario: "GET 1 MB JSON array",
                contenders: [
                    Contender(client: "raw URLSession", concurrency: 1, requestsPerChunk: plan.largeChunk) { _ in
                        try await raw.large()
                    },
                    Contender(client: "Courier", concurrency: 1, requestsPerChunk: plan.largeChunk) { _ in
                        try await courier.large()
                    },
                ]))
    }
    return result
}

/// The rounds of the dedup fan-out: one plain request to `/slow` against `calls` identical concurrent ones through
/// ``DeduplicatingClient``.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct FanOutResult: Sendable {
    let calls: Int
    /// The single request, per measured round.
    let single: [Sample]
    /// The fan-out, per measured round.
    let fanOut: [Sample]
    /// Requests that left the client per fan-out (counted by a decorator under the dedup layer), per measured round.
    let sent: [Int]
    /// Requests the in-process server received per fan-out, per measured round; `nil` with an external server.
    let received: [Int]?
}

/// Runs the fan-out scenario in interleaved rounds, the first one discarded.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func runFanOut(target: Target, plan: Plan) async throws -> FanOutResult {
    let configuration = NetworkConfiguration(session: target.session, baseURL: target.baseURL)
    let counting = CountingClient(wrapped: NetworkClient(configuration: configuration))
    let single = CourierCalls(client: counting)
    let shared = CourierCalls(client: counting.deduplicated())
    let calls = plan.fanOutCalls
    var singles: [Sample] = []
    var fanOuts: [Sample] = []
    var sent: [Int] = []
    var received: [Int] = []
    for round in 0..<plan.rounds {
        // Alternate which side goes first.
        var singleSample = Sample(wallSeconds: 0, cpuSeconds: 0)
        if round % 2 == 0 { singleSample = try await measure { try await single.slow() } }
        let sentBefore = await counting.counter.count
        let receivedBefore = target.server?.requestCount ?? 0
        let fanOutSample = try await measure {
            try await runChunk(count: calls, concurrency: calls, firstIndex: 0) { _ in try await shared.slow() }
        }
        let sentCount = await counting.counter.count - sentBefore
        let receivedCount = (target.server?.requestCount ?? 0) - receivedBefore
        if round % 2 == 1 { singleSample = try await measure { try await single.slow() } }
        if round > 0 {
            singles.append(singleSample)
            fanOuts.append(fanOutSample)
            sent.append(sentCount)
            received.append(receivedCount)
        }
    }
    return FanOutResult(
        calls: calls, single: singles, fanOut: fanOuts, sent: sent, received: target.server == nil ? nil : received)
}
