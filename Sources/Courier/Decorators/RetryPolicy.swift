import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// When and how long `retrying()` waits before sending a failed request again.
///
/// The defaults (`RetryPolicy()`):
/// - **3 attempts in all** (the first one and two retries).
/// - **Exponential backoff with full jitter**: before attempt `n + 1` the client waits a random time in
///   `0...min(maxDelay, baseDelay * 2^(n-1))`, with `baseDelay` 0.5 s and `maxDelay` 30 s.
/// - **Only idempotent methods**: `GET`, `HEAD`, `PUT`, `DELETE`, `OPTIONS`. Any other request is retried only if its
///   method is in ``retryableMethods`` or it carries an `Idempotency-Key` header.
/// - **Only transient failures**: ``NetworkClientError/transportFailed(_:)`` with `timedOut`,
///   `networkConnectionLost`, `cannotConnectToHost`, `notConnectedToInternet`, `cannotFindHost` or
///   `dnsLookupFailed`, and the statuses 408, 429, 500, 502, 503 and 504.
/// - A `Retry-After` header (delta-seconds or HTTP-date) on a 429 or 503 sets the wait instead of the backoff; a
///   value above `maxDelay` ends the retries at once with the server's error.
/// - No total time budget, no extra predicate.
///
/// Never retried, whatever the policy: `CancellationError`, ``NetworkClientError/invalidURL(reason:)``,
/// ``NetworkClientError/invalidHeader(name:reason:)``, ``NetworkClientError/invalidRequest(reason:)``,
/// ``NetworkClientError/encodingFailed(underlying:)``, ``NetworkClientError/interceptorFailed(underlying:)``,
/// ``NetworkClientError/decodingFailed(underlying:data:)``, ``NetworkClientError/responseTooLarge(limit:)``,
/// ``NetworkClientError/redirectRefused(reason:)`` and ``NetworkClientError/fileAccessFailed(url:reason:)``.
public struct RetryPolicy: Sendable {
    /// How many times a request is sent at most, the first time included; `3` by default. `1` never retries.
    public var maxAttempts: Int
    /// The backoff's first step, in seconds: the wait before the second attempt is drawn from `0...baseDelay`;
    /// `0.5` by default.
    public var baseDelay: TimeInterval
    /// The longest wait, in seconds, between two attempts; `30` by default. It caps the backoff, and a `Retry-After`
    /// above it ends the retries rather than waiting that long.
    public var maxDelay: TimeInterval
    /// The methods whose requests are retried; `GET`, `HEAD`, `PUT`, `DELETE` and `OPTIONS` by default. A request
    /// with another method is retried only if it carries an `Idempotency-Key` header.
    public var retryableMethods: Set<HTTPMethod>
    /// The status codes that are retried; `408, 429, 500, 502, 503, 504` by default.
    public var retryableStatusCodes: Set<Int>
    /// The transport errors that are retried: `timedOut`, `networkConnectionLost`, `cannotConnectToHost`,
    /// `notConnectedToInternet`, `cannotFindHost` and `dnsLookupFailed` by default.
    public var retryableURLErrorCodes: Set<URLError.Code>
    /// The most time, in seconds, all attempts and waits of one call may take together; `nil` (the default) for no
    /// limit. A wait that would end past the budget is not taken: the call throws the last error instead.
    public var totalBudget: TimeInterval?
    /// Asked about a failure that the rules above do not retry (another status, another transport error, an error of
    /// a test double), with the error and the number of the attempt that failed (1 for the first); `true` retries
    /// it. `nil` by default. It is never asked about the never-retried errors listed on ``RetryPolicy``, nor about a
    /// request whose method may not be retried.
    public var shouldRetry: (@Sendable (_ error: any Error, _ attempt: Int) async -> Bool)?

    /// The idempotent methods: `GET`, `HEAD`, `PUT`, `DELETE`, `OPTIONS`.
    public static let idempotentMethods: Set<HTTPMethod> = [.get, .head, .put, .delete, .options]
    /// The statuses that usually mean "try again later": 408, 429, 500, 502, 503, 504.
    public static let transientStatusCodes: Set<Int> = [408, 429, 500, 502, 503, 504]
    /// The transport errors that usually mean "try again": timed out, connection lost, cannot connect, not
    /// connected, host not found, DNS lookup failed.
    public static let transientURLErrorCodes: Set<URLError.Code> = [
        .timedOut, .networkConnectionLost, .cannotConnectToHost, .notConnectedToInternet, .cannotFindHost,
        .dnsLookupFailed,
    ]

    /// Creates a policy; every parameter has the default described on ``RetryPolicy``.
    /// - Parameters:
    ///   - maxAttempts: Attempts in all, the first included; `3` by default. Values below 1 count as 1.
    ///   - baseDelay: The first backoff step in seconds; `0.5` by default.
    ///   - maxDelay: The longest wait in seconds; `30` by default.
    ///   - retryableMethods: The methods that may be retried; ``idempotentMethods`` by default.
    ///   - retryableStatusCodes: The statuses that are retried; ``transientStatusCodes`` by default.
    ///   - retryableURLErrorCodes: The transport errors that are retried; ``transientURLErrorCodes`` by default.
    ///   - totalBudget: The most time in seconds for all attempts and waits; `nil` (no limit) by default.
    ///   - shouldRetry: Asked about failures the rules do not retry; `nil` by default.
    public init(
        maxAttempts: Int = 3,
        baseDelay: TimeInterval = 0.5,
        maxDelay: TimeInterval = 30,
        retryableMethods: Set<HTTPMethod> = RetryPolicy.idempotentMethods,
        retryableStatusCodes: Set<Int> = RetryPolicy.transientStatusCodes,
        retryableURLErrorCodes: Set<URLError.Code> = RetryPolicy.transientURLErrorCodes,
        totalBudget: TimeInterval? = nil,
        shouldRetry: (@Sendable (_ error: any Error, _ attempt: Int) async -> Bool)? = nil
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay.isFinite ? max(0, baseDelay) : 0
        self.maxDelay = maxDelay.isNaN ? 0 : max(0, maxDelay)
        self.retryableMethods = retryableMethods
        self.retryableStatusCodes = retryableStatusCodes
        self.retryableURLErrorCodes = retryableURLErrorCodes
        self.totalBudget = totalBudget
        self.shouldRetry = shouldRetry
    }

