import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What one call cost: when it started and ended, when the request went out and the response head came back, the
/// bytes each way, the redirects and attempts, and whether the response was shared or came from a cache.
///
/// Courier measures these itself, at its transport seam (``HTTPExchange``), on every platform and transport, Linux
/// included, where `URLSessionTaskMetrics` never arrive. Every ``NetworkResponse`` carries them
/// (``NetworkResponse/metrics``), every ``LogEntry`` too, and ``NetworkClientError/metrics`` for a transport
/// failure or an unacceptable status. Measuring takes a few clock readings per call; nothing is formatted unless you read it.
///
/// - With a caller's `URLSession` that Courier cannot drive (a session with a delegate of its own), the head and the
///   body are handed over together once the whole response arrived: `responseStart` is then that moment, close to
///   `end`, not when the head came.
/// - A response made without a network call (a ``StubNetworkClient`` answer, a test double's
///   ``NetworkResponse/init(value:response:data:)``) carries the time it was made as `start` and `end`,
///   `nil` for `requestStart` and `responseStart`, no bytes and one attempt.
public struct RequestMetrics: Sendable, Hashable {
    /// When the call started: the client at the bottom of the stack began to build the request.
    public var start: Date
    /// When the first request was handed to the transport (after the interceptors); `nil` when nothing was sent.
    public var requestStart: Date?
    /// When the final response's head arrived; `nil` when none did, or the transport does not tell it apart from the
    /// body.
    public var responseStart: Date?
    /// When the body ended (a download's file moved into place) or the call failed.
    public var end: Date
    /// The request body bytes handed to the transport, every hop included (a 307 or 308 sends the body again);
    /// header fields are not counted.
    public var bytesSent: Int64
    /// The final response's body bytes, after decompression (for a download, the bytes in the file).
    public var bytesReceived: Int64
    /// The redirects Courier followed.
    public var redirects: Int
    /// The requests sent for the call: 1 for a plain call; `retrying()` and `authenticated(by:)` add their
    /// retries.
    public var attempts: Int
    /// Whether ``DeduplicatingClient`` handed this response to more than one caller.
    public var shared: Bool
    /// Whether a ``ResponseCache`` answered, fully or after revalidating (``NetworkResponse/cacheStatus`` other than
    /// ``CacheStatus/network``); `false` without a cache.
    public var fromCache: Bool

    /// Creates metrics, for example in a test double.
    /// - Parameters:
    ///   - start: When the call started; now by default.
    ///   - requestStart: When the request went out; `nil` by default.
    ///   - responseStart: When the response head arrived; `nil` by default.
    ///   - end: When the call ended; `start` by default.
    ///   - bytesSent: Request body bytes; `0` by default.
    ///   - bytesReceived: Response body bytes; `0` by default.
    ///   - redirects: Redirects followed; `0` by default.
    ///   - attempts: Requests sent; `1` by default.
    ///   - shared: Whether a ``DeduplicatingClient`` shared the response; `false` by default.
    ///   - fromCache: Whether it came from a cache; `false` by default.
    public init(
        start: Date = Date(), requestStart: Date? = nil, responseStart: Date? = nil, end: Date? = nil,
        bytesSent: Int64 = 0, bytesReceived: Int64 = 0, redirects: Int = 0, attempts: Int = 1, shared: Bool = false,
        fromCache: Bool = false
    ) {
        self.start = start
        self.requestStart = requestStart
        self.responseStart = responseStart
        self.end = end ?? start
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
        self.redirects = redirects
        self.attempts = attempts
        self.shared = shared
        self.fromCache = fromCache
    }

    /// `end - start`, in seconds.
    public var duration: TimeInterval { end.timeIntervalSince(start) }
}

