import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Courier 0.1's second ways of doing a task that has one way now. Each still works as it did, deprecated, and its
// message names the one way (the landing page lists them all).

// MARK: - Reading an error body: `error.errorBody(_:decoder:)`

extension NetworkClientError {
    /// The body of an ``unacceptableStatusCode(statusCode:response:data:)`` error decoded as JSON into `type`.
    ///
    /// - Parameters:
    ///   - type: The server's error model.
    ///   - decoder: The decoder to use; a plain `JSONDecoder()` by default.
    /// - Returns: The decoded error model.
    /// - Throws: ``decodingFailed(underlying:data:)`` with the body when it does not decode (its description names
    ///   the failing field); this error itself, unchanged, when it is not
    ///   ``unacceptableStatusCode(statusCode:response:data:)``.
    @available(
        *, deprecated, message: "Use error.errorBody(_:decoder:), which returns nil when the body does not decode"
    )
    public func decodeErrorBody<ErrorModel: Decodable>(
        _ type: ErrorModel.Type, decoder: JSONDecoder = JSONDecoder()
    ) throws(NetworkClientError) -> ErrorModel {
        try decodedErrorBody(type, decoder: decoder)
    }
}

extension NetworkRequest {
    /// The server's error payload in `error`, decoded with this request's decoder, else `configuration`'s: `nil`
    /// when `error` is not ``NetworkClientError/unacceptableStatusCode(statusCode:response:data:)`` or its body
    /// does not decode into `type`.
    /// - Parameters:
    ///   - type: The server's error model.
    ///   - error: The error the client threw.
    ///   - configuration: The configuration whose ``NetworkConfiguration/defaultDecoder`` to use when the request has
    ///     no decoder; `nil` (the default) uses a plain `JSONDecoder()`.
    /// - Returns: The decoded error model, or `nil`.
    @available(
        *, deprecated,
        message:
            "Use (error as? NetworkClientError)?.errorBody(type, decoder: request.decoder ?? configuration.defaultDecoder)"
    )
    public func errorBody<ErrorModel: Decodable>(
        _ type: ErrorModel.Type, from error: any Error, configuration: NetworkConfiguration? = nil
    ) -> ErrorModel? {
        guard let error = error as? NetworkClientError else { return nil }
        return error.errorBody(type, decoder: decoder ?? configuration?.defaultDecoder ?? JSONDecoder())
    }
}

// MARK: - Decorators: their fluent forms

/// A decorator that hands a ``LogEntry`` to a sink after every request, secrets redacted: Courier 0.1's type behind
/// ``NetworkClientProtocol/logged(level:redacting:maximumBodyLength:to:)``, which now does the same with every
/// parameter and returns `some NetworkClientProtocol`.
@available(*, deprecated, message: "Use client.logged(level:redacting:maximumBodyLength:to:)")
public final class LoggingClient: NetworkClientProtocol {
    /// The client that runs the requests.
    public let wrapped: any NetworkClientProtocol
    /// How much is written.
    public let level: LogLevel
    /// What is redacted besides what always is.
    public let redaction: LogRedaction
    /// The most bytes of a body shown at ``LogLevel/debug``.
    public let maximumBodyLength: Int
    /// Called with the entry of every request, on the caller's task, after the request ended.
    public let sink: @Sendable (LogEntry) -> Void
    private let decorator: LoggingDecorator

    /// Creates a logging client: `client.logged(level:redacting:maximumBodyLength:to:)`.
    /// - Parameters:
    ///   - client: The client that runs the requests.
    ///   - level: How much to write; ``LogLevel/info`` by default.
    ///   - redaction: What to redact besides what always is; `LogRedaction()` by default.
    ///   - maximumBodyLength: The most bytes of a body shown at ``LogLevel/debug``; 1,024 by default.
    ///   - sink: Called with each entry.
    public init(
        wrapping client: any NetworkClientProtocol, level: LogLevel = .info, redaction: LogRedaction = LogRedaction(),
        maximumBodyLength: Int = 1_024, sink: @escaping @Sendable (LogEntry) -> Void
    ) {
        decorator = LoggingDecorator(
            wrapping: client, level: level, redaction: redaction, maximumBodyLength: maximumBodyLength, sink: sink)
        wrapped = client
        self.level = level
        self.redaction = redaction
        self.maximumBodyLength = decorator.maximumBodyLength
        self.sink = sink
    }

    /// Runs `networkRequest` through the wrapped client and logs its outcome.
    /// - Throws: What the wrapped client throws, unchanged.
    public func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        try await decorator.run(networkRequest)
    }
}

/// A decorator that sends a failed request again after a backoff: Courier 0.1's type behind
/// ``NetworkClientProtocol/retrying(_:)``, which now returns `some NetworkClientProtocol`.
@available(*, deprecated, message: "Use client.retrying(_:)")
public final class RetryingClient: NetworkClientProtocol {
    /// The client that runs each attempt.
    public let wrapped: any NetworkClientProtocol
    /// What is retried, how often and how long the client waits.
    public let policy: RetryPolicy
    private let decorator: RetryingDecorator

    /// Creates a retrying client: `client.retrying(policy)`.
    /// - Parameters:
    ///   - client: The client that runs each attempt.
    ///   - policy: What to retry and how long to wait; `RetryPolicy()` by default.
    public init(wrapping client: any NetworkClientProtocol, policy: RetryPolicy = RetryPolicy()) {
        decorator = RetryingDecorator(wrapping: client, policy: policy)
        wrapped = client
        self.policy = policy
    }

    /// Runs `networkRequest`, and again after a wait while the policy says its failure is worth retrying.
    /// - Throws: The last error the wrapped client threw, unchanged, or `CancellationError`.
    public func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        try await decorator.run(networkRequest)
    }
}

