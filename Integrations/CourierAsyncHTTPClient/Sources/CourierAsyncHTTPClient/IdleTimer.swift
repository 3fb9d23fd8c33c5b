/// The idle timeout of one exchange as a value: when the silence began, and whether it counts.
///
/// The silence that counts is the time the transport waits for the server: from the start of the exchange, from each
/// request body piece handed to AsyncHTTPClient, and from each time the transport asks for the next piece of the
/// response. The time it spends waiting for Courier (`HTTPExchange.readyForMore()`: a streamed response whose
/// reader is behind) does not count: the server is not silent then, the transport is not reading.
///
/// Activity only records a time; nothing is rescheduled per piece. The one shared timer (``IdleMonitor``) asks
/// ``check(now:)`` when the deadline it holds for the exchange comes, and learns the next one.
struct IdleTimer: Equatable, Sendable {
    /// What ``check(now:)`` decided.
    enum Verdict: Equatable, Sendable {
        /// The silence lasted the whole timeout: the exchange ends with `URLError(.timedOut)`.
        case expired
        /// Not yet: check again at this time (uptime nanoseconds).
        case checkAgain(at: UInt64)
        /// The exchange ended; nothing more to check.
        case over
    }

    /// What the transport is doing.
    enum Phase: Equatable, Sendable {
        /// Waiting for the server (or sending to it): silence counts.
        case waitingForServer
        /// Waiting for Courier (`HTTPExchange.readyForMore()`): silence does not count.
        case waitingForCourier
        /// The exchange ended.
        case ended
        /// The silence lasted the whole timeout.
        case expired
    }

    /// The timeout, in nanoseconds.
    let timeout: UInt64
    /// When the current silence began (uptime nanoseconds).
    private(set) var silentSince: UInt64
    private(set) var phase = Phase.waitingForServer

    init(timeout: UInt64, now: UInt64) {
        self.timeout = timeout
        self.silentSince = now
    }

    /// When the timeout passes if nothing happens first.
    var deadline: UInt64 { Self.adding(timeout, to: silentSince) }

    /// Something moved (a request body piece went out, a response piece came): the silence starts again.
    mutating func activity(now: UInt64) {
        guard phase == .waitingForServer else { return }
        silentSince = now
    }

    /// The transport waits for Courier: silence does not count until ``resume(now:)``.
    mutating func pause() {
        guard phase == .waitingForServer else { return }
        phase = .waitingForCourier
    }

    /// The transport asks the server for more: the silence starts now.
    mutating func resume(now: UInt64) {
        guard phase == .waitingForCourier else { return }
        phase = .waitingForServer
        silentSince = now
    }

    /// The exchange ended; a timeout that already expired stays so.
    mutating func end() {
        guard phase != .expired else { return }
        phase = .ended
    }

    /// Whether the timeout passed at `now`; called when a deadline given earlier came.
    mutating func check(now: UInt64) -> Verdict {
        switch phase {
        case .ended, .expired:
            return .over
        case .waitingForCourier:
            // Not counting: looked at again a whole timeout later (a resume restarts the silence anyway).
            return .checkAgain(at: Self.adding(timeout, to: now))
        case .waitingForServer:
            guard now >= deadline else { return .checkAgain(at: deadline) }
            phase = .expired
            return .expired
        }
    }

    private static func adding(_ interval: UInt64, to time: UInt64) -> UInt64 {
        let (sum, overflow) = time.addingReportingOverflow(interval)
        return overflow ? .max : sum
    }
}
