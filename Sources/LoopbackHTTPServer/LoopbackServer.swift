import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The error thrown by `LoopbackServer.init` when the listening socket cannot be set up.
public struct LoopbackServerError: Error, Sendable, CustomStringConvertible {
    /// The step that failed, e.g. "bind" or "parse host".
    public let operation: String
    /// The `errno` value, or 0 if not applicable.
    public let code: Int32

    /// A readable description including the system error message.
    public var description: String {
        let prefix = "LoopbackServer: \(operation) failed"
        return code == 0 ? prefix : "\(prefix): \(errnoDescription(code))"
    }
}

/// An in-process HTTP/1.1 server on a loopback address for tests and benchmarks.
///
/// It listens on an ephemeral port as soon as it is created, serves every connection on its own thread (keep-alive,
/// pipelining, chunked request bodies and `Expect: 100-continue` supported) and answers each request with what the
/// handler returns. The handler runs on the connection's thread. Statistics are thread-safe.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
public final class LoopbackServer: Sendable {
    /// The address the server listens on, as given to `init` (e.g. "127.0.0.1").
    public let host: String
    /// The ephemeral port the server listens on.
    public let port: Int
    private let core: ServerCore
    private let base: URL

    /// Starts listening at once on `host` with an ephemeral port.
    ///
    /// - Parameters:
    ///   - host: A numeric IPv4 or IPv6 address, or "localhost" (bound as 127.0.0.1). Any 127/8 address works on
    ///     Linux (e.g. "127.0.0.2", to get a second origin); macOS only configures 127.0.0.1 by default.
    ///   - requestBodyMode: Chooses, from a request's method and percent-decoded path, whether its body is kept in
    ///     ``ServerRequest/body`` or discarded as it arrives (``RequestBodyMode``); every body is kept by default.
    ///   - handler: Decides the response for each request; runs on the connection's thread.
    /// - Throws: `LoopbackServerError` if the address is invalid or the socket cannot be bound.
    public init(
        host: String = "127.0.0.1",
        requestBodyMode: @escaping @Sendable (_ method: String, _ path: String) -> RequestBodyMode = { _, _ in .buffer
        },
        handler: @escaping @Sendable (ServerRequest) -> ServerResponse
    ) throws {
        let (fd, port) = try Self.openListener(host: host)
        let authority = host.contains(":") ? "[\(host)]" : host
        guard let base = URL(string: "http://\(authority):\(port)") else {
            closeSocket(fd)
            throw LoopbackServerError(operation: "make base URL", code: 0)
        }
        do {
            core = try ServerCore(listenFD: fd, requestBodyMode: requestBodyMode, handler: handler)
        } catch {
            closeSocket(fd)
            throw error
        }
        self.host = host
        self.port = port
        self.base = base
        core.start()
    }

    deinit {
        core.stop()
    }

    /// `http://HOST:PORT`, without a trailing slash.
    public var baseURL: URL {
        base
    }

    /// `baseURL` followed verbatim by `pathAndQuery`, e.g. `url("/echo?x=1")`.
    public func url(_ pathAndQuery: String) -> URL {
        guard let url = URL(string: base.absoluteString + pathAndQuery) else {
            preconditionFailure("LoopbackServer.url: not a valid URL: \(base.absoluteString + pathAndQuery)")
        }
        return url
    }

    /// Closes the listener and all connections and waits (up to 5 s) for the server threads to finish.
    /// Idempotent; also called from deinit. Requests in progress end without a response.
    public func stop() {
        core.stop()
    }

    /// The number of requests fully received (head and body) since start or the last `resetStatistics()`.
    public var requestCount: Int {
        core.state.locked { core.state.requestCount }
    }

    /// The largest number of requests that were in progress at the same time.
    public var maxConcurrentRequests: Int {
        core.state.locked { core.state.maxConcurrentRequests }
    }

    /// The number of requests fully received whose response is not yet fully written (or connection not closed).
    public var inProgressRequests: Int {
        core.state.locked { core.state.inProgressRequests }
    }

    /// The number of accepted connections.
    public var connectionCount: Int {
        core.state.locked { core.state.connectionCount }
    }

