import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MicroClient 0.0.16–0.0.28: the names SDKs of the newer line use, mapped onto Courier's own mechanisms.
// - `interceptors` run in order where `asyncInterceptor` runs: NetworkRequestInterceptor, NetworkConfiguration's and
//   NetworkRequest's `interceptors` are Courier's own (Core); the ready interceptors are in MicroClientInterceptors.
// - `RetryStrategy` becomes a RetryPolicy for Courier's RetryingClient: idempotent methods and transient failures
//   only, with backoff (MicroClient retried every failure of every method at once).
// - `NetworkLogger` receives the redacted lines of Courier's LoggingClient.
// - A 0.0.22+ configuration's retry strategy, logger and response interceptors are its adaptation (MicroClientOptions):
//   a stack of those decorators that each NetworkClient builds once (MicroClientStack); a request's own retry strategy
//   or response interceptors are the request's adaptation (MicroClientRequestOptions), which the stack reads, and which
//   replace the configuration's for that request.
// - `URLSessionProtocol` lets a test double stand in for the session, on Linux too.
// Left out: 0.0.21's `Logger` and `LogLevel` parameter types (Courier's `LogLevel` is another type; 0.0.22 renamed
// them `NetworkLogger` and `NetworkLogLevel`), and the ready response interceptors (0.0.25+).

// MARK: - 0.0.16–0.0.28: URLSessionProtocol

/// What runs a request for MicroClient 0.0.16 and later: `URLSession`, or a test double that returns canned
/// responses.
///
/// A configuration created with a double (``NetworkConfiguration/init(session:defaultDecoder:defaultEncoder:baseURL:)``,
/// deprecated) hands it each finished `URLRequest` (interceptors applied) with a `nil` delegate, then checks the status
/// and decodes as usual. The double is a transport under Courier's pipeline, so Courier's rules hold above it as for
/// any transport: redirects are followed by Courier (credentials kept to their origin), the size limit and the
/// request's total deadline apply. A file upload, a download or a streamed response fails with
/// ``NetworkClientError/invalidRequest(reason:)``: a double answers in memory, whole. A real `URLSession` passed as
/// this protocol is used like any session. New tests use ``InMemoryTransport``, which answers canned HTTP messages with
/// everything a transport can do (<doc:TestingWithCourier>).
public protocol URLSessionProtocol: Sendable {
    /// Returns the body and the response for `request`.
    /// - Throws: A `URLError` for a failed transfer (Courier reports it as
    ///   ``NetworkClientError/transportFailed(_:)``), or any error.
    func data(for request: URLRequest, delegate: (any URLSessionTaskDelegate)?) async throws -> (Data, URLResponse)
}

extension URLSession: URLSessionProtocol {}

// MARK: - 0.0.25–0.0.28: response interceptors

/// Something that sees, and may replace or reject, each successful response before the caller does. From MicroClient
/// 0.0.25. Response interceptors run in order after the status was accepted and the body decoded (and after
/// retries); an error they throw reaches the caller unchanged.
public protocol NetworkResponseInterceptor: Sendable {
    /// Returns `response`, possibly replaced.
    /// - Parameters:
    ///   - response: The decoded response.
    ///   - data: The raw body (also ``NetworkResponse/data``).
    /// - Throws: Any error, to fail the call.
    func intercept<ResponseModel: Sendable>(
        _ response: NetworkResponse<ResponseModel>, _ data: Data
    ) async throws -> NetworkResponse<ResponseModel>
}

// MARK: - 0.0.18–0.0.28: retry strategy

/// How often MicroClient 0.0.18 and later retried a failed request.
///
/// Courier maps it onto ``RetryPolicy`` and ``RetryingClient``: `.retry(count: n)` is `RetryPolicy(maxAttempts: n + 1)`,
/// so Courier's safety rules stay: only idempotent methods (`GET`, `HEAD`, `PUT`, `DELETE`, `OPTIONS`, or a request
/// with an `Idempotency-Key`), only transient failures (timeouts, lost connections, 408, 429, 500, 502, 503, 504),
/// with jittered backoff and `Retry-After`. MicroClient retried every failure of every method at once.
@available(*, deprecated, message: "MicroClient 0.0.28: use Courier's RetryPolicy with client.retrying(_:)")
public enum RetryStrategy: Sendable, Equatable {
    /// No retries.
    case none
    /// Up to `count` retries after the first attempt.
    case retry(count: Int)

