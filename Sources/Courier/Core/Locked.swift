import Foundation

/// A value guarded by a lock: the one place Courier keeps mutable shared state.
final class Locked<State> {
    private let lock = NSLock()
    /// Read and written only under `lock`, so Swift's run-time exclusivity check (about 100 instructions per access on
    /// Linux) would only repeat what the lock guarantees.
    @exclusivity(unchecked) private var state: State

    init(_ state: State) {
        self.state = state
    }

    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}

// `state` is only read or written inside `withLock`, under `lock`.
extension Locked: @unchecked Sendable where State: Sendable {}
