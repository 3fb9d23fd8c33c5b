import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on a lock file in a directory, held for the lifetime of what owns the directory: the
/// ``Outbox`` (`outbox.lock`) and the disk store of a ``ResponseCache`` (`cache.lock`).
///
/// `flock` locks belong to the open file description: a second owner of the same directory, in this process or
/// another, fails to take it, and the kernel drops it when the process dies, even by `SIGKILL`. The lock file is
/// opened without following a symbolic link, so a link planted in its place is never written through.
final class DirectoryLock: Sendable {
    /// Why the lock was not taken.
    enum Failure: Error {
        /// Another owner holds it.
        case held
        /// `operation` failed on `path` with `errno` `code`.
        case failed(operation: String, path: String, code: Int32)
    }

    /// The lock file's descriptor; -1 once released.
    private let fd: Locked<Int32>

    /// Takes the lock on the file `name` in `directory`, creating it (`0600`) if needed.
    init(directory: String, name: String) throws(Failure) {
        let path = (directory as NSString).appendingPathComponent(name)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .failed(operation: "open lock file", path: path, code: errno) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK { throw .held }
            throw .failed(operation: "lock", path: path, code: code)
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