    /// The attempts in all, for ``RetryPolicy/maxAttempts``.
    var maxAttempts: Int {
        switch self {
        case .none: 1
        case .retry(let count): count < Int.max ? max(0, count) + 1 : Int.max
        }
    }

    init(maxAttempts: Int) {
        self = maxAttempts <= 1 ? .none : .retry(count: maxAttempts - 1)
    }
}

// MARK: - 0.0.22–0.0.28: logging

/// The level of a MicroClient 0.0.22+ log message, and the least level a configuration's logger receives.
@available(*, deprecated, message: "MicroClient 0.0.28: use Courier's LogLevel with client.logged(level:to:)")
public enum NetworkLogLevel: Int, Sendable, Comparable, CustomStringConvertible {
    /// Everything; Courier's ``LogLevel/debug`` lines (headers and bounded bodies, redacted).
    case debug
    /// One line per request.
    case info
    /// Warnings; Courier writes none, so this receives the failures only.
    case warning
    /// Failures only.
    case error

    /// Orders the levels from ``debug`` to ``error``.
    public static func < (lhs: NetworkLogLevel, rhs: NetworkLogLevel) -> Bool { lhs.rawValue < rhs.rawValue }

    /// `Debug`, `Info`, `Warning` or `Error`.
    public var description: String {
        switch self {
        case .debug: "Debug"
        case .info: "Info"
        case .warning: "Warning"
        case .error: "Error"
        }
    }
}

/// Receives the log messages of a MicroClient 0.0.22+ configuration: here, the text of each ``LogEntry`` of
/// Courier's ``LoggingClient``, secrets redacted, at `.info` for a success and `.error` for a failure.
@available(*, deprecated, message: "MicroClient 0.0.28: use Courier's client.logged(level:to:) and its LogEntry")
public protocol NetworkLogger: Sendable {
    /// Writes `message`.
    func log(level: NetworkLogLevel, message: String)
}

/// Writes each message to standard output as `[Level] - message`. From MicroClient 0.0.22.
@available(*, deprecated, message: "MicroClient 0.0.28: use Courier's client.logged(level:to:) with print")
public struct StdoutLogger: NetworkLogger {
    /// Creates the logger.
    public init() {}

    /// Writes `[Level] - message` and a newline to standard output.
    public func log(level: NetworkLogLevel, message: String) {
        FileHandle.standardOutput.write(Data("[\(level.description)] - \(message)\n".utf8))
    }
}

// MARK: - 0.0.16–0.0.28: configuration initializers

extension NetworkConfiguration {
    /// A configuration on `session`: Courier's own for a `URLSession`, the test-double path otherwise.
    convenience init(
        anySession session: some URLSessionProtocol, defaultDecoder: JSONDecoder, defaultEncoder: JSONEncoder,
        baseURL: URL
    ) {
        if let session = session as? URLSession {
            self.init(
                session: session, defaultDecoder: defaultDecoder, defaultEncoder: defaultEncoder, baseURL: baseURL)
        } else {
            self.init(
                transport: URLSessionDoubleTransport(double: session), defaultDecoder: defaultDecoder,
                defaultEncoder: defaultEncoder, baseURL: baseURL)
        }
    }

    /// Creates a configuration on any ``URLSessionProtocol``, as MicroClient 0.0.16–0.0.28 did: a `URLSession` is used
    /// as ``init(session:defaultDecoder:defaultEncoder:baseURL:sensitiveHeaders:)`` uses it; any other value is a
    /// test double, which receives each finished request (see ``URLSessionProtocol``; ``session`` is then
    /// `URLSession.shared`, unused).
    /// - Parameters:
    ///   - session: A `URLSession`, or a test double.
    ///   - defaultDecoder: The response decoder.
    ///   - defaultEncoder: The body encoder.
    ///   - baseURL: The URL request paths are appended to.
    @available(
        *, deprecated,
        message:
            "MicroClient 0.0.16: pass a URLSession to init(session:…baseURL:); to answer requests in tests, give init(transport:…baseURL:) an InMemoryTransport"
    )
    public convenience init(
        session: some URLSessionProtocol, defaultDecoder: JSONDecoder, defaultEncoder: JSONEncoder, baseURL: URL
    ) {
        self.init(anySession: session, defaultDecoder: defaultDecoder, defaultEncoder: defaultEncoder, baseURL: baseURL)
    }

