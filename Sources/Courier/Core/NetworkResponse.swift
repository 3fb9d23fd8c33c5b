import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The outcome of a successful request: the decoded value, the response metadata and the raw body.
public struct NetworkResponse<ResponseModel> {
    /// The decoded response body.
    public let value: ResponseModel
    /// The response metadata; an `HTTPURLResponse` for every request Courier runs. Read the status and header fields
    /// with ``statusCode`` and ``header(_:)``, which need no cast.
    public let response: URLResponse
    /// The raw response body, exactly as received.
    public let data: Data
    /// What the call cost: times, bytes, redirects, attempts (see ``RequestMetrics``).
    public var metrics: RequestMetrics
    /// Where the response came from when the configuration has a ``ResponseCache``
    /// (``NetworkConfiguration/responseCache``): ``CacheStatus/network`` (the default, and always without a cache),
    /// a fresh or stale stored response, or one the server revalidated.
    public var cacheStatus: CacheStatus

    /// The HTTP status code, for example `200` (or the status a request accepted, such as `404`); `0` only for a
    /// response a test double built without an `HTTPURLResponse`.
    public var statusCode: Int {
        (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    /// The value of the response header field `name`, compared case-insensitively (`"etag"` finds `ETag`), or `nil`
    /// when the response has no such field (or is not an HTTP response: only a test double's can be).
    ///
    /// ```swift
    /// let response = try await client.run(request)
    /// let etag = response.header("ETag")
    /// ```
    /// - Parameter name: The field name, in any case.
    /// - Returns: The field's value, or `nil`.
    public func header(_ name: String) -> String? {
        (response as? HTTPURLResponse)?.value(forHTTPHeaderField: name)
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
