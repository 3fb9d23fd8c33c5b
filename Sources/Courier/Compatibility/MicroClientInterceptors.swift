import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MicroClient's ways of changing every request that Courier's one way (NetworkConfiguration.interceptors, a list of
// NetworkRequestInterceptor values, in Core) covers: the `interceptor` closure of every release, 0.0.18's
// `asyncInterceptor`, and 0.0.22–0.0.28's ready request interceptors, values that set one header or the timeout.
// The closures are deprecated and run first, in that order, then `interceptors`; the credential interceptors are
// deprecated for authenticated(by:alsoFor:), which keeps a credential at its origin and renews it.

extension NetworkConfiguration {
    /// Called with each `URLRequest` right before it is sent, to modify it: MicroClient's interceptor, from its first
    /// release. `nil` by default. It runs before ``asyncInterceptor`` and ``interceptors``; setting it affects the next
    /// request, including on clients already created.
    @available(
        *, deprecated,
        message: "MicroClient's closure: add a NetworkRequestInterceptor to configuration.interceptors instead"
    )
    public var interceptor: (@Sendable (URLRequest) -> URLRequest)? {
        get { currentSettings.interceptor }
        set { updateSettings { $0.interceptor = newValue } }
    }

    /// Called with each `URLRequest` after ``interceptor`` and before ``interceptors``, and may suspend or throw: the
    /// asynchronous interceptor of MicroClient 0.0.18 and of Courier 0.1. `nil` by default. If it throws, the request
    /// fails with ``NetworkClientError/interceptorFailed(underlying:)`` and nothing is sent. Setting it affects the
    /// next request, including on clients already created.
    @available(
        *, deprecated,
        message:
            "Add a NetworkRequestInterceptor (it may suspend and throw too) to configuration.interceptors; for a credential, use client.authenticated(by:)"
    )
    public var asyncInterceptor: (@Sendable (URLRequest) async throws -> URLRequest)? {
        get { currentSettings.asyncInterceptor }
        set { updateSettings { $0.asyncInterceptor = newValue } }
    }
}

/// Sets `Authorization: Bearer <token>` with a token asked for on every request; leaves the request unchanged when
/// the provider returns `nil`. From MicroClient 0.0.22. For a token that must be refreshed on a 401, prefer
/// ``NetworkClientProtocol/authenticated(by:alsoFor:maximumRefreshes:refreshWindow:)``.
@available(
    *, deprecated,
    message:
        "MicroClient 0.0.22: send the token with client.authenticated(by: BearerTokenAuthenticator(token:refresh:)), which keeps it at its origin and renews it on a 401"
)
public struct BearerAuthorizationInterceptor: NetworkRequestInterceptor {
    private let tokenProvider: @Sendable () async -> String?

    /// Creates the interceptor.
    /// - Parameter tokenProvider: Returns the current access token, or `nil` to send the request without one.
    public init(tokenProvider: @escaping @Sendable () async -> String?) {
        self.tokenProvider = tokenProvider
    }

    /// Adds the `Authorization` header when the provider has a token.
    public func intercept(_ request: URLRequest) async throws -> URLRequest {
        guard let token = await tokenProvider() else { return request }
        var request = request
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        return request
    }
}

/// Sets `Authorization: Basic <base64(username:password)>`. From MicroClient 0.0.25.
@available(
    *, deprecated,
    message:
        "MicroClient 0.0.25: send credentials with client.authenticated(by:) and an Authenticator, which keeps them at their origin"
)
public struct BasicAuthInterceptor: NetworkRequestInterceptor {
    private let credentialsProvider: @Sendable () async -> (username: String, password: String)?

    /// Creates the interceptor with credentials asked for on every request.
    /// - Parameter credentialsProvider: Returns the credentials, or `nil` to leave the request unchanged.
    public init(credentialsProvider: @escaping @Sendable () async -> (username: String, password: String)?) {
        self.credentialsProvider = credentialsProvider
    }

    /// Creates the interceptor with fixed credentials.
    /// - Parameters:
    ///   - username: The user name; it must not contain `:`.
    ///   - password: The password.
    public init(username: String, password: String) {
        self.credentialsProvider = { (username, password) }
    }

    /// Adds the `Authorization` header when there are credentials.
    public func intercept(_ request: URLRequest) async throws -> URLRequest {
        guard let credentials = await credentialsProvider() else { return request }
        let encoded = Data("\(credentials.username):\(credentials.password)".utf8).base64EncodedString()
        var request = request
        request.setValue("Basic \(encoded)", forHTTPHeaderField: "Authorization")
        return request
    }
}

/// Sends an API key in a header (`X-API-Key` by default). From MicroClient 0.0.25. Add the header's name to
/// ``NetworkConfiguration/sensitiveHeaders`` so that it is redacted and kept off cross-origin redirects.
@available(
    *, deprecated,
    message:
        "MicroClient 0.0.25: send the key with client.authenticated(by:) and an Authenticator, which keeps it at its origin"
)
public struct APIKeyInterceptor: NetworkRequestInterceptor {
    /// The key.
    public let apiKey: String
    /// The header that carries it.
    public let headerName: String

    /// Creates the interceptor.
    /// - Parameters:
    ///   - apiKey: The key.
    ///   - headerName: The header that carries it; `X-API-Key` by default.
    public init(apiKey: String, headerName: String = "X-API-Key") {
        self.apiKey = apiKey
        self.headerName = headerName
    }

    /// Sets the header.
    public func intercept(_ request: URLRequest) async throws -> URLRequest {
        var request = request
        request.setValue(apiKey, forHTTPHeaderField: headerName)
        return request
    }
}

/// Sets a header to a fixed value; the shared body of the header interceptors below.
private func setting(_ value: String, for name: String, on request: URLRequest) -> URLRequest {
    var request = request
    request.setValue(value, forHTTPHeaderField: name)
    return request
}

/// Sets `Content-Type` (`application/json` by default), replacing the one Courier chose for the body.
/// From MicroClient 0.0.25.
public struct ContentTypeInterceptor: NetworkRequestInterceptor {
    /// The media type.
    public let contentType: String

    /// Creates the interceptor.
    /// - Parameter contentType: The media type; `application/json` by default.
    public init(contentType: String = "application/json") {
        self.contentType = contentType
    }

    /// Sets the header.
    public func intercept(_ request: URLRequest) async throws -> URLRequest {
        setting(contentType, for: "Content-Type", on: request)
    }
}

/// Sets `Accept` (`application/json` by default, which Courier already sends). From MicroClient 0.0.25.
public struct AcceptHeaderInterceptor: NetworkRequestInterceptor {
    /// The media type.
    public let acceptType: String

    /// Creates the interceptor.
    /// - Parameter acceptType: The media type; `application/json` by default.
    public init(acceptType: String = "application/json") {
        self.acceptType = acceptType
    }

    /// Sets the header.
    public func intercept(_ request: URLRequest) async throws -> URLRequest {
        setting(acceptType, for: "Accept", on: request)
    }
}

/// Sets `User-Agent`. From MicroClient 0.0.25.
public struct UserAgentInterceptor: NetworkRequestInterceptor {
    /// The header value.
    public let userAgent: String

    /// Creates the interceptor with `<appName>/<version>`.
    /// - Parameters:
    ///   - appName: The product name.
    ///   - version: The product version.
    public init(appName: String, version: String) {
        self.userAgent = "\(appName)/\(version)"
    }

    /// Creates the interceptor with a header value of your own.
    /// - Parameter customUserAgent: The header value.
    public init(customUserAgent: String) {
        self.userAgent = customUserAgent
    }

    /// Sets the header.
    public func intercept(_ request: URLRequest) async throws -> URLRequest {
        setting(userAgent, for: "User-Agent", on: request)
    }
}

/// Sets the request's idle timeout (`URLRequest.timeoutInterval`). From MicroClient 0.0.25. Courier's own is
/// ``NetworkRequest/timeoutInterval``, per request; a value that is not positive and finite is ignored.
public struct TimeoutInterceptor: NetworkRequestInterceptor {
    /// The timeout, in seconds.
    public let timeout: TimeInterval

    /// Creates the interceptor.
    /// - Parameter timeout: The idle timeout, in seconds.
    public init(timeout: TimeInterval) {
        self.timeout = timeout
    }

    /// Sets the timeout.
    public func intercept(_ request: URLRequest) async throws -> URLRequest {
        guard timeout.isFinite, timeout > 0 else { return request }
        var request = request
        request.timeoutInterval = min(timeout, NetworkConfiguration.maximumTimeout)
        return request
    }
}

/// Sets a fresh UUID in `X-Request-ID` (or another header) when the request has none. From MicroClient 0.0.25.
public struct RequestIDInterceptor: NetworkRequestInterceptor {
    /// The header that carries the identifier.
    public let headerName: String

    /// Creates the interceptor.
    /// - Parameter headerName: The header; `X-Request-ID` by default.
    public init(headerName: String = "X-Request-ID") {
        self.headerName = headerName
    }

    /// Sets the header, unless the request already has it.
    public func intercept(_ request: URLRequest) async throws -> URLRequest {
        guard request.value(forHTTPHeaderField: headerName) == nil else { return request }
        return setting(UUID().uuidString, for: headerName, on: request)
    }
}

/// Sets `Cache-Control`. From MicroClient 0.0.25.
public struct CacheControlInterceptor: NetworkRequestInterceptor {
    /// A `Cache-Control` directive.
    public enum CachePolicy: Sendable, Hashable {
        /// `no-cache`.
        case noCache
        /// `max-age=<seconds>`.
        case maxAge(seconds: Int)
        /// `no-store`.
        case noStore
        /// The given text.
        case custom(String)

        /// The header value.
        public var headerValue: String {
            switch self {
            case .noCache: "no-cache"
            case .maxAge(let seconds): "max-age=\(seconds)"
            case .noStore: "no-store"
            case .custom(let value): value
            }
        }
    }

    /// The directive.
    public let policy: CachePolicy

    /// Creates the interceptor.
    /// - Parameter policy: The directive.
    public init(policy: CachePolicy) {
        self.policy = policy
    }

    /// Sets the header.
    public func intercept(_ request: URLRequest) async throws -> URLRequest {
        setting(policy.headerValue, for: "Cache-Control", on: request)
    }
}