    /// Creates a configuration as MicroClient 0.0.22–0.0.28 did: on any ``URLSessionProtocol`` (a `URLSession`, or a
    /// test double), with a retry strategy, a logger and interceptors.
    ///
    /// - `retryStrategy` becomes a ``RetryingClient`` with `RetryPolicy(maxAttempts: count + 1)` around every request
    ///   of clients on this configuration: idempotent methods and transient failures only (see ``RetryStrategy``).
    /// - `logger` receives the redacted text of every attempt's ``LogEntry``; `logLevel` `.debug` selects Courier's
    ///   ``LogLevel/debug`` entries, `.warning` and `.error` keep the failures only.
    /// - `interceptors` is ``interceptors``: they run in order after ``interceptor`` and ``asyncInterceptor``.
    /// - `responseInterceptors` run in order on each successful response (see ``NetworkResponseInterceptor``).
    /// - A `URLSession` is used as ``init(session:defaultDecoder:defaultEncoder:baseURL:sensitiveHeaders:)`` uses it;
    ///   any other ``URLSessionProtocol`` is a test double (``session`` is then `URLSession.shared`, unused).
    /// - Parameters:
    ///   - session: A `URLSession`, or a test double.
    ///   - defaultDecoder: The response decoder.
    ///   - defaultEncoder: The body encoder.
    ///   - baseURL: The URL request paths are appended to.
    ///   - retryStrategy: `.none` by default.
    ///   - logger: `nil` (no logging) by default.
    ///   - logLevel: The least level `logger` receives; `.info` by default.
    ///   - interceptors: Empty by default.
    ///   - responseInterceptors: Empty by default.
    @available(
        *, deprecated,
        message:
            "MicroClient 0.0.28: use Courier's init(session:defaultDecoder:defaultEncoder:baseURL:), interceptors, and client.retrying(_:) and client.logged(level:to:)"
    )
    public convenience init(
        session: some URLSessionProtocol,
        defaultDecoder: JSONDecoder,
        defaultEncoder: JSONEncoder,
        baseURL: URL,
        retryStrategy: RetryStrategy = .none,
        logger: NetworkLogger? = nil,
        logLevel: NetworkLogLevel = .info,
        interceptors: [NetworkRequestInterceptor] = [],
        responseInterceptors: [NetworkResponseInterceptor] = []
    ) {
        self.init(anySession: session, defaultDecoder: defaultDecoder, defaultEncoder: defaultEncoder, baseURL: baseURL)
        var options = MicroClientOptions(responseInterceptors: responseInterceptors)
        if retryStrategy.maxAttempts > 1 { options.retryPolicy = RetryPolicy(maxAttempts: retryStrategy.maxAttempts) }
        if let logger {
            options.log = MicroClientOptions.Log(
                level: logLevel == .debug ? .debug : .info,
                sink: { entry in
                    let level: NetworkLogLevel = entry.error == nil ? .info : .error
                    if level >= logLevel { logger.log(level: level, message: entry.description) }
                }
            )
        }
        self.interceptors = interceptors
        if options.retryPolicy != nil || options.log != nil || !responseInterceptors.isEmpty { install(options) }
    }

    /// Creates a configuration with a synchronous interceptor, as MicroClient 0.0.18–0.0.20 did.
    /// - Parameters:
    ///   - session: A `URLSession`, or a test double (see ``URLSessionProtocol``).
    ///   - defaultDecoder: The response decoder.
    ///   - defaultEncoder: The body encoder.
    ///   - baseURL: The URL request paths are appended to.
    ///   - interceptor: Becomes ``interceptor``.
    ///   - asyncInterceptor: Becomes ``asyncInterceptor``; `nil` by default.
    @available(*, deprecated, message: "MicroClient 0.0.20: use Courier's init(session:…baseURL:) and set interceptor")
    public convenience init(
        session: some URLSessionProtocol,
        defaultDecoder: JSONDecoder,
        defaultEncoder: JSONEncoder,
        baseURL: URL,
        interceptor: @escaping @Sendable (URLRequest) -> URLRequest,
        asyncInterceptor: (@Sendable (URLRequest) async throws -> URLRequest)? = nil
    ) {
        self.init(anySession: session, defaultDecoder: defaultDecoder, defaultEncoder: defaultEncoder, baseURL: baseURL)
        self.interceptor = interceptor
        self.asyncInterceptor = asyncInterceptor
    }

