import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on a lock file in the outbox directory, held for the outbox's lifetime.
///
/// `flock` locks belong to the open file description: a second `Outbox` on the same directory, in this process or
/// another, fails to take it, and the kernel drops it when the process dies, even by `SIGKILL`.
final class DirectoryLock: Sendable {
    /// The lock file's descriptor; -1 once released.
    private let fd: Locked<Int32>

    init(directory: String) throws(OutboxError) {
        let path = (directory as NSString).appendingPathComponent("outbox.lock")
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw OutboxFiles.error("open lock file", path) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK { throw OutboxError.directoryInUse(path: directory) }
            throw OutboxFiles.error("lock", path, code)
        }
        self.fd = Locked(fd)
    }

    /// Releases the lock; idempotent.
    func release() {
        fd.withLock { fd in
            guard fd >= 0 else { return }
            flock(fd, LOCK_UN)
            close(fd)
            fd = -1
        }
    }

    deinit {
        release()
    }
}
