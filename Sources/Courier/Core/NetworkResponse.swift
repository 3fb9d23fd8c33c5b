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
    /// Where the response came from when the configuration has a ``ResponseCache``
    /// (``NetworkConfiguration/responseCache``): ``CacheStatus/network`` (the default, and always without a cache),
    /// a fresh or stale stored response, or one the server revalidated.
    public let cacheStatus: CacheStatus

    /// The HTTP status code, or `0` when `response` is not an `HTTPURLResponse` (possible only in test doubles).
    public var statusCode: Int {
        (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    /// Creates a response, for example in a test double of ``NetworkClientProtocol``.
    /// - Parameters:
    ///   - value: The decoded value.
    ///   - response: The response metadata, usually an `HTTPURLResponse`.
    ///   - data: The raw body; empty by default.
    ///   - cacheStatus: Where the response came from; ``CacheStatus/network`` by default.
    public init(value: ResponseModel, response: URLResponse, data: Data = Data(), cacheStatus: CacheStatus = .network) {
        self.value = value
        self.response = response
        self.data = data
        self.cacheStatus = cacheStatus
    }
}

extension NetworkResponse: Sendable where ResponseModel: Sendable {}
