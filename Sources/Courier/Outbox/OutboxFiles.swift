import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The POSIX calls the outbox's storage needs: atomic file replacement, appends that reach the disk, and the
/// directory lock. Every function reports failure as ``OutboxError/storageFailed(operation:path:code:)``.
enum OutboxFiles {
    static func error(_ operation: String, _ path: String, _ code: Int32 = errno) -> OutboxError {
        .storageFailed(operation: operation, path: path, code: code)
    }

    /// Creates `path` and its parents if needed.
    static func makeDirectory(_ path: String) throws(OutboxError) {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw Self.error("create directory", path, EIO)
        }
    }

    /// `fsync` on a directory, so that a rename or unlink in it survives a power loss.
    static func syncDirectory(_ path: String) throws(OutboxError) {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw error("open directory", path) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw error("fsync directory", path) }
    }

    /// Writes all of `data` at the descriptor's position, retrying short writes and EINTR.
    static func writeAll(_ fd: Int32, _ data: Data, path: String) throws(OutboxError) {
        if let failure = writeFully(fd, data) { throw error("write", path, failure) }
    }

    /// Flushes the file's data (and its size) to the disk.
    static func syncData(_ fd: Int32, path: String) throws(OutboxError) {
        #if canImport(Darwin)
        let result = fsync(fd)
        #else
        let result = fdatasync(fd)
        #endif
        guard result == 0 else { throw error("fsync", path) }
    }

    /// Replaces `path` atomically with `data`: a temporary file in the same directory, `fsync`, `rename`, and an
    /// `fsync` of the directory. After a crash at any instant, `path` holds either its old content or `data`.
    static func writeAtomically(_ data: Data, to path: String) throws(OutboxError) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw error("create", temporary) }
        do throws(OutboxError) {
            try writeAll(fd, data, path: temporary)
            guard fsync(fd) == 0 else { throw error("fsync", temporary) }
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw error("rename", path, code)
        }
        try syncDirectory((path as NSString).deletingLastPathComponent)
    }

    /// Opens `path` for appending.
    static func openForAppending(_ path: String) throws(OutboxError) -> Int32 {
        let fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard fd >= 0 else { throw error("open", path) }
        return fd
    }

    /// The whole content of the regular file at `path`.
    ///
    /// Failing to open or read it (`EACCES`, `EIO`, `EMFILE`, a directory in its place: `EISDIR`) throws: that says
    /// nothing about the bytes in it, which may be readable again later, so callers must not treat it as damage.
    static func read(_ path: String) throws(OutboxError) -> Data {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw error("open", path) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw error("stat", path) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw error("read", path, EISDIR) }
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { readDescriptor(fd, $0.baseAddress, $0.count) }
            if count < 0 { throw error("read", path) }
            if count == 0 { return data }
            data.append(contentsOf: chunk[0..<count])
        }
    }

    /// Cuts the file open on `fd` back to `size` bytes and flushes that; `false` if it could not.
    static func truncate(_ fd: Int32, to size: Int) -> Bool {
        guard ftruncate(fd, off_t(size)) == 0 else { return false }
        #if canImport(Darwin)
        return fsync(fd) == 0
        #else
        return fdatasync(fd) == 0
        #endif
    }

    /// The regular files in `directory` whose names end with `suffix`, sorted by name.
    static func files(in directory: String, suffix: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasSuffix(suffix) }.sorted()
    }
}
