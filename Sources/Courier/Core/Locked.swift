import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(WinSDK)
import WinSDK
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Android)
import Android
#endif

/// A value guarded by a lock: the one place Courier keeps mutable shared state.
///
/// The value and the lock live in one allocation. `NSLock` was one object more, and on Linux one `malloc` more for its
/// mutex, per lock, in allocation and in teardown: a call creates several locks (its transport call, its exchange, a
/// `SendRecorder` per decorator that asks for the send report).
struct Locked<State> {
    private let storage: LockedStorage<State>

    init(_ state: State) {
        storage = LockedStorage.make(state)
    }

    /// Runs `body` with the value, under the lock. The value is reached through the buffer's pointer, so Swift's
    /// run-time exclusivity check does not repeat, on every access, what the lock guarantees.
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        try storage.withUnsafeMutablePointers { state, lock in
            PlatformLock.lock(lock)
            defer { PlatformLock.unlock(lock) }
            return try body(&state.pointee)
        }
    }
}

// The value is only read or written inside `withLock`, under the storage's lock.
extension Locked: @unchecked Sendable where State: Sendable {}

/// The value as the buffer's header, the platform's lock as its one element.
private final class LockedStorage<State>: ManagedBuffer<State, PlatformLock.Primitive> {
    static func make(_ state: State) -> LockedStorage<State> {
        // `create` allocates an instance of the class it is called on.
        let storage = unsafeDowncast(create(minimumCapacity: 1) { _ in state }, to: LockedStorage<State>.self)
        storage.withUnsafeMutablePointerToElements { PlatformLock.initialize($0) }
        return storage
    }

    // ManagedBuffer destroys the header (the value) itself; the lock is ours to destroy.
    deinit {
        withUnsafeMutablePointerToElements { PlatformLock.destroy($0) }
    }
}

/// The platform's own lock, with no allocation of its own: `os_unfair_lock` on Apple platforms, `SRWLOCK` on
/// Windows, a `pthread_mutex_t` elsewhere (as `NSLock` uses there).
private enum PlatformLock {
    #if canImport(Darwin)
    typealias Primitive = os_unfair_lock

    static func initialize(_ lock: UnsafeMutablePointer<Primitive>) { lock.initialize(to: os_unfair_lock()) }
    static func destroy(_ lock: UnsafeMutablePointer<Primitive>) {}
    static func lock(_ lock: UnsafeMutablePointer<Primitive>) { os_unfair_lock_lock(lock) }
    static func unlock(_ lock: UnsafeMutablePointer<Primitive>) { os_unfair_lock_unlock(lock) }
    #elseif canImport(WinSDK)
    typealias Primitive = SRWLOCK

    static func initialize(_ lock: UnsafeMutablePointer<Primitive>) { InitializeSRWLock(lock) }
    static func destroy(_ lock: UnsafeMutablePointer<Primitive>) {}
    static func lock(_ lock: UnsafeMutablePointer<Primitive>) { AcquireSRWLockExclusive(lock) }
    static func unlock(_ lock: UnsafeMutablePointer<Primitive>) { ReleaseSRWLockExclusive(lock) }
    #else
    typealias Primitive = pthread_mutex_t

    static func initialize(_ lock: UnsafeMutablePointer<Primitive>) {
        let error = pthread_mutex_init(lock, nil)
        precondition(error == 0, "pthread_mutex_init failed: \(error)")
    }
    static func destroy(_ lock: UnsafeMutablePointer<Primitive>) { pthread_mutex_destroy(lock) }
    static func lock(_ lock: UnsafeMutablePointer<Primitive>) {
        let error = pthread_mutex_lock(lock)
        precondition(error == 0, "pthread_mutex_lock failed: \(error)")
    }
    static func unlock(_ lock: UnsafeMutablePointer<Primitive>) {
        let error = pthread_mutex_unlock(lock)
        precondition(error == 0, "pthread_mutex_unlock failed: \(error)")
    }
    #endif
}
