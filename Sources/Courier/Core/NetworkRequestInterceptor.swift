import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Something that modifies each `URLRequest` right before it is sent, and may suspend or throw: a value you can name,
/// test and put in an array, where ``NetworkConfiguration/asyncInterceptor`` is one closure.
///
/// Set them on ``NetworkConfiguration/interceptors`` (or on one request, ``NetworkRequest/interceptors``); they run in
/// order after ``NetworkConfiguration/interceptor`` and ``NetworkConfiguration/asyncInterceptor``, with the same
/// rules: a thrown error fails the request with ``NetworkClientError/interceptorFailed(underlying:)`` and nothing is
/// sent (`CancellationError` stays `CancellationError`), and the headers they set are validated like the request's
/// own.
///
/// ```swift
/// struct TraceInterceptor: NetworkRequestInterceptor {
///     func intercept(_ request: URLRequest) async throws -> URLRequest {
///         var request = request
///         request.setValue(UUID().uuidString, forHTTPHeaderField: "X-Trace-ID")
///         return request
///     }
/// }
///
/// configuration.interceptors = [TraceInterceptor()]
/// ```
public protocol NetworkRequestInterceptor: Sendable {
    /// Returns `request`, modified.
    /// - Throws: Any error, to fail the request before anything is sent.
    func intercept(_ request: URLRequest) async throws -> URLRequest
}

extension NetworkConfiguration {
    /// Interceptors that run in order on every request, after ``interceptor`` and ``asyncInterceptor``; empty by
    /// default. A request with interceptors of its own (``NetworkRequest/interceptors``) runs those instead. Setting
    /// it affects the next request, including on clients already created.
    public var interceptors: [any NetworkRequestInterceptor] {
        get { currentSettings.interceptors }
        set { updateSettings { $0.interceptors = newValue } }
    }
}
