import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The file a download's body is written to as it arrives: a partial file beside its destination, moved into place
/// when the body is complete, kept for a resume when the transfer fails, deleted otherwise.
///
/// Each piece is written by the thread that delivers it, before the next piece is read from the socket, so a download
/// holds at most one piece in memory however large it is.
struct DownloadWriter: Sendable {
    /// The partial file.
    let file: URL
    /// Its open descriptor, owned by this writer until ``close()``.
    private let descriptor: Int32
    /// The bytes in the file so far.
    private(set) var length: Int64
    /// The response's validator, when its body can be resumed: see ``PartialDownload/validator(of:)``.
    let validator: String?
    /// The complete length of the body, when the server declared it.
    let total: Int64?

    /// Creates `file` empty (replacing one already there), or, when `resuming` is given, opens its file to append
    /// after its `length` bytes.
    ///
    /// - Throws: ``NetworkClientError/fileAccessFailed(url:reason:)`` when the file cannot be created or opened.
    init(file: URL, resuming partial: PartialDownload?, validator: String?, total: Int64?) throws {
        let path = partial?.file.path ?? file.path
        do {
            try FileManager.default.createDirectory(
                at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
        } catch {
            throw NetworkClientError.fileAccessFailed(
                url: URL(fileURLWithPath: path), reason: "the download's folder cannot be created: \(error)")
        }
        // A new partial file is created, never taken over (O_EXCL: not even a link put there first); a kept one is
        // reopened without following a link put in its place.
        let flags = partial == nil ? O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW : O_WRONLY | O_NOFOLLOW
        let descriptor = open(path, flags | O_CLOEXEC, 0o644)  // As any new file: the umask applies.
        guard descriptor >= 0 else {
            let reason = "the download cannot be written there: \(errnoDescription(errno))"  // Read at once.
            throw NetworkClientError.fileAccessFailed(url: URL(fileURLWithPath: path), reason: reason)
        }
        if let partial, lseek(descriptor, off_t(partial.length), SEEK_SET) != off_t(partial.length) {
            let reason = "the partial download cannot be continued: \(errnoDescription(errno))"
            closeDescriptor(descriptor)
            throw NetworkClientError.fileAccessFailed(url: partial.file, reason: reason)
        }
        self.file = URL(fileURLWithPath: path)
        self.descriptor = descriptor
        self.length = partial?.length ?? 0
        self.validator = validator
        self.total = total
    }

    /// Appends `data` to the file.
    ///
    /// - Throws: ``NetworkClientError/fileAccessFailed(url:reason:)`` when the disk refuses it (full, for example).
    mutating func write(_ data: Data) throws {
        if let failure = writeFully(descriptor, data) {
            let reason = "the download cannot be written: \(errnoDescription(failure))"
            throw NetworkClientError.fileAccessFailed(url: file, reason: reason)
        }
        length += Int64(data.count)
    }

    /// Closes the file and returns what a later run can resume from, or `nil` (the file is then deleted) when the
    /// response cannot be resumed or nothing was written.
    func keep() -> PartialDownload? {
        close()
        guard let validator, length > 0 else {
            try? FileManager.default.removeItem(at: file)
            return nil
        }
        return PartialDownload(file: file, length: length, validator: validator, total: total)
    }

    /// Closes and deletes the file.
    func discard() {
        close()
        try? FileManager.default.removeItem(at: file)
    }

    /// Closes the file, leaving it in place.
    func close() {
        closeDescriptor(descriptor)
    }

    /// The device and inode of the file written (by its descriptor, whatever its path now names), or `nil`.
    func identity() -> RegularFile.Identity? {
        RegularFile.identity(ofDescriptor: descriptor)
    }
}
