import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// @unchecked Sendable: every mutable property is only accessed while holding `lock` (an NSCondition).
/// All mutable state shared between the accept thread, the connection threads and API callers.
final class ServerState: @unchecked Sendable {
    /// The one lock (a mutex with a condition variable, used to join the server threads in `stop`).
    let lock = NSCondition()

    static let maximumRecordedRequests = 10_000

    var stopped = false
    var listenerClosed = false
    /// Open connection sockets by connection ID. A descriptor is only closed while holding `lock` and removed from
    /// here at the same time, so `stop` never shuts down a recycled descriptor number.
    var connections: [Int: Int32] = [:]
    var liveThreads = 0
    var nextConnectionID = 0
    var nextSequenceNumber = 0

    var requestCount = 0
    var maxConcurrentRequests = 0
    var inProgressRequests = 0
    var connectionCount = 0
    var clientClosedCount = 0
    var bodyBytesSent = 0
    var interimResponsesSent = 0
    var recorded: [ServerRequest] = []

    @inline(__always)
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// Drops the oldest recorded requests once there are noticeably more than the maximum (amortised trimming).
    func trimRecorded() {
        if recorded.count >= Self.maximumRecordedRequests + 1_000 {
            recorded.removeFirst(recorded.count - Self.maximumRecordedRequests)
        }
    }
}