/// A decorator that puts an ``Authenticator``'s credential on each request and renews it once on a 401: Courier
/// 0.1's type behind ``NetworkClientProtocol/authenticated(by:alsoFor:maximumRefreshes:refreshWindow:)``, which now
/// takes every parameter and returns `some NetworkClientProtocol`.
@available(*, deprecated, message: "Use client.authenticated(by:alsoFor:maximumRefreshes:refreshWindow:)")
public final class AuthenticatingClient<Authenticator: Courier.Authenticator>: NetworkClientProtocol {
    /// The client that runs the requests.
    public let wrapped: any NetworkClientProtocol
    /// Supplies, applies and renews the credential.
    public let authenticator: Authenticator
    /// Origins (`scheme://host:port`) that receive the credential besides the configured base URL's.
    public let additionalOrigins: Set<String>
    /// The most renewals allowed within ``refreshWindow``.
    public let maximumRefreshes: Int
    /// The window, in seconds, over which ``maximumRefreshes`` is counted.
    public let refreshWindow: TimeInterval
    private let decorator: AuthenticatingDecorator<Authenticator>

    /// Creates an authenticating client: `client.authenticated(by:alsoFor:maximumRefreshes:refreshWindow:)`.
    /// - Parameters:
    ///   - client: The client that runs the requests.
    ///   - authenticator: Supplies, applies and renews the credential.
    ///   - additionalOrigins: Other base URLs whose origin may receive the credential; empty by default.
    ///   - maximumRefreshes: The most renewals within `refreshWindow`; `3` by default.
    ///   - refreshWindow: The window in seconds; `60` by default.
    public init(
        wrapping client: any NetworkClientProtocol, authenticator: Authenticator, additionalOrigins: [URL] = [],
        maximumRefreshes: Int = 3, refreshWindow: TimeInterval = 60
    ) {
        decorator = AuthenticatingDecorator(
            wrapping: client, authenticator: authenticator, additionalOrigins: additionalOrigins,
            maximumRefreshes: maximumRefreshes, refreshWindow: refreshWindow)
        wrapped = client
        self.authenticator = authenticator
        self.additionalOrigins = decorator.additionalOrigins
        self.maximumRefreshes = decorator.maximumRefreshes
        self.refreshWindow = decorator.refreshWindow
    }

    /// Runs `networkRequest` with the credential, and once more with a renewed one if the server rejects it.
    /// - Throws: What the wrapped client and the authenticator throw, unchanged; ``AuthenticationError``;
    ///   `CancellationError`.
    public func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        try await decorator.run(networkRequest)
    }
}

extension DeduplicatingClient {
    /// Creates a deduplicating client: `client.deduplicated(sharing:)`.
    /// - Parameters:
    ///   - client: The client that runs the shared calls.
    ///   - sharedMethods: The methods whose requests may be shared; `[.get, .head]` by default.
    @available(*, deprecated, message: "Use client.deduplicated(sharing:)")
    public convenience init(
        wrapping client: any NetworkClientProtocol, sharing sharedMethods: Set<HTTPMethod> = [.get, .head]
    ) {
        self.init(client, sharing: sharedMethods)
    }
}

extension SequentialClient {
    /// Creates a sequential client: `client.sequential(policy:)`.
    /// - Parameters:
    ///   - client: The client that runs the requests.
    ///   - policy: Which requests may overlap; ``Policy/strict`` (none) by default.
    @available(*, deprecated, message: "Use client.sequential(policy:)")
    public convenience init(wrapping client: any NetworkClientProtocol, policy: Policy = .strict) {
        self.init(client, policy: policy)
    }
}

// MARK: - StubNetworkClient: one label, `statusCode:`

extension StubNetworkClient {
    /// Answers requests with `method` and `path` with a response of `status` and `body`; see
    /// ``stub(_:_:statusCode:body:headers:)``.
    /// - Parameters:
    ///   - method: The method to match.
    ///   - path: The path to match; a leading `/` does not matter.
    ///   - status: The response status.
    ///   - body: The body as UTF-8 text, usually JSON; empty by default.
    ///   - headers: The response header fields; none by default.
    @available(*, deprecated, renamed: "stub(_:_:statusCode:body:headers:)")
    public func stub(
        _ method: HTTPMethod, _ path: String, status: Int, body: String = "", headers: [String: String] = [:]
    ) {
        stub(method, path, statusCode: status, body: body, headers: headers)
    }

    /// Answers requests with `method` and `path` with a response of `status` and the raw `data` as its body; see
    /// ``stub(_:_:statusCode:data:headers:)``.
    /// - Parameters:
    ///   - method: The method to match.
    ///   - path: The path to match; a leading `/` does not matter.
    ///   - status: The response status.
    ///   - data: The body bytes.
    ///   - headers: The response header fields; none by default.
    @available(*, deprecated, renamed: "stub(_:_:statusCode:data:headers:)")
    public func stub(
        _ method: HTTPMethod, _ path: String, status: Int, data: Data, headers: [String: String] = [:]
    ) {
        stub(method, path, statusCode: status, data: data, headers: headers)
    }
}

// MARK: - Outbox: the rewrite hook's type written out

extension Outbox {
    /// Courier 0.1's name for the type of the `rewrite` hook of
    /// ``Outbox/init(directory:client:rules:retryPolicy:limits:secrets:paused:rewrite:)``, which now spells the
    /// closure's type out: `@Sendable (OutboxRequest) async throws -> OutboxRequest`.
    @available(*, deprecated, message: "Write the hook's type: @Sendable (OutboxRequest) async throws -> OutboxRequest")
    public typealias Rewrite = @Sendable (OutboxRequest) async throws -> OutboxRequest
}