    /// Creates a configuration with an async interceptor, as MicroClient 0.0.18–0.0.20 did.
    /// - Parameters:
    ///   - session: A `URLSession`, or a test double (see ``URLSessionProtocol``).
    ///   - defaultDecoder: The response decoder.
    ///   - defaultEncoder: The body encoder.
    ///   - baseURL: The URL request paths are appended to.
    ///   - asyncInterceptor: Becomes ``asyncInterceptor``.
    @available(
        *, deprecated, message: "MicroClient 0.0.20: use Courier's init(session:…baseURL:) and set asyncInterceptor"
    )
    public convenience init(
        session: some URLSessionProtocol,
        defaultDecoder: JSONDecoder,
        defaultEncoder: JSONEncoder,
        baseURL: URL,
        asyncInterceptor: @escaping @Sendable (URLRequest) async throws -> URLRequest
    ) {
        self.init(anySession: session, defaultDecoder: defaultDecoder, defaultEncoder: defaultEncoder, baseURL: baseURL)
        self.asyncInterceptor = asyncInterceptor
    }
}

// MARK: - 0.0.18–0.0.28: request initializers and properties

extension NetworkRequest {
    /// Creates a request with a retry strategy, as MicroClient 0.0.18–0.0.28 did (in its parameter order).
    ///
    /// `retryStrategy` replaces the configuration's for this request (`.none` turns retries off); it becomes a
    /// ``RetryPolicy`` for Courier's ``RetryingClient`` (see ``RetryStrategy``). `interceptors` replace
    /// ``NetworkConfiguration/interceptors`` for this request; `responseInterceptors` replace the configuration's.
    /// Such a request is never shared by ``DeduplicatingClient``.
    /// - Parameters:
    ///   - path: The path appended to the base URL; `nil` by default.
    ///   - method: The HTTP method.
    ///   - queryItems: The query items, in order; `nil` by default.
    ///   - formItems: The items of a form-encoded body; `nil` by default.
    ///   - body: The body to JSON-encode (or `Data` to send as is); `nil` by default.
    ///   - baseURL: A base URL for this request only; `nil` by default.
    ///   - decoder: A decoder for this request only; `nil` by default.
    ///   - encoder: An encoder for this request only; `nil` by default.
    ///   - retryStrategy: The retries of this request.
    ///   - additionalHeaders: Header fields to add; `nil` by default.
    ///   - interceptors: Interceptors for this request only; `nil` (the configuration's) by default.
    ///   - responseInterceptors: Response interceptors for this request only; `nil` (the configuration's) by default.
    @available(
        *, deprecated,
        message: "MicroClient 0.0.28: use Courier's init(path:method:…) and wrap the client with retrying(_:)"
    )
    public init(
        path: String? = nil,
        method: HTTPMethod,
        queryItems: [URLQueryItem]? = nil,
        formItems: [URLFormItem]? = nil,
        body: RequestModel? = nil,
        baseURL: URL? = nil,
        decoder: JSONDecoder? = nil,
        encoder: JSONEncoder? = nil,
        retryStrategy: RetryStrategy?,
        additionalHeaders: [String: String]? = nil,
        interceptors: [NetworkRequestInterceptor]? = nil,
        responseInterceptors: [NetworkResponseInterceptor]? = nil
    ) {
        self.init(
            path: path, method: method, queryItems: queryItems, formItems: formItems, body: body, baseURL: baseURL,
            decoder: decoder, encoder: encoder, additionalHeaders: additionalHeaders)
        adopt(
            interceptors: interceptors, maxAttempts: retryStrategy?.maxAttempts,
            responseInterceptors: responseInterceptors)
    }

