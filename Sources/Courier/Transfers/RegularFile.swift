import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The files Courier reads bodies from and writes downloads to: regular files only, checked without opening them.
///
/// A FIFO blocks `open` until a writer comes (on corelibs' shared work queue that froze every URLSession in the
/// process), `/dev/zero` never ends, and a character device or socket has no size to send as `Content-Length`. So a
/// body file is checked with `stat` (which never opens it), opened with `O_NONBLOCK` (a FIFO put in its place after the
/// check cannot hold the open either), and checked again with `fstat` on the descriptor.
enum RegularFile {
    /// The identity of a file: what `fstat` of a descriptor and `lstat` of a path must agree on for both to be the
    /// same file.
    struct Identity: Equatable, Sendable {
        let device: UInt64
        let inode: UInt64
    }

    /// The size of the regular file at `url` (symbolic links followed), which this process may read. Never opens it.
    ///
    /// - Throws: ``NetworkClientError/fileAccessFailed(url:reason:)`` when `url` is not a file URL, the file does not
    ///   exist, is not a regular file (a directory, FIFO, device or socket) or cannot be read.
    static func size(of url: URL) throws(NetworkClientError) -> Int64 {
        guard url.isFileURL else { throw .fileAccessFailed(url: url, reason: "it is not a file URL") }
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            let code = errno
            if code == ENOENT { throw .fileAccessFailed(url: url, reason: "the file does not exist") }
            throw .fileAccessFailed(url: url, reason: "the file cannot be read: \(errnoDescription(code))")
        }
        if let kind = nonRegularKind(info.st_mode) {
            throw .fileAccessFailed(url: url, reason: "\(kind); only regular files are sent")
        }
        guard access(url.path, R_OK) == 0 else {
            throw .fileAccessFailed(url: url, reason: "the file cannot be read (permissions)")
        }
        return Int64(info.st_size)
    }

    /// Opens the regular file at `url` for reading, without blocking (`O_NONBLOCK`, `O_CLOEXEC`), and returns its
    /// descriptor (the caller closes it) and its size at this moment.
    ///
    /// - Throws: ``NetworkClientError/fileAccessFailed(url:reason:)`` as ``size(of:)`` does, or when the file cannot
    ///   be opened.
    static func openForReading(_ url: URL) throws(NetworkClientError) -> (descriptor: Int32, size: Int64) {
        _ = try size(of: url)  // Checked before the open: opening a FIFO blocks until a writer comes.
        let descriptor = open(url.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            throw .fileAccessFailed(url: url, reason: "the file cannot be opened: \(errnoDescription(code))")
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let code = errno
            _ = close(descriptor)
            throw .fileAccessFailed(url: url, reason: "the file cannot be read: \(errnoDescription(code))")
        }
        if let kind = nonRegularKind(info.st_mode) {
            _ = close(descriptor)
            throw .fileAccessFailed(url: url, reason: "\(kind); only regular files are sent")
        }
        return (descriptor, Int64(info.st_size))
    }

    /// The size of the file open at `descriptor`, or `nil` if `fstat` fails.
    static func size(ofDescriptor descriptor: Int32) -> Int64? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    /// The identity of the file open at `descriptor`, or `nil` if `fstat` fails.
    static func identity(ofDescriptor descriptor: Int32) -> Identity? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        return Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// What is at `path` itself (a symbolic link is not followed): `nil` when nothing is, else its identity and
    /// whether it is a regular file, a directory or a symbolic link.
    static func entry(at path: String) -> (identity: Identity, kind: EntryKind)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        let identity = Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        let kind: EntryKind =
            switch info.st_mode & S_IFMT {
            case S_IFREG: .regular
            case S_IFDIR: .directory
            case S_IFLNK: .symbolicLink
            default: .other
            }
        return (identity, kind)
    }

    /// The kinds of directory entry ``entry(at:)`` tells apart.
    enum EntryKind: Equatable {
        case regular, directory, symbolicLink, other
    }

    /// Reads up to `count` bytes at `offset` into `buffer`, retrying when interrupted: the count read (0 at the end of
    /// the file), or `-1` with `errno` set.
    static func read(_ descriptor: Int32, into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) -> Int {
        readDescriptor(descriptor, buffer, count, at: offset)
    }

    /// Why a file of `mode` is not a regular file, or `nil` when it is one.
    private static func nonRegularKind(_ mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: nil
        case S_IFDIR: "it is a directory"
        case S_IFIFO: "it is a FIFO (named pipe)"
        case S_IFCHR: "it is a character device"
        case S_IFBLK: "it is a block device"
        case S_IFSOCK: "it is a socket"
        default: "it is not a regular file"
        }
    }
}

