import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The C library's descriptor calls that more than one part of Courier makes (downloads, uploads, the cache, the
// outbox), each once: under names that no method shadows (`InputStream.close()`, a writer's `write(_:)`, the
// journal's `close()`), and with the retries after `EINTR` written here only.

/// `close(2)`. Its result is ignored: after `close` the descriptor is gone, whatever it says.
func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}

/// `read(2)` into `buffer`, retried while a signal interrupts it: the count read (`0` at the end of the file), or
/// `-1` with `errno` set.
func readDescriptor(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    retryingInterrupts { read(descriptor, buffer, count) }
}

/// `pread(2)` of up to `count` bytes at `offset`, retried while a signal interrupts it: the count read (`0` at the
/// end of the file), or `-1` with `errno` set.
func readDescriptor(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, at offset: Int64) -> Int {
    retryingInterrupts { pread(descriptor, buffer, count, off_t(offset)) }
}

/// Writes all of `data` at the descriptor's position, retrying short writes and writes a signal interrupted: `nil`,
/// or the `errno` of the write that failed.
func writeFully(_ descriptor: Int32, _ data: Data) -> Int32? {
    data.withUnsafeBytes { buffer -> Int32? in
        var offset = 0
        while offset < buffer.count {
            let written = retryingInterrupts { write(descriptor, buffer.baseAddress! + offset, buffer.count - offset) }
            if written < 0 { return errno }
            offset += written
        }
        return nil
    }
}

/// `call`'s result, calling it again while it fails with `EINTR`.
private func retryingInterrupts(_ call: () -> Int) -> Int {
    while true {
        let result = call()
        if result < 0 && errno == EINTR { continue }
        return result
    }
}

/// `strerror` of `code` with its symbolic name for the common ones, `Permission denied (EACCES)`, or its number,
/// `Input/output error (errno 5)`: the one way Courier's errors describe a failed system call.
func errnoDescription(_ code: Int32) -> String {
    let names: [Int32: String] = [
        EACCES: "EACCES", ENOENT: "ENOENT", EEXIST: "EEXIST", EISDIR: "EISDIR", ENOTDIR: "ENOTDIR",
        EROFS: "EROFS", ENOSPC: "ENOSPC", ELOOP: "ELOOP", EPERM: "EPERM", EXDEV: "EXDEV",
    ]
    return "\(String(cString: strerror(code))) (\(names[code] ?? "errno \(code)"))"
}