/// The raw readings of one call, in uptime nanoseconds, turned into ``RequestMetrics`` once at the end.
struct MetricsMeter: Sendable {
    /// The wall-clock time and the uptime at the start: the other readings are offsets from it.
    let startDate: Date
    let startUptime: UInt64
    var requestStart: UInt64 = 0
    var responseStart: UInt64 = 0
    var bytesSent: Int64 = 0
    var bytesReceived: Int64 = 0
    var redirects = 0
    /// Whether a ``ResponseCache`` answered the final hop (``CacheStatus`` other than `network`).
    var fromCache = false

    init() {
        startDate = Date()
        startUptime = DispatchTime.now().uptimeNanoseconds
    }

    /// The metrics, ending now.
    func finished() -> RequestMetrics {
        RequestMetrics(
            start: startDate, requestStart: reading(requestStart), responseStart: reading(responseStart),
            end: date(DispatchTime.now().uptimeNanoseconds), bytesSent: bytesSent, bytesReceived: bytesReceived,
            redirects: redirects, fromCache: fromCache)
    }

    /// The date of a reading; `nil` when it was not taken.
    private func reading(_ uptime: UInt64) -> Date? {
        guard uptime != 0 else { return nil }
        return startDate.addingTimeInterval(Double(Int64(bitPattern: uptime &- startUptime)) / 1e9)
    }

    private func date(_ uptime: UInt64) -> Date {
        startDate.addingTimeInterval(Double(Int64(bitPattern: uptime &- startUptime)) / 1e9)
    }
}

extension RequestMetrics {
    /// The key under which a `URLError`'s user info carries the metrics of the call that failed.
    static let userInfoKey = "CourierRequestMetrics"

    /// `error` with `metrics` in its user info.
    static func attach(_ metrics: RequestMetrics, to error: URLError) -> URLError {
        var info = error.userInfo
        info[userInfoKey] = metrics
        return URLError(error.code, userInfo: info)
    }

    /// A copy of `response` that carries `metrics` (for ``NetworkClientError/metrics``); `response` itself if it
    /// cannot be copied.
    static func attach(_ metrics: RequestMetrics, to response: HTTPURLResponse) -> HTTPURLResponse {
        MeasuredHTTPURLResponse(response, metrics: metrics) ?? response
    }
}

/// An `HTTPURLResponse` that carries the metrics of the call that received it: the response of an
/// ``NetworkClientError/unacceptableStatusCode(statusCode:response:data:)``.
// Restated, not added: Foundation declares HTTPURLResponse `@unchecked Sendable`, and the only state of this subclass
// is one immutable `Sendable` value.
final class MeasuredHTTPURLResponse: HTTPURLResponse, @unchecked Sendable {
    let metrics: RequestMetrics

    init?(_ response: HTTPURLResponse, metrics: RequestMetrics) {
        guard let url = response.url else { return nil }
        self.metrics = metrics
        let fields = response.allHeaderFields.reduce(into: [String: String]()) { fields, field in
            if let name = field.key as? String, let value = field.value as? String { fields[name] = value }
        }
        super.init(url: url, statusCode: response.statusCode, httpVersion: "HTTP/1.1", headerFields: fields)
    }

    required init?(coder: NSCoder) {
        return nil
    }
}

extension NetworkClientError {
    /// What the call cost until it failed, for the two cases that carry it: ``transportFailed(_:)`` and
    /// ``unacceptableStatusCode(statusCode:response:data:)``, as ``NetworkClient``'s transfer threw them. `nil` for
    /// every other case, those raised after the request went out included (``responseTooLarge(limit:)``,
    /// ``redirectRefused(reason:)``, ``decodingFailed(underlying:data:)``, ``fileAccessFailed(url:reason:)``), for a
    /// `transportFailed` deadline that passed while the call waited for a token renewal, and for errors made by test
    /// doubles.
    public var metrics: RequestMetrics? {
        switch self {
        case .transportFailed(let error):
            return error.userInfo[RequestMetrics.userInfoKey] as? RequestMetrics
        case .unacceptableStatusCode(_, let response, _):
            return (response as? MeasuredHTTPURLResponse)?.metrics
        default:
            return nil
        }
    }
}
