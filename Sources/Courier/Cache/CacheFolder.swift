import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The directory of a disk ``ResponseCache``, opened so that nothing someone else put there is ever served.
///
/// A disk cache answers from its files without asking the server, and its salt is what makes a file unforgeable (a
/// file's name and key check are digests salted with it). So, when the store opens:
///
/// 1. A missing directory is made `0700`; a path that is a symbolic link is refused (``ResponseCacheError/symbolicLink(path:)``),
///    and so is a directory whose parent any user may write to without a sticky bit.
/// 2. The directory must belong to this process's user (``ResponseCacheError/directoryNotOwned(path:owner:)``):
///    whoever owns it can put files in it. Its mode is set to `0700` when it was anything else.
/// 3. The lock file `cache.lock` is taken (``DirectoryLock``, as the outbox does): one cache per directory, in this
///    process or another (``ResponseCacheError/directoryInUse(path:)``).
/// 4. The salt is trusted only if this user could have made it and no one else could have read it: a regular file
///    owned by this user, with one link, readable by no one else, in a directory no one else could write to. When
///    the directory was writable by others, or the salt fails any of these, every entry is removed and a new salt
///    made: files keyed with a salt someone else may know are never read.
///
/// Every check is made on the open directory (`fstat`, `fchmod` on its descriptor, opened without following a
/// link), not on a path that could change in between.
struct CacheFolder: Sendable {
    /// The directory's path.
    let path: String
    /// The salt of every digest in the directory's names and files: 32 hexadecimal digits.
    let salt: String
    /// The directory's lock, held as long as this value's owner lives.
    let lock: DirectoryLock

    /// The lock file's name.
    static let lockName = "cache.lock"
    /// The salt file's name.
    static let saltName = "salt"

    /// Opens `directory`, creating it if needed.
    ///
    /// - Parameter removeEntries: Removes every entry file of the directory; called when the salt is not trusted.
    /// - Throws: ``ResponseCacheError``.
    init(_ directory: URL, removeEntries: (String) -> Void) throws(ResponseCacheError) {
        let path = directory.standardizedFileURL.path
        self.path = path
        let parent = (path as NSString).deletingLastPathComponent
        try Self.makeParent(parent)
        if mkdir(path, 0o700) != 0, errno != EEXIST {
            throw .storageFailed(operation: "mkdir", path: path, code: errno)
        }
        var parentInfo = stat()
        if stat(parent, &parentInfo) == 0, parentInfo.st_mode & S_IWOTH != 0, parentInfo.st_mode & S_ISVTX == 0 {
            throw .replaceableDirectory(path: path)
        }
        let fd = try Self.openDirectory(path)
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .storageFailed(operation: "fstat", path: path, code: errno) }
        guard info.st_uid == geteuid() else { throw .directoryNotOwned(path: path, owner: UInt32(info.st_uid)) }
        let mode = info.st_mode & 0o7777
        let othersCouldWrite = mode & 0o022 != 0
        if mode != 0o700, fchmod(fd, 0o700) != 0 {
            throw .storageFailed(operation: "chmod", path: path, code: errno)
        }
        lock = try Self.takeLock(path)
        let saltPath = (path as NSString).appendingPathComponent(Self.saltName)
        if !othersCouldWrite, let salt = Self.trustedSalt(at: saltPath) {
            self.salt = salt
            return
        }
        removeEntries(path)
        unlink(saltPath)
        let salt = CacheKey.newSalt()
        guard DiskStore.writeAtomically(Data(salt.utf8), to: URL(fileURLWithPath: saltPath), in: directory) else {
            throw .storageFailed(operation: "write salt", path: saltPath, code: errno)
        }
        self.salt = salt
    }

    /// Whether `info` describes a file this user made and no one else could have changed or read: a regular file
    /// owned by this user, with one link, and no permission for anyone else.
    static func isOwnPrivateFile(_ info: stat) -> Bool {
        info.st_mode & S_IFMT == S_IFREG && info.st_uid == geteuid() && info.st_nlink == 1 && info.st_mode & 0o077 == 0
    }

    /// Creates `parent` and its own parents when missing, with the default mode.
    private static func makeParent(_ parent: String) throws(ResponseCacheError) {
        guard !FileManager.default.fileExists(atPath: parent) else { return }
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            let code = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError)?.code
            throw .storageFailed(operation: "create directory", path: parent, code: code.map(Int32.init) ?? EIO)
        }
    }

    /// The directory at `path`, opened for `fstat` and `fchmod` without following a link.
    private static func openDirectory(_ path: String) throws(ResponseCacheError) -> Int32 {
        var info = stat()
        if lstat(path, &info) == 0 {
            if info.st_mode & S_IFMT == S_IFLNK { throw .symbolicLink(path: path) }
            if info.st_mode & S_IFMT != S_IFDIR { throw .notADirectory(path: path) }
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            switch errno {
            case ELOOP: throw .symbolicLink(path: path)
            case ENOTDIR: throw .notADirectory(path: path)
            case let code: throw .storageFailed(operation: "open directory", path: path, code: code)
            }
        }
        return fd
    }

    /// Takes the directory's lock; a lock file that is not this user's own private file (a link or a file someone
    /// planted while the directory was open to others) is removed first.
    private static func takeLock(_ path: String) throws(ResponseCacheError) -> DirectoryLock {
        let lockPath = (path as NSString).appendingPathComponent(lockName)
        var info = stat()
        if lstat(lockPath, &info) == 0, !isOwnPrivateFile(info) { unlink(lockPath) }
        do {
            return try DirectoryLock(directory: path, name: lockName)
        } catch {
            switch error {
            case .held: throw .directoryInUse(path: path)
            case .failed(let operation, let path, let code):
                throw .storageFailed(operation: operation, path: path, code: code)
            }
        }
    }

    /// The salt at `path` if it is this user's own private file of 32 hexadecimal digits, else `nil`.
    private static func trustedSalt(at path: String) -> String? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, isOwnPrivateFile(info), info.st_size == 32 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 33)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count == 32, bytes.prefix(32).allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { return nil }
        return String(decoding: bytes.prefix(32), as: UTF8.self)
    }
}