    /// The upper bound of the jittered wait after attempt `attempt` (1-based) failed:
    /// `min(maxDelay, baseDelay * 2^(attempt-1))`.
    func backoffCeiling(afterAttempt attempt: Int) -> TimeInterval {
        let exponent = Double(min(max(attempt - 1, 0), 1_000))
        return min(maxDelay, baseDelay * pow(2, exponent))
    }

    /// Whether a request may be sent more than once at all.
    func allowsRetry(method: HTTPMethod, headers: [String: String]?) -> Bool {
        if retryableMethods.contains(method) { return true }
        guard let headers else { return false }
        return headers.keys.contains { $0.caseInsensitiveCompare("Idempotency-Key") == .orderedSame }
    }

    /// What to do about one failure, before the predicate and the budget are consulted.
    enum Verdict: Equatable {
        /// Never retried.
        case never
        /// Retried by the rules; `retryAfter` is the server's wait, in seconds, if it sent a readable one.
        case retry(retryAfter: TimeInterval?)
        /// Not retried by the rules; the predicate may still say yes.
        case askPredicate
    }

    func verdict(for error: any Error, now: Date) -> Verdict {
        guard let error = error as? NetworkClientError else {
            return error is CancellationError ? .never : .askPredicate
        }
        switch error {
        case .invalidURL, .invalidHeader, .invalidRequest, .encodingFailed, .interceptorFailed, .decodingFailed,
            .responseTooLarge, .redirectRefused, .fileAccessFailed:
            return .never
        case .transportFailed(let urlError):
            if urlError.code == .cancelled { return .never }
            return retryableURLErrorCodes.contains(urlError.code) ? .retry(retryAfter: nil) : .askPredicate
        case .invalidResponse:
            return .askPredicate
        case .unacceptableStatusCode(let status, let response, _):
            guard retryableStatusCodes.contains(status) else { return .askPredicate }
            guard status == 429 || status == 503 else { return .retry(retryAfter: nil) }
            let header = response.value(forHTTPHeaderField: "Retry-After")
            return .retry(retryAfter: header.flatMap { RetryAfter.seconds($0, now: now) })
        }
    }
}

extension RetryPolicy {
    /// Where the retry layers apply these rules differently: ``RetryingClient`` retries for a caller that waits,
    /// the ``Outbox`` for entries that nobody waits for.
    struct Layer: Sendable {
        /// Whether a failed interceptor (often a token refresh while offline) is retried after the backoff.
        var retriesInterceptorFailures: Bool
        /// Whether the backoff is the least wait, however long a `Retry-After` asks for: `Retry-After: 0` or a date in
        /// the past still waits it, and a wait above ``maxDelay`` is waited for. Otherwise the server's wait is taken
        /// as it is, and one above ``maxDelay`` ends the retries.
        var backoffIsTheLeastWait: Bool

        /// ``RetryingClient``'s: the caller of `run` is waiting.
        static let caller = Layer(retriesInterceptorFailures: false, backoffIsTheLeastWait: false)
    }

    /// The wait before the attempt after attempt `attempt` (1 for the first) failed with `error`, by these rules as
    /// `layer` applies them; `nil` when the failure is not retried. The attempt count and the time budget are the
    /// caller's to check.
    func delay(
        after error: any Error, attempt: Int, layer: Layer, environment: RetryEnvironment
    ) async -> TimeInterval? {
        let backoff = { environment.random(0...backoffCeiling(afterAttempt: attempt)) }
        if layer.retriesInterceptorFailures, case .interceptorFailed? = error as? NetworkClientError {
            return backoff()
        }
        switch verdict(for: error, now: environment.now()) {
        case .never:
            return nil
        case .retry(let retryAfter?):
            // The server may lengthen the wait, never shorten it: `Retry-After: 0`, or an HTTP-date in the past (clock
            // skew), would otherwise retry at once, for ever (34,000 requests in 10 s from 4 outbox entries).
            if layer.backoffIsTheLeastWait { return max(retryAfter, backoff()) }
            // The server asked for longer than the caller is willing to wait: its answer is the outcome.
            return retryAfter <= maxDelay ? retryAfter : nil
        case .retry(nil):
            return backoff()
        case .askPredicate:
            guard let shouldRetry, await shouldRetry(error, attempt) else { return nil }
            return backoff()
        }
    }
}

/// Reading a `Retry-After` header (RFC 9110, 10.2.3).
enum RetryAfter {
    /// The wait the header asks for, in seconds (`0` for a date in the past); `nil` if it is neither delta-seconds
    /// nor an HTTP-date.
    static func seconds(_ value: String, now: Date) -> TimeInterval? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // Digits only: a huge number is simply "longer than any maxDelay".
            return TimeInterval(text) ?? .infinity
        }
        // The HTTP-date parser the cache uses: the three exact forms RFC 9110 names, and nothing looser.
        guard let date = HTTPDate.parse(text) else { return nil }
        return max(0, date - now.timeIntervalSince1970)
    }
}
