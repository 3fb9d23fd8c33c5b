import Courier
import Foundation

// Seed-era code: public models that are not Sendable, a mutable token store captured by the interceptor, a factory
// of requests and a client factory returning the protocol. Written against MicroClient; only the import differs.

public struct PostsResponse: Decodable {
    public let items: [Post]
}

public struct Post: Decodable {
    public let id: String
    public let contentText: String
}

public struct NewPost: Encodable {
    public let content: String
}

public final class TokenStore {
    public var token: String
    public init(token: String) { self.token = token }
}

public enum PostsAPIFactory {
    public static func makeBookmarksRequest() -> NetworkRequest<VoidRequest, PostsResponse> {
        NetworkRequest<VoidRequest, PostsResponse>(
            path: "/posts/bookmarks",
            method: .get
        )
    }

    public static func makeSearchRequest(query: String) -> NetworkRequest<VoidRequest, PostsResponse> {
        NetworkRequest<VoidRequest, PostsResponse>(
            path: "/posts/search",
            method: .get,
            queryItems: [URLQueryItem(name: "q", value: query)]
        )
    }

    public static func makePublishRequest(content: String) -> NetworkRequest<NewPost, VoidResponse> {
        NetworkRequest<NewPost, VoidResponse>(
            path: "/posts",
            method: .post,
            body: NewPost(content: content),
            additionalHeaders: ["X-Client": "seed"]
        )
    }

    public static func makeMicropubRequest(content: String) -> NetworkRequest<VoidRequest, VoidResponse> {
        NetworkRequest<VoidRequest, VoidResponse>(
            path: "/micropub",
            method: .post,
            formItems: [URLFormItem(name: "h", value: "entry"), URLFormItem(name: "content", value: content)]
        )
    }
}

public enum MicroblogAPIFactory {
    public static func makeClient(store: TokenStore) -> NetworkClientProtocol {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let configuration = NetworkConfiguration(
            session: URLSession.shared,
            defaultDecoder: decoder,
            defaultEncoder: JSONEncoder(),
            baseURL: URL(string: "https://micro.blog")!
        )
        configuration.interceptor = { request in
            var newRequest = request
            newRequest.addValue("Bearer \(store.token)", forHTTPHeaderField: "Authorization")
            return newRequest
        }
        return NetworkClient(configuration: configuration)
    }
}

public final class BookmarksViewModel {
    private let client: NetworkClientProtocol
    public private(set) var posts: [Post] = []

    public init(client: NetworkClientProtocol) {
        self.client = client
    }

    public func load() async throws {
        let response: NetworkResponse<PostsResponse> = try await client.run(PostsAPIFactory.makeBookmarksRequest())
        let urlResponse: URLResponse = response.response
        _ = urlResponse
        posts = response.value.items
    }
}
