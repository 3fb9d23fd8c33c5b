import Courier
import Foundation

// Written as a MicroClient 0.0.13–0.0.15 SDK (MicroPinboardAPI's era): requests with query items, a base URL, a
// client factory; its tests read `queryItems` as the non-optional array of 0.0.15 and replace the client with a
// double that implements 0.0.13's `init(configuration:)` requirement.

public struct Bookmark: Decodable {
    public let href: String
    public let description: String
}

public struct PostsResponse: Decodable {
    public let posts: [Bookmark]
}

public enum PostsAPIFactory {
    public static func makeAllRequest(tag: String?, start: Int, results: Int?) -> NetworkRequest<
        VoidRequest, PostsResponse
    > {
        var queryItems = [
            URLQueryItem(name: "format", value: "json"), URLQueryItem(name: "start", value: String(start)),
        ]
        if let tag { queryItems.append(URLQueryItem(name: "tag", value: tag)) }
        queryItems.append(URLQueryItem(name: "results", value: results.map { String($0) }))
        return NetworkRequest(path: "/posts/all", method: .get, queryItems: queryItems)
    }

    public static func makeUpdateRequest() -> NetworkRequest<VoidRequest, VoidResponse> {
        NetworkRequest(
            path: "/posts/update", method: .get, queryItems: [], baseURL: URL(string: "https://api.pinboard.in/v2"))
    }
}

public enum PinboardAPIFactory {
    public static func makeClient(token: String) -> NetworkClientProtocol {
        let configuration = NetworkConfiguration(
            session: URLSession.shared,
            defaultDecoder: JSONDecoder(),
            defaultEncoder: JSONEncoder(),
            baseURL: URL(string: "https://api.pinboard.in/v1")!
        )
        configuration.interceptor = { request in
            guard let url = request.url, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
                return request
            }
            components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "auth_token", value: token)]
            var newRequest = request
            newRequest.url = components.url
            return newRequest
        }
        return NetworkClient(configuration: configuration)
    }
}

public final class BookmarksStore {
    private let client: NetworkClientProtocol
    public private(set) var bookmarks: [Bookmark] = []

    public init(client: NetworkClientProtocol) {
        self.client = client
    }

    public func load(tag: String?) async throws {
        let response = try await client.run(PostsAPIFactory.makeAllRequest(tag: tag, start: 0, results: nil))
        bookmarks = response.value.posts
    }
}
