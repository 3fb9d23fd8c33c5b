import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A decorator that sends a request again, after a backoff, when it failed for a passing reason.
///
/// What is retried and how long it waits is the ``RetryPolicy``; by default up to 3 attempts in all, idempotent
/// methods only, transient transport errors and the statuses 408, 429, 500, 502, 503, 504 only, with exponential
/// backoff and full jitter (0.5 s base, 30 s cap) or the server's `Retry-After` on 429 and 503.
///
/// The error after the last attempt is the last error the wrapped client threw, unchanged, so a caller still sees the
/// status and body of the final response. Cancelling the caller's task during a wait ends the call at once with
/// `CancellationError`; nothing is sent after that.
///
/// A request with ``RequestOptions/allowsRetry`` `false` is sent once; the ``Outbox`` marks what it sends that way,
/// since it retries its entries itself (one wire attempt per outbox attempt, whatever the stack).
///
/// The decorator behind ``NetworkClientProtocol/retrying(_:)``.
final class RetryingDecorator: NetworkClientProtocol {
    /// The client that runs each attempt.
    public let wrapped: any NetworkClientProtocol
    /// What is retried, how often and how long the client waits.
    public let policy: RetryPolicy

    let environment: RetryEnvironment

    /// Creates a retrying client.
    /// - Parameters:
    ///   - client: The client that runs each attempt.
    ///   - policy: What to retry and how long to wait; `RetryPolicy()` by default (see ``RetryPolicy``).
    public convenience init(wrapping client: any NetworkClientProtocol, policy: RetryPolicy = RetryPolicy()) {
        self.init(wrapping: client, policy: policy, environment: .live)
    }

    /// Creates a retrying client with an injected clock, sleep and random source (for tests).
    init(wrapping client: any NetworkClientProtocol, policy: RetryPolicy, environment: RetryEnvironment) {
        self.wrapped = client
        self.policy = policy
        self.environment = environment
    }

    /// Runs `networkRequest`, and again after a wait while the policy says its failure is worth retrying.
    ///
    /// - Throws: The last error the wrapped client threw, unchanged, when a failure is not retried, the attempts
    ///   or the time budget are used up, or a `Retry-After` asks for longer than ``RetryPolicy/maxDelay``;
    ///   `CancellationError` when the caller's task is cancelled, during an attempt or a wait.
    public func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        guard policy.maxAttempts > 1, networkRequest.options.allowsRetry,
            policy.allowsRetry(method: networkRequest.method, headers: networkRequest.additionalHeaders)
        else {
            return try await wrapped.run(networkRequest)
        }
        let start = policy.totalBudget == nil ? nil : environment.now()
        var attempt = 1
        while true {
            do {
                var response = try await wrapped.run(networkRequest)
                // The attempts that failed count, one each.
                if attempt > 1 { response.metrics.attempts += attempt - 1 }
                return response
            } catch {
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
                guard attempt < policy.maxAttempts else { throw error }
                guard
                    let delay = await policy.delay(
                        after: error, attempt: attempt, layer: .caller, environment: environment)
                else { throw error }
                if let budget = policy.totalBudget, let start,
                    environment.now().timeIntervalSince(start) + delay > budget
                {
                    throw error
                }
                // Throws CancellationError at once when the caller is cancelled during the wait.
                try await environment.sleep(delay)
                try Task.checkCancellation()
                attempt += 1
            }
        }
    }
}

/// The clock, sleep and random source of a ``RetryingClient`` and of a stream's reconnections
/// (``StreamReconnection``); tests inject their own so nothing really waits.
struct RetryEnvironment: Sendable {
    /// Waits `seconds`; throws `CancellationError` at once if the task is cancelled.
    var sleep: @Sendable (_ seconds: TimeInterval) async throws -> Void
    /// The current time: for `Retry-After` dates and the total budget.
    var now: @Sendable () -> Date
    /// A random wait in the range (full jitter).
    var random: @Sendable (_ range: ClosedRange<TimeInterval>) -> TimeInterval
    /// Seconds on a monotonic clock (unaffected by changes to the wall clock), for measuring durations; `nil` to
    /// measure them with `now` (virtual time in tests).
    var uptime: (@Sendable () -> TimeInterval)? = nil

    static let live = RetryEnvironment(
        sleep: { seconds in
            guard seconds > 0 else { return try Task.checkCancellation() }
            try await Task.sleep(nanoseconds: UInt64(min(seconds, 1e9) * 1e9))
        },
        now: { Date() },
        random: { range in range.upperBound > range.lowerBound ? Double.random(in: range) : range.lowerBound },
        uptime: { ProcessInfo.processInfo.systemUptime })

    /// Seconds on the monotonic clock, or on `now` when there is none (virtual time in tests).
    func monotonicSeconds() -> TimeInterval {
        uptime?() ?? now().timeIntervalSinceReferenceDate
    }
}

extension NetworkClientProtocol {
    /// Wraps this client so that a request that failed for a passing reason is sent again after a backoff: the one way
    /// to retry.
    ///
    /// What is retried and how long the client waits is `policy`: by default 3 attempts in all, idempotent methods
    /// only (`GET`, `HEAD`, `PUT`, `DELETE`, `OPTIONS`, or a request with an `Idempotency-Key`), the transient
    /// transport errors and the statuses 408, 429, 500, 502, 503 and 504 only, with exponential backoff and full
    /// jitter (0.5 s base, 30 s cap) or the server's `Retry-After` on 429 and 503 (see ``RetryPolicy``).
    ///
    /// The error after the last attempt is the last error the wrapped client threw, unchanged, so a caller still sees
    /// the status and body of the final response. Cancelling the caller's task during a wait ends the call at once
    /// with `CancellationError`; nothing is sent after that. A request with ``RequestOptions/allowsRetry`` `false` is
    /// sent once; the ``Outbox`` marks what it sends that way, since it retries its entries itself. The response's
    /// ``RequestMetrics/attempts`` counts every attempt. See <doc:Resilience>.
    /// - Parameter policy: What to retry and how long to wait; `RetryPolicy()` by default.
    /// - Returns: A client that retries the requests of this one.
    public func retrying(_ policy: RetryPolicy = RetryPolicy()) -> some NetworkClientProtocol {
        RetryingDecorator(wrapping: self, policy: policy)
    }
}