    /// How many times the client closed or reset a connection while a request on it was in progress (noticed while
    /// the server waits for a delay, hangs, drips, holds a `.stream`/`.gzipBomb` after `holdAfter` or sends interim
    /// responses, within about 10 ms, or when writing the response fails).
    public var clientClosedCount: Int {
        core.state.locked { core.state.clientClosedCount }
    }

    /// Response body bytes the server has written to its sockets (accepted by `send`), over all responses. A client
    /// that stops reading still receives what the kernel buffers on loopback (a few MB), so compare with generous
    /// bounds; to bound what a client can receive exactly, use the `holdAfter` of `.stream` or `.gzipBomb`.
    public var bodyBytesSent: Int {
        core.state.locked { core.state.bodyBytesSent }
    }

    /// The interim (1xx) responses sent by `.interimForever`.
    public var interimResponsesSent: Int {
        core.state.locked { core.state.interimResponsesSent }
    }

    /// The received requests in arrival order; only the last 10,000 are kept.
    public var recordedRequests: [ServerRequest] {
        core.state.locked { Array(core.state.recorded.suffix(ServerState.maximumRecordedRequests)) }
    }

    /// Polls `condition` every 5 ms until it is true or `timeout` has passed (30 s by default: a bound for waiting on
    /// an event, generous because a loaded machine may be slow to deliver it, never a measure of speed). Returns whether
    /// it became true.
    public func waitUntil(
        timeout: Duration = .seconds(30),
        _ condition: @Sendable (LoopbackServer) -> Bool
    ) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while true {
            if condition(self) { return true }
            if clock.now >= deadline || Task.isCancelled { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Zeroes the counters and forgets the recorded requests. `maxConcurrentRequests` restarts from the number of
    /// requests in progress; connection IDs and sequence numbers keep counting.
    public func resetStatistics() {
        core.state.locked {
            core.state.requestCount = 0
            core.state.maxConcurrentRequests = core.state.inProgressRequests
            core.state.connectionCount = 0
            core.state.clientClosedCount = 0
            core.state.bodyBytesSent = 0
            core.state.interimResponsesSent = 0
            core.state.recorded = []
        }
    }

    // MARK: Listening socket

    private static func openListener(host: String) throws -> (fd: Int32, port: Int) {
        let address = host == "localhost" ? "127.0.0.1" : host
        let family = address.contains(":") ? AF_INET6 : AF_INET
        let fd = socket(family, socketStreamType, 0)
        guard fd >= 0 else { throw LoopbackServerError(operation: "socket", code: errno) }
        func fail(_ operation: String, _ code: Int32) -> LoopbackServerError {
            closeSocket(fd)
            return LoopbackServerError(operation: operation, code: code)
        }
        setCloseOnExec(fd)
        setSocketOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)

        var storage = sockaddr_storage()
        let length: socklen_t
        if family == AF_INET6 {
            var address6 = sockaddr_in6()
            address6.sin6_family = sa_family_t(AF_INET6)
            #if canImport(Darwin)
            address6.sin6_len = UInt8(MemoryLayout<sockaddr_in6>.size)
            #endif
            guard inet_pton(AF_INET6, address, &address6.sin6_addr) == 1 else { throw fail("parse host \(host)", 0) }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address6, as: sockaddr_in6.self) }
        } else {
            var address4 = sockaddr_in()
            address4.sin_family = sa_family_t(AF_INET)
            #if canImport(Darwin)
            address4.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
            #endif
            guard inet_pton(AF_INET, address, &address4.sin_addr) == 1 else { throw fail("parse host \(host)", 0) }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address4, as: sockaddr_in.self) }
        }
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { throw fail("bind \(host)", errno) }
        guard listen(fd, SOMAXCONN) == 0 else { throw fail("listen", errno) }

        var actual = sockaddr_storage()
        var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) }
        }
        guard named == 0 else { throw fail("getsockname", errno) }
        let port: UInt16 =
            family == AF_INET6
            ? withUnsafeBytes(of: &actual) { $0.load(as: sockaddr_in6.self).sin6_port }
            : withUnsafeBytes(of: &actual) { $0.load(as: sockaddr_in.self).sin_port }
        setNonBlocking(fd, true)
        return (fd, Int(UInt16(bigEndian: port)))
    }
}