    /// Creates a request with interceptors of its own, which replace ``NetworkConfiguration/interceptors`` for it.
    /// From MicroClient 0.0.22. Such a request is never shared by ``DeduplicatingClient``.
    /// - Parameters:
    ///   - path: The path appended to the base URL; `nil` by default.
    ///   - method: The HTTP method.
    ///   - queryItems: The query items, in order; `nil` by default.
    ///   - formItems: The items of a form-encoded body; `nil` by default.
    ///   - body: The body to JSON-encode (or `Data` to send as is); `nil` by default.
    ///   - baseURL: A base URL for this request only; `nil` by default.
    ///   - decoder: A decoder for this request only; `nil` by default.
    ///   - encoder: An encoder for this request only; `nil` by default.
    ///   - additionalHeaders: Header fields to add; `nil` by default.
    ///   - interceptors: Interceptors for this request, run in order; `nil` runs the configuration's.
    ///   - responseInterceptors: Response interceptors for this request only; `nil` (the configuration's) by default.
    @available(
        *, deprecated,
        message: "MicroClient 0.0.22: use init(path:method:…additionalHeaders:…) and the configuration's interceptors"
    )
    public init(
        path: String? = nil,
        method: HTTPMethod,
        queryItems: [URLQueryItem]? = nil,
        formItems: [URLFormItem]? = nil,
        body: RequestModel? = nil,
        baseURL: URL? = nil,
        decoder: JSONDecoder? = nil,
        encoder: JSONEncoder? = nil,
        additionalHeaders: [String: String]? = nil,
        interceptors: [NetworkRequestInterceptor]?,
        responseInterceptors: [NetworkResponseInterceptor]? = nil
    ) {
        self.init(
            path: path, method: method, queryItems: queryItems, formItems: formItems, body: body, baseURL: baseURL,
            decoder: decoder, encoder: encoder, additionalHeaders: additionalHeaders)
        adopt(interceptors: interceptors, maxAttempts: nil, responseInterceptors: responseInterceptors)
    }

    /// Creates a request with response interceptors of its own, which replace the configuration's for it.
    /// From MicroClient 0.0.25. Such a request is never shared by ``DeduplicatingClient``.
    /// - Parameters:
    ///   - path: The path appended to the base URL; `nil` by default.
    ///   - method: The HTTP method.
    ///   - queryItems: The query items, in order; `nil` by default.
    ///   - formItems: The items of a form-encoded body; `nil` by default.
    ///   - body: The body to JSON-encode (or `Data` to send as is); `nil` by default.
    ///   - baseURL: A base URL for this request only; `nil` by default.
    ///   - decoder: A decoder for this request only; `nil` by default.
    ///   - encoder: An encoder for this request only; `nil` by default.
    ///   - additionalHeaders: Header fields to add; `nil` by default.
    ///   - responseInterceptors: Response interceptors for this request, run in order.
    @available(
        *, deprecated,
        message:
            "MicroClient 0.0.25: use init(path:method:…) and check the response where you run it, or in a decorator"
    )
    public init(
        path: String? = nil,
        method: HTTPMethod,
        queryItems: [URLQueryItem]? = nil,
        formItems: [URLFormItem]? = nil,
        body: RequestModel? = nil,
        baseURL: URL? = nil,
        decoder: JSONDecoder? = nil,
        encoder: JSONEncoder? = nil,
        additionalHeaders: [String: String]? = nil,
        responseInterceptors: [NetworkResponseInterceptor]?
    ) {
        self.init(
            path: path, method: method, queryItems: queryItems, formItems: formItems, body: body, baseURL: baseURL,
            decoder: decoder, encoder: encoder, additionalHeaders: additionalHeaders)
        adopt(interceptors: nil, maxAttempts: nil, responseInterceptors: responseInterceptors)
    }

    /// The request's own retry strategy, `nil` when it uses the configuration's. From MicroClient 0.0.18.
    @available(*, deprecated, message: "MicroClient 0.0.28: Courier's retries are client.retrying(_:)")
    public var retryStrategy: RetryStrategy? {
        (adaptation as? MicroClientRequestOptions)?.maxAttempts.map(RetryStrategy.init(maxAttempts:))
    }

    /// The request's own response interceptors, `nil` when it runs the configuration's. From MicroClient 0.0.25.
    public var responseInterceptors: [any NetworkResponseInterceptor]? {
        (adaptation as? MicroClientRequestOptions)?.responseInterceptors
    }
}
