import Dispatch
import Foundation

/// Something that can be stopped when its deadline passes.
protocol Expirable: AnyObject, Sendable {
    /// Called once, on a background queue, when the deadline passed before the transfer was unregistered.
    func expire()
}

/// One timer for every deadline in the process: ends transfers that run longer than their total timeout.
///
/// corelibs Foundation ignores `timeoutIntervalForResource`, and an idle timeout never fires while a server trickles
/// bytes (or `102 Processing` lines), so Courier keeps the deadline itself. A timer per request would cost a dispatch
/// source each; here registering is a dictionary insert under a lock, and the one timer is re-armed only when a new
/// deadline is earlier than the one it waits for.
// `timer` is scheduled only under the lock of `state` (and set up in `init`).
final class DeadlineMonitor: @unchecked Sendable {
    static let shared = DeadlineMonitor()

    private struct Entry {
        let deadline: DispatchTime
        let transfer: any Expirable
    }

    private struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        /// When the timer fires next, or `nil` when it is idle.
        var armedFor: DispatchTime?
    }

    private let queue = DispatchQueue(label: "Courier.DeadlineMonitor")
    private let state = Locked(State())
    private let timer: any DispatchSourceTimer

    private init() {
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler { [unowned self] in fire() }
        timer.activate()
    }

    /// Ends `transfer` with ``Expirable/expire()`` at `deadline` unless it is removed first.
    func add(_ transfer: any Expirable, deadline: DispatchTime) {
        state.withLock { state in
            state.entries[ObjectIdentifier(transfer)] = Entry(deadline: deadline, transfer: transfer)
            guard state.armedFor.map({ deadline < $0 }) ?? true else { return }
            // Under the lock, so that two registrations cannot arm the timer in the wrong order.
            state.armedFor = deadline
            timer.schedule(deadline: deadline, leeway: .milliseconds(10))
        }
    }

    /// Forgets `transfer`; its deadline no longer applies.
    func remove(_ transfer: any Expirable) {
        state.withLock { _ = $0.entries.removeValue(forKey: ObjectIdentifier(transfer)) }
    }

    /// Expires what is due and re-arms for the earliest deadline left. A stale firing (the earliest entry was removed)
    /// only re-arms.
    private func fire() {
        let now = DispatchTime.now()
        let due = state.withLock { state -> [any Expirable] in
            var due: [any Expirable] = []
            var next: DispatchTime?
            for (key, entry) in state.entries {
                if entry.deadline <= now {
                    due.append(entry.transfer)
                    state.entries.removeValue(forKey: key)
                } else if next.map({ entry.deadline < $0 }) ?? true {
                    next = entry.deadline
                }
            }
            state.armedFor = next
            if let next { timer.schedule(deadline: next, leeway: .milliseconds(10)) }
            return due
        }
        for transfer in due { transfer.expire() }
    }
}

extension NetworkClientError {
    /// The one error of a passed deadline, wherever it passed (a transfer on any transport, a stream, a wait for a
    /// shared call or a renewal): ``transportFailed(_:)`` with `URLError.timedOut` and one description; `url` (for a
    /// transfer, the URL it was sending to) redacted.
    static func deadlinePassed(url: URL?) -> NetworkClientError {
        .transportFailed(
            Redaction.urlError(
                URLError(
                    .timedOut,
                    userInfo: [
                        NSLocalizedDescriptionKey:
                            "the request took longer than its total timeout (totalTimeout or timeoutIntervalForResource)"
                    ]),
                url: url))
    }
}
