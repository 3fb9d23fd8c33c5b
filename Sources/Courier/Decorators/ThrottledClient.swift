import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A decorator that keeps at most a number of requests in flight, optionally starts no more than a number of them per
/// second, and holds back every request to an origin that answered `429` or `503` with `Retry-After` until then.
///
/// - **Concurrency:** at most ``maxConcurrent`` calls of the wrapped client run at once; the others wait.
/// - **Rate:** with ``perSecond``, a token bucket that holds ``maxConcurrent`` tokens (the burst) and gains
///   ``perSecond`` tokens a second: each start takes one.
/// - **Order:** waiting callers start in the order they arrived. A caller whose task is cancelled while it waits
///   leaves the line at once with `CancellationError`; its request is never sent.
/// - **Origin pause:** when a response through this client (a success or a thrown
///   ``NetworkClientError/unacceptableStatusCode(statusCode:response:data:)``) is a `429` or a `503` with a
///   readable `Retry-After` (delta-seconds or HTTP-date), no request to that origin starts until then, at most
///   ``maximumPause`` seconds: the callers already waiting are not sent into the storm. The requests already in
///   flight finish. The origin of a request is its ``NetworkRequest/baseURL`` override's, or for requests without one
///   the client's configured base URL (they are paused together).
///
/// Put `retrying()` outside it, `client.throttled(maxConcurrent: 8).retrying()`: a retried call then queues
/// again, and the retry's `Retry-After` wait and the origin pause run side by side instead of one after the other.
/// Inside it (`retrying().throttled(…)`), a call keeps its slot while it waits to retry.
///
/// `URLSession` opens at most `httpMaximumConnectionsPerHost` connections to a host (6 by default, on Linux too)
/// and queues the rest inside the session, where cancellation and deadlines still apply but order and pauses do
/// not. With ``maxConcurrent`` at or below that figure, the throttle is the only queue; above it, raise the session
/// configuration's limit to match.
public final class ThrottledClient: NetworkClientProtocol {
    /// The client that runs each request.
    public let wrapped: any NetworkClientProtocol
    /// The most requests in flight through this client at once; at least 1.
    public let maxConcurrent: Int
    /// The most requests started per second (after a burst of ``maxConcurrent``); `nil` for no rate limit.
    public let perSecond: Double?

    /// The longest an origin is paused after one `429` or `503`, in seconds, whatever its `Retry-After` asks: `60`.
    public static let maximumPause: TimeInterval = 60

    private let gate: ThrottleGate

    /// Creates a throttled client (``NetworkClientProtocol/throttled(maxConcurrent:perSecond:)``).
    /// - Parameters:
    ///   - client: The client that runs each request.
    ///   - maxConcurrent: The most requests in flight at once; values below 1 count as 1.
    ///   - perSecond: The most requests started per second, after a burst of `maxConcurrent`; `nil`, zero, a negative
    ///     or a non-finite number sets no rate limit.
    ///   - clock: The clock of the rate and the pauses; the monotonic clock by default, a virtual one in tests.
    init(
        wrapping client: any NetworkClientProtocol, maxConcurrent: Int, perSecond: Double?, clock: ThrottleClock = .live
    ) {
        self.wrapped = client
        self.maxConcurrent = max(1, maxConcurrent)
        let rate = perSecond.flatMap { $0.isFinite && $0 > 0 ? $0 : nil }
        self.perSecond = rate
        gate = ThrottleGate(capacity: self.maxConcurrent, rate: rate, clock: clock)
    }

    /// The requests running in the wrapped client now.
    public var inFlightCount: Int { gate.counts.inFlight }
    /// The callers waiting for their turn now.
    public var waitingCount: Int { gate.counts.waiting }

    /// When the pause of the origin of requests without a base URL override ends, in the clock's nanoseconds; `nil`
    /// when it is not paused (for tests).
    var pauseEnd: UInt64? { gate.pauseEnd(origin: "") }

    /// Runs `networkRequest` once its turn comes: a free slot, a token when ``perSecond`` is set, and no pause of its
    /// origin.
    ///
    /// - Throws: `CancellationError` when the caller's task is cancelled while it waits (nothing is sent) or during
    ///   the call; otherwise what the wrapped client throws, unchanged.
    public func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        let origin = networkRequest.baseURL.flatMap(Origin.of) ?? ""
        try await gate.enter(origin: origin)
        defer { gate.leave() }
        do {
            let response = try await wrapped.run(networkRequest)
            if response.statusCode == 429 || response.statusCode == 503 {
                gate.observe(retryAfter: response.header("Retry-After"), origin: origin)
            }
            return response
        } catch NetworkClientError.unacceptableStatusCode(let status, let head, let data) {
            if status == 429 || status == 503 {
                gate.observe(retryAfter: head.value(forHTTPHeaderField: "Retry-After"), origin: origin)
            }
            throw NetworkClientError.unacceptableStatusCode(statusCode: status, response: head, data: data)
        }
    }
}

extension NetworkClientProtocol {
    /// Wraps this client so that at most `maxConcurrent` requests run at once, at most `perSecond` start each second,
    /// callers wait in arrival order, and an origin that answers `429`/`503` with `Retry-After` is paused until then:
    /// the one way to throttle (see ``ThrottledClient`` for every rule).
    /// - Parameters:
    ///   - maxConcurrent: The most requests in flight at once; values below 1 count as 1.
    ///   - perSecond: The most starts per second after a burst of `maxConcurrent`; `nil` (the default), zero, a
    ///     negative or a non-finite number for none.
    /// - Returns: A ``ThrottledClient`` around this client; its ``ThrottledClient/inFlightCount`` and
    ///   ``ThrottledClient/waitingCount`` tell how full it is.
    public func throttled(maxConcurrent: Int, perSecond: Double? = nil) -> ThrottledClient {
        ThrottledClient(wrapping: self, maxConcurrent: maxConcurrent, perSecond: perSecond)
    }
}

