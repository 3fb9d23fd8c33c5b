import Foundation

/// When a ``ServerSentEvents`` stream that ends or drops is opened again: the `EventSource` behaviour, opt-in, for
/// `GET` requests only.
///
/// ```swift
/// let feed = NetworkRequest<VoidRequest, ServerSentEvents>(
///     path: "/feed", method: .get, reconnection: StreamReconnection(maxAttempts: 5, initialDelay: 1))
/// ```
///
/// When the connection drops or the server ends the body, Courier waits for the server's last `retry` (else
/// `initialDelay`, with jitter), never less than ``minimumDelay``, sends the request again with `Last-Event-ID`, and
/// the sequence goes on with the events after the last one it yielded: no gap, no repeat, as far as the server honours
/// `Last-Event-ID`.
///
/// A connection that fails to open, opens and dispatches no event, or dispatches events but ends so soon that the
/// server would have Courier reconnect more often than once per ``minimumDelay`` (its `retry` is shorter, and the
/// connection was open for less than the difference: "one event, then close, and come back at once"), is a failure.
/// Each failure doubles the wait (up to ``maximumDelay``); after `maxAttempts` of them in a row the sequence ends with
/// the last connection's error, or ``StreamError/gaveUpReconnecting(attempts:)`` when it ended without one. A server
/// that closes after each event and asks to be called back after ``minimumDelay`` or more (a poll written as an event
/// stream) is followed for as long as it goes on. An HTTP `204`, a status outside the acceptable ones or a
/// `Content-Type` other than `text/event-stream` ends the sequence at once (with the error, but a `204`).
///
/// A request other than `GET` (a chat completion sent with `POST`) is never sent again: its sequence ends with the
/// connection.
public struct StreamReconnection: Sendable, Hashable {
    /// The connections in a row that may fail (see ``StreamReconnection``) before the sequence ends; at least 1.
    public var maxAttempts: Int
    /// The wait before the first reconnection when the server sent no `retry`, in seconds; the wait is jittered
    /// between half and all of it, and doubles after each connection that failed.
    public var initialDelay: TimeInterval

    /// How the waits are slept and time is read; tests inject a virtual clock so that nothing really waits.
    var environment = RetryEnvironment.live

    /// The longest wait between two connections: 60 s, whatever the server's `retry` or the doubling say.
    public static let maximumDelay: TimeInterval = 60

    /// The shortest wait between two connections: 0.5 s, whatever the server's `retry` (`retry: 0` included) or
    /// `initialDelay` say; Firefox's `EventSource` keeps the same floor. A server may not make a stream reconnect more
    /// often than this: one whose connections end sooner than it asks to be called back after less is failing (see
    /// ``StreamReconnection``).
    public static let minimumDelay: TimeInterval = 0.5

    /// Creates a reconnection policy.
    /// - Parameters:
    ///   - maxAttempts: The failed connections in a row that end the sequence; values below 1 count as 1.
    ///   - initialDelay: The wait, in seconds, when the server sent no `retry`; negative or NaN values count as 0.
    ///     The wait is never shorter than ``minimumDelay``.
    public init(maxAttempts: Int, initialDelay: TimeInterval) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialDelay = initialDelay > 0 ? min(initialDelay, Self.maximumDelay) : 0
    }

    /// Two policies are equal when their attempts and initial delay are.
    public static func == (lhs: StreamReconnection, rhs: StreamReconnection) -> Bool {
        lhs.maxAttempts == rhs.maxAttempts && lhs.initialDelay == rhs.initialDelay
    }

    /// Hashes the attempts and the initial delay.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(maxAttempts)
        hasher.combine(initialDelay)
    }
}

/// The reconnections of one stream as a value: each transition (a connection ended, an opening failed) returns what to
/// do next, from the connection's life, what it dispatched and the server's `retry`. Tested without sockets or clocks.
struct ReconnectionSchedule: Sendable {
    /// What the stream does next.
    enum Step: Sendable, Equatable {
        /// Wait this many seconds, then open the next connection.
        case reconnect(after: TimeInterval)
        /// `maxAttempts` connections in a row failed: the sequence ends.
        case giveUp
    }

    let policy: StreamReconnection
    /// Connections in a row that failed.
    private(set) var failures = 0
    /// When the current connection opened, in seconds of the policy's monotonic clock.
    private var openedAt: TimeInterval

    init(policy: StreamReconnection, openedAt: TimeInterval) {
        self.policy = policy
        self.openedAt = openedAt
    }

    /// The next connection opened at `now`.
    mutating func opened(at now: TimeInterval) {
        openedAt = now
    }

    /// The current connection ended at `now`, cleanly or not. It worked (and the count of failures starts again) when
    /// it dispatched an event and the server does not have the stream reconnect more often than once per
    /// ``StreamReconnection/minimumDelay``: its life and the wait the server asks for add up to at least that.
    mutating func connectionEnded(at now: TimeInterval, resumption: StreamResumption) -> Step {
        let asked = resumption.retry.map { TimeInterval($0) / 1_000 } ?? policy.initialDelay
        let worked = resumption.dispatched && max(0, now - openedAt) + asked >= StreamReconnection.minimumDelay
        failures = worked ? 0 : failures + 1
        return next(retry: resumption.retry)
    }

    /// An attempt to open the next connection failed.
    mutating func openingFailed(retry: Int?) -> Step {
        failures += 1
        return next(retry: retry)
    }

    private func next(retry: Int?) -> Step {
        guard failures < policy.maxAttempts else { return .giveUp }
        return .reconnect(after: delay(retry: retry))
    }

    /// The server's `retry` as it is, else `initialDelay` jittered between half and all of it; never below
    /// ``StreamReconnection/minimumDelay``; doubled for each failure in a row; never above
    /// ``StreamReconnection/maximumDelay``.
    private func delay(retry: Int?) -> TimeInterval {
        var base: TimeInterval
        if let retry {
            base = TimeInterval(retry) / 1_000
        } else {
            let initial = policy.initialDelay
            base = initial > 0 ? policy.environment.random((initial / 2)...initial) : 0
        }
        base = max(base, StreamReconnection.minimumDelay)
        let doubled = base * pow(2, Double(min(max(0, failures), 30)))
        return min(doubled, StreamReconnection.maximumDelay)
    }
}
