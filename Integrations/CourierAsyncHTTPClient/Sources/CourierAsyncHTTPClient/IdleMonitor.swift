import Dispatch
import NIOConcurrencyHelpers

/// The idle timeout of one exchange, shared by the transport's task (which reports activity) and ``IdleMonitor``
/// (which ends the exchange when the silence lasted the whole timeout).
final class IdleWatch: Sendable {
    private struct State {
        var timer: IdleTimer
        var onExpiry: (@Sendable () -> Void)?
    }

    private let state: NIOLockedValueBox<State>

    /// A watch of `timeout` seconds (positive) from now.
    init(timeout: Double) {
        let nanoseconds = timeout * 1e9 >= Double(UInt64.max) ? UInt64.max : max(1, UInt64(timeout * 1e9))
        state = NIOLockedValueBox(State(timer: IdleTimer(timeout: nanoseconds, now: Self.now())))
    }

    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Runs `handler` once, on the monitor's queue, if the timeout expires; set before ``start()``. It must not block.
    func whenExpired(_ handler: @escaping @Sendable () -> Void) {
        state.withLockedValue { $0.onExpiry = handler }
    }

    /// A request body piece went out.
    func activity() {
        let now = Self.now()
        state.withLockedValue { $0.timer.activity(now: now) }
    }

    /// The transport waits for Courier, not for the server.
    func pause() {
        state.withLockedValue { $0.timer.pause() }
    }

    /// The transport asks the server for more.
    func resume() {
        let now = Self.now()
        state.withLockedValue { $0.timer.resume(now: now) }
    }

    /// Starts watching: ``IdleMonitor`` looks at the watch when its deadline comes.
    func start() {
        IdleMonitor.shared.add(self, at: state.withLockedValue { $0.timer.deadline })
    }

    /// The exchange ended: the watch never expires.
    func end() {
        state.withLockedValue { $0.timer.end() }
        IdleMonitor.shared.remove(self)
    }

    /// Whether the timeout expired (the exchange failed for it).
    var expired: Bool {
        state.withLockedValue { $0.timer.phase == .expired }
    }

    /// The monitor's look at a due deadline. On `.expired`, the monitor calls ``expire()`` once, out of its lock.
    fileprivate func check(now: UInt64) -> IdleTimer.Verdict {
        state.withLockedValue { $0.timer.check(now: now) }
    }

    fileprivate func expire() {
        state.withLockedValue { $0.onExpiry }?()
    }
}

/// One timer for the idle timeouts of every exchange of every ``AsyncHTTPClientTransport`` in the process.
///
/// Starting a watch puts its deadline in a heap under a lock; the timer is re-armed only when that deadline is earlier
/// than the one it waits for (with timeouts alike, almost never). Activity on an exchange changes its watch only: the
/// monitor finds out when the old deadline comes, and moves the watch to its new one. Only the watches that are due
/// are looked at.
// `timer` is scheduled only under the lock of `state` (and set up in `init`).
final class IdleMonitor: @unchecked Sendable {
    static let shared = IdleMonitor()

    private struct State {
        var deadlines = DeadlineHeap<ObjectIdentifier>()
        var watches: [ObjectIdentifier: IdleWatch] = [:]
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
        let key = ObjectIdentifier(watch)
        state.withLockedValue { state in
            state.watches[key] = watch
            state.deadlines.set(key, to: deadline)
            arm(&state, for: deadline)
        }
    }

    /// Forgets `watch`.
    func remove(_ watch: IdleWatch) {
        let key = ObjectIdentifier(watch)
        state.withLockedValue { state in
            guard state.watches.removeValue(forKey: key) != nil else { return }
            state.deadlines.remove(key)
        }
    }

    /// The watches being looked after (for tests).
    var count: Int { state.withLockedValue { $0.watches.count } }

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
            while let (deadline, key) = state.deadlines.earliest, deadline <= now {
                guard let watch = state.watches[key] else {
                    state.deadlines.remove(key)
                    continue
                }
                // The watch's lock inside the monitor's: the only nesting (a watch never holds its own lock while it
                // takes the monitor's).
                switch watch.check(now: now) {
                case .checkAgain(let next):
                    state.deadlines.set(key, to: next)
                case .expired:
                    expired.append(watch)
                    fallthrough
                case .over:
                    state.deadlines.remove(key)
                    state.watches.removeValue(forKey: key)
                }
            }
            state.armedFor = nil
            if let (next, _) = state.deadlines.earliest { arm(&state, for: next) }
            return expired
        }
        // Outside the lock: an expiry cancels a task.
        for watch in expired { watch.expire() }
    }
}