/// The clock of a ``ThrottledClient``: its token bucket, its origin pauses and the wake-ups between them. Tests inject
/// a virtual one, as ``RetryEnvironment`` and the outbox's environment are, so that nothing really waits.
struct ThrottleClock: Sendable {
    /// Nanoseconds on a monotonic clock.
    var now: @Sendable () -> UInt64
    /// Returns once ``now`` has reached `deadline` (at once when it has), or when the task is cancelled.
    var sleep: @Sendable (_ deadline: UInt64) async -> Void
    /// The wall clock, for a `Retry-After` given as an HTTP-date.
    var date: @Sendable () -> Date

    static let live = ThrottleClock(
        now: { DispatchTime.now().uptimeNanoseconds },
        sleep: { deadline in
            let now = DispatchTime.now().uptimeNanoseconds
            if deadline > now { try? await Task.sleep(nanoseconds: deadline - now) }
        },
        date: { Date() })
}

/// The line of a ``ThrottledClient``: slots, tokens, origin pauses and the callers waiting, under one lock.
final class ThrottleGate: Sendable {
    private struct Waiter {
        let id: UInt64
        let origin: String
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var inFlight = 0
        var queue: [Waiter] = []
        var nextID: UInt64 = 0
        /// Tokens in the bucket, when there is a rate.
        var tokens: Double
        /// When `tokens` was last refilled, in uptime nanoseconds.
        var refilled: UInt64
        /// Until when each paused origin waits, in uptime nanoseconds.
        var pausedUntil: [String: UInt64] = [:]
        /// When the scheduled wake-up fires, if one is scheduled.
        var wake: UInt64?
    }

    private let capacity: Int
    private let rate: Double?
    private let clock: ThrottleClock
    private let state: Locked<State>

    init(capacity: Int, rate: Double?, clock: ThrottleClock) {
        self.capacity = capacity
        self.rate = rate
        self.clock = clock
        state = Locked(State(tokens: Double(capacity), refilled: clock.now()))
    }

    var counts: (inFlight: Int, waiting: Int) {
        state.withLock { ($0.inFlight, $0.queue.count) }
    }

    /// Waits for a turn; throws `CancellationError` at once when the caller is cancelled meanwhile.
    func enter(origin: String) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID &+= 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // The cancellation flag is set before the handler runs: read under the lock, it tells whether the
                // handler already looked for this waiter (and found nothing) or will find it.
                let cancelled = state.withLock { state -> Bool in
                    if Task.isCancelled { return true }
                    state.queue.append(Waiter(id: id, origin: origin, continuation: continuation))
                    return false
                }
                if cancelled { return continuation.resume(throwing: CancellationError()) }
                pump()
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.queue.firstIndex(where: { $0.id == id }) else { return nil }
                return state.queue.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    func pauseEnd(origin: String) -> UInt64? {
        state.withLock { $0.pausedUntil[origin] }
    }

    /// A call ended: its slot goes to the next caller.
    func leave() {
        state.withLock { $0.inFlight -= 1 }
        pump()
    }

    /// Pauses `origin` when `retryAfter` is a readable `Retry-After` value.
    func observe(retryAfter value: String?, origin: String) {
        guard let value, let seconds = RetryAfter.seconds(value, now: clock.date()), seconds > 0 else { return }
        let until = clock.now() + UInt64(min(seconds, ThrottledClient.maximumPause) * 1e9)
        state.withLock { state in
            state.pausedUntil[origin] = max(state.pausedUntil[origin] ?? 0, until)
        }
        pump()
    }

    /// Starts every waiter whose turn has come, in arrival order, and schedules a wake-up for the next one that
    /// waits on time (a token, a pause).
    private func pump() {
        let (started, wakeAt) = state.withLock { state -> ([Waiter], UInt64?) in
            // The clock is read under the lock: read before it, a pump that took the lock second could carry an
            // earlier time than the refill before it, and the unsigned difference wrapped around to a full bucket
            // (a burst of more than `capacity` starts, seen under the thread sanitizer).
            let now = clock.now()
            if let rate {
                let elapsed = Double(now &- state.refilled) / 1e9
                state.tokens = min(Double(capacity), state.tokens + elapsed * rate)
                state.refilled = now
            }
            state.pausedUntil = state.pausedUntil.filter { $0.value > now }
            var started: [Waiter] = []
            var wakeAt: UInt64?
            var index = 0
            while index < state.queue.count {
                let waiter = state.queue[index]
                if let until = state.pausedUntil[waiter.origin] {
                    wakeAt = min(wakeAt ?? until, until)
                    index += 1
                    continue
                }
                guard state.inFlight < capacity else { break }
                if let rate, state.tokens < 1 {
                    let refill = now + UInt64((1 - state.tokens) / rate * 1e9) + 1
                    wakeAt = min(wakeAt ?? refill, refill)
                    break
                }
                if rate != nil { state.tokens -= 1 }
                state.inFlight += 1
                started.append(state.queue.remove(at: index))
            }
            guard let wanted = wakeAt, state.wake.map({ $0 > wanted }) ?? true else { return (started, nil) }
            state.wake = wanted
            return (started, wanted)
        }
        for waiter in started { waiter.continuation.resume() }
        if let wakeAt { schedule(at: wakeAt) }
    }

    /// Pumps again at `time` (the clock's nanoseconds).
    private func schedule(at time: UInt64) {
        Task { [weak self, clock] in
            await clock.sleep(time)
            guard let self else { return }
            self.state.withLock { state in
                if state.wake == time { state.wake = nil }
            }
            self.pump()
        }
    }
}
