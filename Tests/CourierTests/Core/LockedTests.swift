import Foundation
import Testing

@testable import Courier

@Suite("Locked")
struct LockedTests {
    /// Counts the instances alive, so that a test sees the value go away with its lock.
    final class Tracked: Sendable {
        static let alive = Locked(0)

        init() { Self.alive.withLock { $0 += 1 } }
        deinit { Self.alive.withLock { $0 -= 1 } }
    }

    @Test("Concurrent changes under the lock are never lost")
    func concurrentChanges() async {
        let counter = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<64 {
                group.addTask {
                    for _ in 0..<1_000 { counter.withLock { $0 += 1 } }
                }
            }
        }
        #expect(counter.withLock { $0 } == 64_000)
    }

    @Test("The value is released with its lock, and a copy of the Locked shares both")
    func valueReleased() {
        let before = Tracked.alive.withLock { $0 }
        do {
            let locked = Locked([Tracked(), Tracked()])
            let copy = locked
            copy.withLock { $0.append(Tracked()) }
            #expect(locked.withLock { $0.count } == 3)
            #expect(Tracked.alive.withLock { $0 } == before + 3)
        }
        #expect(Tracked.alive.withLock { $0 } == before)
    }

    @Test("An error thrown under the lock leaves it unlocked")
    func throwingBody() {
        struct Refused: Error {}
        let locked = Locked("kept")
        #expect(throws: Refused.self) { try locked.withLock { _ in throw Refused() } }
        #expect(locked.withLock { $0 } == "kept")
    }
}
