#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Thin wrappers over the POSIX socket calls the server needs, papering over Glibc/Darwin differences.

#if canImport(Glibc)
let socketStreamType = Int32(SOCK_STREAM.rawValue)
let sendFlags = Int32(MSG_NOSIGNAL)
#else
let socketStreamType = SOCK_STREAM
let sendFlags: Int32 = 0
#endif

/// Closes a descriptor, ignoring errors (EINTR on close must not be retried on Linux).
func closeSocket(_ fd: Int32) {
    _ = close(fd)
}

/// Shuts down both directions of a socket, which wakes any thread blocked in `recv`, `send` or `poll` on it.
func shutdownSocket(_ fd: Int32) {
    _ = shutdown(fd, Int32(SHUT_RDWR))
}

/// Sets an integer socket option, ignoring failures (all our options are best-effort).
func setSocketOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
    var value = value
    _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
}

/// Marks a descriptor close-on-exec so that processes spawned by tests do not inherit it.
func setCloseOnExec(_ fd: Int32) {
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
}

/// Switches a descriptor between blocking and non-blocking mode.
func setNonBlocking(_ fd: Int32, _ nonBlocking: Bool) {
    let flags = fcntl(fd, F_GETFL, 0)
    guard flags >= 0 else { return }
    _ = fcntl(fd, F_SETFL, nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK)
}

/// Applies the per-connection options: blocking mode, TCP_NODELAY, no SIGPIPE, close-on-exec.
func configureAcceptedSocket(_ fd: Int32) {
    setNonBlocking(fd, false)  // Darwin sockets inherit O_NONBLOCK from the listener
    setCloseOnExec(fd)
    setSocketOption(fd, Int32(IPPROTO_TCP), Int32(TCP_NODELAY), 1)
    #if canImport(Darwin)
    setSocketOption(fd, SOL_SOCKET, SO_NOSIGPIPE, 1)
    #endif
}

/// Makes the next `close` send a TCP RST instead of a FIN.
func setLingerZero(_ fd: Int32) {
    var value = linger(l_onoff: 1, l_linger: 0)
    _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &value, socklen_t(MemoryLayout<linger>.size))
}

/// Sends all bytes, retrying on EINTR and short writes. Returns false if the peer is gone or the socket was shut down.
func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
    guard var pointer = bytes.baseAddress else { return true }
    var remaining = bytes.count
    while remaining > 0 {
        let sent = send(fd, pointer, remaining, sendFlags)
        if sent < 0 {
            if errno == EINTR { continue }
            return false
        }
        pointer += sent
        remaining -= sent
    }
    return true
}

/// Blocking receive that retries on EINTR. Returns the byte count, 0 at end of stream, or -1 on error.
func receive(_ fd: Int32, _ pointer: UnsafeMutablePointer<UInt8>, _ count: Int) -> Int {
    while true {
        let received = recv(fd, pointer, count, 0)
        if received < 0 && errno == EINTR { continue }
        return received
    }
}

/// Non-blocking receive. Returns the byte count, 0 at end of stream, -1 on a real error, or nil if nothing is there.
func receiveNow(_ fd: Int32, _ pointer: UnsafeMutablePointer<UInt8>, _ count: Int, peek: Bool = false) -> Int? {
    let flags = Int32(MSG_DONTWAIT) | (peek ? Int32(MSG_PEEK) : 0)
    let received = recv(fd, pointer, count, flags)
    if received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return nil }
    return received
}

/// Waits up to `milliseconds` (-1: forever) for the socket to become readable or hung up.
/// Returns true if it did, false on timeout.
func pollReadable(_ fd: Int32, milliseconds: Int32) -> Bool {
    var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let result = poll(&entry, 1, milliseconds)
    if result < 0 { return errno != EINTR }
    return result > 0
}

/// Sleeps for the given number of milliseconds.
func sleepMilliseconds(_ milliseconds: Int32) {
    var request = timespec(tv_sec: Int(milliseconds / 1000), tv_nsec: Int(milliseconds % 1000) * 1_000_000)
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR {
        request = remaining
    }
}

/// The current `errno` as a readable string.
func errnoDescription(_ code: Int32) -> String {
    String(cString: strerror(code))
}
