import Dispatch
import Foundation

/// The outcome of one piece of work that many callers wait for, each of whom may stop waiting on its own: when its
/// task is cancelled (`CancellationError`) or its deadline passes (``NetworkClientError/deadlinePassed(url:)``, the
/// error of a transfer's deadline). The work itself goes on for the others.
final class SharedOutcome<Value: Sendable>: Sendable {
    private typealias Waiter = CheckedContinuation<Value, any Error>

    private struct State {
        var result: Result<Value, any Error>?
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Locked(State())

    /// Ends the wait of every waiter with `result`; later calls of ``value(until:)`` return it at once. Only the
    /// first call counts.
    func finish(_ result: Result<Value, any Error>) {
        let waiters = state.withLock { state -> [Waiter] in
            guard state.result == nil else { return [] }
            state.result = result
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    /// The outcome, once there is one.
    /// - Throws: The outcome's error; `CancellationError` when the calling task is cancelled first; a timeout error
    ///   when `deadline` passes first.
    func value(until deadline: DispatchTime?) async throws -> Value {
        if let result = state.withLock({ $0.result }) { return try result.get() }
        let id = state.withLock { state -> UInt64 in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let timer = deadline.map { _ in
            DeadlineWaiter { [weak self] in self?.stopWaiting(id, with: NetworkClientError.deadlinePassed(url: nil)) }
        }
        defer { if let timer { DeadlineMonitor.shared.remove(timer) } }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: Waiter) in
                let outcome = state.withLock { state -> Result<Value, any Error>? in
                    if let result = state.result { return result }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters[id] = continuation
                    return nil
                }
                if let outcome { return continuation.resume(with: outcome) }
                if let timer, let deadline { DeadlineMonitor.shared.add(timer, deadline: deadline) }
            }
        } onCancel: {
            stopWaiting(id, with: CancellationError())
        }
    }

    private func stopWaiting(_ id: UInt64, with error: any Error) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(throwing: error)
    }
}

/// Runs an action when the ``DeadlineMonitor`` expires it.
private final class DeadlineWaiter: Expirable {
    private let action: @Sendable () -> Void

    init(_ action: @escaping @Sendable () -> Void) {
        self.action = action
    }

    func expire() { action() }
}
