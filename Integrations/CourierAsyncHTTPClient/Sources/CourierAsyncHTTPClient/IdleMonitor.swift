import Dispatch
import NIOConcurrencyHelpers

/// The idle timeout of one exchange, shared by the transport's task (which reports activity) and ``IdleMonitor``
/// (which ends the exchange when the silence lasted the whole timeout).
final class IdleWatch: Sendable {
    private let timer: NIOLockedValueBox<IdleTimer>
    private let onExpiry = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)

    /// A watch of `timeout` seconds (positive) from now.
    init(timeout: Double) {
        let nanoseconds = timeout * 1e9 >= Double(UInt64.max) ? UInt64.max : UInt64(timeout * 1e9)
        timer = NIOLockedValueBox(IdleTimer(timeout: nanoseconds, now: Self.now()))
    }

    /// Runs `handler` once, on the monitor's queue, if the timeout expires; set before ``start()``. It must not block.
    func whenExpired(_ handler: @escaping @Sendable () -> Void) {
        onExpiry.withLockedValue { $0 = handler }
    }

    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// A request body piece went out or a response piece came.
    func activity() {
        let now = Self.now()
        timer.withLockedValue { $0.activity(now: now) }
    }

    /// The transport waits for Courier, not for the server.
    func pause() {
        timer.withLockedValue { $0.pause() }
    }

    /// The transport asks the server for more.
    func resume() {
        let now = Self.now()
        timer.withLockedValue { $0.resume(now: now) }
    }

    /// Starts watching: ``IdleMonitor`` looks at the watch when its deadline comes.
    func start() {
        IdleMonitor.shared.add(self, at: timer.withLockedValue { $0.deadline })
    }

    /// The exchange ended: the watch never expires.
    func end() {
        timer.withLockedValue { $0.end() }
        IdleMonitor.shared.remove(self)
    }

    /// Whether the timeout expired (the exchange failed for it).
    var expired: Bool {
        timer.withLockedValue { $0.phase == .expired }
    }

    /// The monitor's look at a due deadline. On `.expired`, the monitor calls ``expire()`` once out of its lock.
    fileprivate func check(now: UInt64) -> IdleTimer.Verdict {
        timer.withLockedValue { $0.check(now: now) }
    }

    fileprivate func expire() {
        onExpiry.withLockedValue { $0 }?()
    }
}

/// One timer for the idle timeouts of every exchange of every ``AsyncHTTPClientTransport`` in the process.
///
/// Starting a watch is a dictionary insert under a lock; the timer is re-armed only when a watch's deadline is
/// earlier than the one it waits for (with timeouts alike, almost never). Activity on an exchange changes its watch
/// only: the monitor finds out when the old deadline comes, and waits for the new one.
// `timer` is scheduled only under the lock of `state` (and set up in `init`).
final class IdleMonitor: @unchecked Sendable {
    static let shared = IdleMonitor()

    private struct State {
        var watches: [ObjectIdentifier: (deadline: UInt64, watch: IdleWatch)] = [:]
        /// When the timer fires next, or `nil` when it is idle.
        var armedFor: UInt64?
    }

    private let queue = DispatchQueue(label: "CourierAsyncHTTPClient.IdleMonitor")
    private let state = NIOLockedValueBox(State())
    private let timer: any DispatchSourceTimer

    private init() {
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler { [unowned self] in fire() }
        timer.activate()
    }

    /// Looks at `watch` at `deadline` (uptime nanoseconds), unless it is removed first.
    func add(_ watch: IdleWatch, at deadline: UInt64) {
        state.withLockedValue { state in
            state.watches[ObjectIdentifier(watch)] = (deadline, watch)
            arm(&state, for: deadline)
        }
    }

    /// Forgets `watch`.
    func remove(_ watch: IdleWatch) {
        state.withLockedValue { _ = $0.watches.removeValue(forKey: ObjectIdentifier(watch)) }
    }

    /// Arms the timer for `deadline` when it is earlier than the one it waits for. Under the lock, so that two
    /// watches cannot arm it in the wrong order.
    private func arm(_ state: inout State, for deadline: UInt64) {
        guard state.armedFor.map({ deadline < $0 }) ?? true else { return }
        state.armedFor = deadline
        timer.schedule(deadline: DispatchTime(uptimeNanoseconds: deadline), leeway: .milliseconds(10))
    }

    /// Looks at the watches that are due (each says when to look again, or that it is done), re-arms for the earliest
    /// deadline left, then ends the exchanges that expired. A stale firing (the earliest watch was removed) only
    /// re-arms.
    private func fire() {
        let now = DispatchTime.now().uptimeNanoseconds
        let expired = state.withLockedValue { state -> [IdleWatch] in
            var expired: [IdleWatch] = []
            var earliest: UInt64?
            for (key, entry) in state.watches {
                var deadline = entry.deadline
                if deadline <= now {
                    // The watch's lock inside the monitor's: the only nesting (a watch never holds its own lock while it
                    // takes the monitor's).
                    switch entry.watch.check(now: now) {
                    case .checkAgain(let next):
                        deadline = next
                        state.watches[key] = (next, entry.watch)
                    case .expired:
                        expired.append(entry.watch)
                        state.watches.removeValue(forKey: key)
                        continue
                    case .over:
                        state.watches.removeValue(forKey: key)
                        continue
                    }
                }
                earliest = min(earliest ?? deadline, deadline)
            }
            state.armedFor = nil
            if let earliest { arm(&state, for: earliest) }
            return expired
        }
        // Outside the lock: an expiry cancels a task.
        for watch in expired { watch.expire() }
    }
}
