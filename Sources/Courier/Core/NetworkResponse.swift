import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The outcome of a successful request: the decoded value, the response metadata and the raw body.
public struct NetworkResponse<ResponseModel> {
    /// The decoded response body.
    public let value: ResponseModel
    /// The response metadata; an `HTTPURLResponse` for every request Courier runs.
    public let response: URLResponse
    /// The raw response body, exactly as received.
    public let data: Data
    /// What the call cost: times, bytes, redirects, attempts (see ``RequestMetrics``).
    public var metrics: RequestMetrics
    /// Where the response came from when the configuration has a ``ResponseCache``
    /// (``NetworkConfiguration/responseCache``): ``CacheStatus/network`` (the default, and always without a cache),
    /// a fresh or stale stored response, or one the server revalidated.
    public var cacheStatus: CacheStatus

    /// The HTTP status code, or `0` when `response` is not an `HTTPURLResponse` (possible only in test doubles).
    public var statusCode: Int {
        (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    /// Creates a response, for example in a test double of ``NetworkClientProtocol``. Its ``metrics`` are those of a
    /// call made now without the network (see ``RequestMetrics``).
    /// - Parameters:
    ///   - value: The decoded value.
    ///   - response: The response metadata, usually an `HTTPURLResponse`.
    ///   - data: The raw body; empty by default.
    public init(value: ResponseModel, response: URLResponse, data: Data = Data()) {
        self.init(value: value, response: response, data: data, metrics: RequestMetrics())
    }

    /// Creates a response with the metrics of the call that received it, and where it came from.
    /// - Parameters:
    ///   - value: The decoded value.
    ///   - response: The response metadata, usually an `HTTPURLResponse`.
    ///   - data: The raw body.
    ///   - metrics: What the call cost.
    ///   - cacheStatus: Where the response came from; ``CacheStatus/network`` by default.
    public init(
        value: ResponseModel, response: URLResponse, data: Data, metrics: RequestMetrics,
        cacheStatus: CacheStatus = .network
    ) {
        self.value = value
        self.response = response
        self.data = data
        self.metrics = metrics
        self.cacheStatus = cacheStatus
    }
}

extension NetworkResponse: Sendable where ResponseModel: Sendable {}