/// What a ``FileBodyStream`` and the transfer it feeds share: how far the stream has read, whether the transfer
/// stopped it, and how the stream reports a failure to the transfer.
final class FileBodyControl: Sendable {
    fileprivate struct State: Sendable {
        var offset: Int64 = 0
        var status: Stream.Status = .notOpen
        var failure: NetworkClientError?
        var isStopped = false
        var failureHandler: (@Sendable (NetworkClientError) -> Void)?
    }

    fileprivate let state = Locked(State())

    /// Calls `handler` (once, on the thread that reads) if the file changes size or cannot be read.
    func onFailure(_ handler: @escaping @Sendable (NetworkClientError) -> Void) {
        state.withLock { $0.failureHandler = handler }
    }

    /// Ends the body: the next read fails, so that libcurl aborts the request rather than send it short.
    func stop() {
        state.withLock { $0.isStopped = true }
    }
}

/// The body of a ``FileUpload`` (and of a staged ``MultipartFormData``) on Linux: exactly `length` bytes of a regular
/// file, `length` being its size when the request was prepared and the `Content-Length` sent.
///
/// corelibs reads a body stream on its shared work queue, when libcurl asks for the next piece. This stream never
/// blocks there: the file was opened (non-blocking) and checked before the task was created, and each read is a
/// `pread` of a regular file. It never gives more than `length` bytes, so a file that grows during the upload cannot
/// put its tail on the connection as the start of another request; and when the file's size is no longer `length`
/// (it grew or shrank) it fails the transfer at once through its ``control`` and ends the body with an error, so
/// that the server never receives a complete request. ``FileBodyControl/stop()`` (a cancellation, the total timeout)
/// ends it the same way.
///
/// Not `Sendable` (no `Stream` is): everything the stream's reader and the transfer share is in ``control``, under its
/// lock, and no file I/O is done while that lock is held. The descriptor is closed in `deinit` only, when no read can
/// be running.
final class FileBodyStream: InputStream {
    /// The file.
    let url: URL
    /// The bytes to send: the file's size when it was opened.
    let length: Int64
    /// The state shared with the transfer.
    let control = FileBodyControl()
    private let descriptor: Int32

    /// Opens the regular file at `file` (see ``RegularFile/openForReading(_:)``).
    ///
    /// - Throws: ``NetworkClientError/fileAccessFailed(url:reason:)`` when it is not a readable regular file.
    init(file: URL) throws(NetworkClientError) {
        let opened = try RegularFile.openForReading(file)
        self.url = file
        self.descriptor = opened.descriptor
        self.length = opened.size
        super.init(data: Data())
    }

    deinit {
        closeDescriptor(descriptor)
    }

    override func open() {
        control.state.withLock { if $0.status == .notOpen { $0.status = .open } }
    }

    override func close() {
        control.state.withLock { $0.status = .closed }
    }

    override var streamStatus: Stream.Status {
        control.state.withLock { $0.status }
    }

    override var streamError: (any Error)? {
        control.state.withLock { $0.failure }
    }

    /// `true` while bytes remain, and after a failure or a stop (the next read then reports it: corelibs takes "no
    /// bytes available" for the end of the body).
    override var hasBytesAvailable: Bool {
        control.state.withLock { $0.offset < length || $0.failure != nil || $0.isStopped }
    }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        let start = control.state.withLock { state -> Int64? in
            state.failure == nil && !state.isStopped ? state.offset : nil
        }
        guard let start else { return -1 }
        let wanted = Int(min(Int64(maxLength), length - start))
        guard wanted > 0 else { return 0 }
        // A file that grew or shrank since it was measured: its bytes are no longer the body announced.
        guard RegularFile.size(ofDescriptor: descriptor) == length else { return changedSize() }
        let count = RegularFile.read(descriptor, into: buffer, count: wanted, at: start)
        if count < 0 { return fail("the file cannot be read: \(errnoDescription(errno))") }
        if count == 0 { return changedSize() }
        if start + Int64(count) == length {
            // The last piece: checked once more, so that a file that changed meanwhile is never sent as complete.
            guard RegularFile.size(ofDescriptor: descriptor) == length else { return changedSize() }
        }
        let stopped = control.state.withLock { state -> Bool in
            guard state.failure == nil && !state.isStopped else { return true }
            state.offset = start + Int64(count)
            return false
        }
        return stopped ? -1 : count
    }

    private func changedSize() -> Int {
        fail("the file changed size during the upload (\(length) bytes were announced as Content-Length)")
    }

    private func fail(_ reason: String) -> Int {
        let error = NetworkClientError.fileAccessFailed(url: url, reason: reason)
        let handler = control.state.withLock { state -> (@Sendable (NetworkClientError) -> Void)? in
            guard state.failure == nil else { return nil }
            state.failure = error
            return state.failureHandler
        }
        handler?(error)
        return -1
    }
}
