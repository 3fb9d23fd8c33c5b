import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a ``ResponseCache`` would not open its directory
/// (``ResponseCache/init(memoryCapacity:diskCapacity:directory:)``).
///
/// A disk cache serves what its directory holds without asking the server, so the directory must be the cache's own:
/// made by this user, writable by no one else, used by one cache at a time. See <doc:CachingResponses>.
public enum ResponseCacheError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Another ``ResponseCache``, in this process or another, has the directory open: a directory belongs to one
    /// cache at a time (each would fill it to its own capacity, and evict the other's files).
    case directoryInUse(path: String)
    /// The directory belongs to another user (`owner`, a user id): whoever owns it can put responses in it.
    case directoryNotOwned(path: String, owner: UInt32)
    /// The path is a symbolic link: it is not followed (whoever can change the link chooses the directory). Give
    /// the directory itself.
    case symbolicLink(path: String)
    /// Something other than a directory is at the path.
    case notADirectory(path: String)
    /// The directory's parent can be written by every user and has no sticky bit: anyone could replace the
    /// directory with their own. (A sticky parent, such as `/tmp`, lets only the owner rename or remove it.)
    case replaceableDirectory(path: String)
    /// A file operation failed; `code` is the `errno` value.
    case storageFailed(operation: String, path: String, code: Int32)

    /// A readable description, with what to do.
    public var description: String {
        switch self {
        case .directoryInUse(let path):
            return "The cache directory \(path) is in use by another ResponseCache (in this or another process): "
                + "give each cache a directory of its own."
        case .directoryNotOwned(let path, let owner):
            return "The cache directory \(path) belongs to user \(owner), not to this process's user "
                + "\(geteuid()): it is not used. Keep the cache in a per-user location such as the caches directory."
        case .symbolicLink(let path):
            return "The cache directory \(path) is a symbolic link, which is not followed: give the directory itself."
        case .notADirectory(let path):
            return "The cache directory \(path) is not a directory."
        case .replaceableDirectory(let path):
            return "The parent of the cache directory \(path) can be written by every user and has no sticky bit: "
                + "another user could replace the directory. Keep the cache in a per-user location."
        case .storageFailed(let operation, let path, let code):
            return "Cache storage: \(operation) failed for \(path): \(errnoDescription(code))."
        }
    }
}
