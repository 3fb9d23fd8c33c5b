import Courier
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Written as a MicroClient 0.0.22–0.0.28 SDK, in Swift 6 mode: a configuration with a retry strategy, a logger and
// ready interceptors on any URLSessionProtocol (tests pass a double), requests with their own interceptors and retry
// strategy, and the newer line's reading of `unacceptableStatusCode`.

public struct Bookmark: Decodable, Sendable, Equatable {
    public let href: String
    public let tags: String
}

public struct NewBookmark: Encodable, Sendable {
    public let href: String
    public let tags: String

    public init(href: String, tags: String) {
        self.href = href
        self.tags = tags
    }
}

public struct APIErrorPayload: Decodable, Sendable, Equatable {
    public let message: String
}

public enum BookmarksAPIFactory {
    public static func makeConfiguration(
        session: URLSessionProtocol,
        tokenProvider: @escaping @Sendable () async -> String?,
        logger: NetworkLogger? = nil
    ) -> NetworkConfiguration {
        NetworkConfiguration(
            session: session,
            defaultDecoder: JSONDecoder(),
            defaultEncoder: JSONEncoder(),
            baseURL: URL(string: "https://api.bookmarks.example/v1")!,
            retryStrategy: .retry(count: 2),
            logger: logger,
            logLevel: .info,
            interceptors: [
                BearerAuthorizationInterceptor(tokenProvider: tokenProvider),
                UserAgentInterceptor(appName: "Bookmarks", version: "1.0"),
                RequestIDInterceptor(),
                CacheControlInterceptor(policy: .noCache),
            ]
        )
    }

    /// As a MicroClient 0.0.18–0.0.20 SDK wrote it: the interceptors as initializer arguments.
    public static func makeKeyedConfiguration(session: URLSessionProtocol, apiKey: String) -> NetworkConfiguration {
        NetworkConfiguration(
            session: session,
            defaultDecoder: JSONDecoder(),
            defaultEncoder: JSONEncoder(),
            baseURL: URL(string: "https://api.bookmarks.example/v1")!,
            interceptor: { request in
                var newRequest = request
                newRequest.setValue(apiKey, forHTTPHeaderField: "X-Key")
                return newRequest
            },
            asyncInterceptor: { request in
                var newRequest = request
                newRequest.setValue("async", forHTTPHeaderField: "X-Async")
                return newRequest
            }
        )
    }

    public static func makeClient(configuration: NetworkConfiguration) -> NetworkClientProtocol {
        NetworkClient(configuration: configuration)
    }
}

public enum BookmarksRequestFactory {
    public static func makeRecentRequest(count: Int) -> NetworkRequest<VoidRequest, [Bookmark]> {
        NetworkRequest(
            path: "/posts/recent",
            method: .get,
            queryItems: [URLQueryItem(name: "count", value: String(count))]
        )
    }

    public static func makeAddRequest(_ bookmark: NewBookmark) -> NetworkRequest<NewBookmark, VoidResponse> {
        NetworkRequest(
            path: "/posts/add",
            method: .post,
            body: bookmark,
            retryStrategy: .retry(count: 3),
            additionalHeaders: ["X-Client": "new-line"]
        )
    }

    public static func makePublicFeedRequest() -> NetworkRequest<VoidRequest, [Bookmark]> {
        NetworkRequest(
            path: "/feeds/public",
            method: .get,
            queryItems: [],
            baseURL: URL(string: "https://feeds.bookmarks.example"),
            retryStrategy: NetworkRequest<VoidRequest, [Bookmark]>.noRetry,
            interceptors: [
                APIKeyInterceptor(apiKey: "public-key"), AcceptHeaderInterceptor(acceptType: "application/json"),
            ]
        )
    }
}

extension NetworkRequest {
    static var noRetry: RetryStrategy { .none }
}

/// The newer line's reading of an error status: `data` is optional there.
public func serverMessage(of error: Error) -> String? {
    guard case NetworkClientError.unacceptableStatusCode(_, _, let data) = error else { return nil }
    guard let data else { return nil }
    return try? JSONDecoder().decode(APIErrorPayload.self, from: data).message
}

/// A logger of the SDK's own, as newer-line SDKs write them.
public final class MemoryLogger: NetworkLogger, @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [(NetworkLogLevel, String)] = []

    public init() {}

    public func log(level: NetworkLogLevel, message: String) {
        lock.lock()
        entries.append((level, message))
        lock.unlock()
    }

    public var messages: [(level: NetworkLogLevel, message: String)] {
        lock.lock()
        defer { lock.unlock() }
        return entries.map { (level: $0.0, message: $0.1) }
    }
}
