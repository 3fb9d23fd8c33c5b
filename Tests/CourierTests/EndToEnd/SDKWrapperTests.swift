import Courier
import Foundation
import LoopbackHTTPServer
import Testing

// A per-API SDK written the way MicroClient-based SDKs (MicroblogAPI and friends) are written: a factory of
// `NetworkRequest` values, a client factory, and models; the client factory sends the bearer token the one way
// Courier has, `authenticated(by:)`, which keeps it at the API's origin.

/// A page of posts.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
public struct PostsResponse: Decodable, Sendable {
    /// The posts, newest first.
    public let items: [PostItem]
}

/// One post.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
public struct PostItem: Decodable, Sendable, Equatable {
    /// The post identifier.
    public let id: Int
    /// The post text.
    public let contentText: String

    enum CodingKeys: String, CodingKey {
        case id
        case contentText = "content_text"
    }
}

/// The requests of the posts API.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
public enum PostsAPIFactory {
    /// The user's bookmarked posts.
    public static func makeBookmarksRequest() -> NetworkRequest<VoidRequest, PostsResponse> {
        NetworkRequest<VoidRequest, PostsResponse>(path: "/posts/bookmarks", method: .get)
    }

    /// The timeline: `count` posts, older than `before` if given.
    public static func makeTimelineRequest(count: Int, before: Int? = nil) -> NetworkRequest<VoidRequest, PostsResponse>
    {
        var query = [URLQueryItem(name: "count", value: String(count))]
        if let before { query.append(URLQueryItem(name: "before_id", value: String(before))) }
        return NetworkRequest(path: "/posts/timeline", method: .get, queryItems: query)
    }

    /// Publishes a post through Micropub (a form-encoded body).
    public static func makePublishRequest(content: String) -> NetworkRequest<VoidRequest, VoidResponse> {
        NetworkRequest(
            path: "/micropub", method: .post,
            formItems: [
                URLFormItem(name: "h", value: "entry"),
                URLFormItem(name: "content", value: content),
            ])
    }

    /// Deletes a post.
    public static func makeDeleteRequest(id: Int) -> NetworkRequest<VoidRequest, VoidResponse> {
        NetworkRequest(path: "/posts/\(id)", method: .delete)
    }
}

/// Makes the SDK's client.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
public enum MicroblogAPIFactory {
    /// A client that authenticates every request with `authToken`.
    ///
    /// `NetworkConfiguration(baseURL:)` creates a session that Courier owns: `Authorization` never follows a
    /// redirect to another origin, on Linux too (a client on `URLSession.shared` gives no such guarantee there).
    public static func makeClient(authToken: String, baseURL: URL) -> NetworkClientProtocol {
        let configuration = NetworkConfiguration(baseURL: baseURL)
        return NetworkClient(configuration: configuration).authenticated(by: AppToken(token: authToken))
    }
}

/// The app's token for the API: fixed for the client's life, so a `401` is the outcome, not a reason to renew.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct AppToken: Authenticator {
    let token: String

    func credential() -> String { token }

    func apply(_ credential: String, to headers: inout [String: String]) {
        headers["Authorization"] = "Bearer " + credential
    }

    func refresh(rejected: String) -> String { token }

    /// Never: the token cannot be renewed, so the server's `401` reaches the caller as it is.
    func isRejection(_ error: any Error) -> Bool { false }
}

@Suite("A MicroClient-style SDK on Courier")
struct SDKWrapperTests {
    private static let timeline = Data(
        #"{"items":[{"id":1,"content_text":"Hello"},{"id":2,"content_text":"World"}]}"#.utf8)

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    private func microblogServer() throws -> LoopbackServer {
        try LoopbackServer { request in
            guard request.header("authorization") == "Bearer secret-token" else {
                return .json(APIErrorPayload(code: "unauthorized", message: "bad token"), status: 401)
            }
            switch (request.method, request.path) {
            case ("GET", "/api/posts/bookmarks"), ("GET", "/api/posts/timeline"):
                return .respond(
                    status: 200, headers: [ServerHeader(name: "Content-Type", value: "application/json")],
                    body: Self.timeline)
            case ("POST", "/api/micropub"):
                let ok =
                    request.formItems == [
                        ServerQueryItem(name: "h", value: "entry"),
                        ServerQueryItem(name: "content", value: "Tea & cake = 100% + 😀"),
                    ]
                return .respond(status: ok ? 202 : 400)
            case ("DELETE", "/api/posts/2"):
                return .respond(status: 204)
            default:
                return .respond(status: 404)
            }
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The SDK's requests and token reach the server, and its models decode")
    func sdkEndToEnd() async throws {
        let server = try microblogServer()
        let client = MicroblogAPIFactory.makeClient(
            authToken: "secret-token", baseURL: server.baseURL.appendingPathComponent("api"))

        let bookmarks = try await client.run(PostsAPIFactory.makeBookmarksRequest())
        #expect(bookmarks.value.items.map(\.contentText) == ["Hello", "World"])

        let timeline = try await client.run(PostsAPIFactory.makeTimelineRequest(count: 20, before: 99))
        #expect(timeline.value.items.count == 2)
        let timelineRequest = try #require(server.recordedRequests.last)
        #expect(
            timelineRequest.queryItems == [
                ServerQueryItem(name: "count", value: "20"),
                ServerQueryItem(name: "before_id", value: "99"),
            ])

        let published = try await client.run(PostsAPIFactory.makePublishRequest(content: "Tea & cake = 100% + 😀"))
        #expect(published.statusCode == 202)
        #expect(try await client.run(PostsAPIFactory.makeDeleteRequest(id: 2)).statusCode == 204)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A wrong token surfaces as unacceptableStatusCode(401) with the server's payload")
    func sdkUnauthorized() async throws {
        let server = try microblogServer()
        let client = MicroblogAPIFactory.makeClient(
            authToken: "wrong", baseURL: server.baseURL.appendingPathComponent("api"))
        do {
            _ = try await client.run(PostsAPIFactory.makeBookmarksRequest())
            Issue.record("expected a 401")
        } catch NetworkClientError.unacceptableStatusCode(401, _, let data) {
            #expect(try JSONDecoder().decode(APIErrorPayload.self, from: data ?? Data()).code == "unauthorized")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The SDK's client composes with the decorators")
    func sdkDecorators() async throws {
        let server = try microblogServer()
        let sdkClient = MicroblogAPIFactory.makeClient(
            authToken: "secret-token", baseURL: server.baseURL.appendingPathComponent("api"))
        let client: NetworkClientProtocol = sdkClient.deduplicated().sequential()
        #expect(try await client.run(PostsAPIFactory.makeBookmarksRequest()).value.items.count == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("StubNetworkClient replaces the SDK's client in tests: canned bodies, empty 2xx bodies, recorded requests")
    func sdkWithStub() async throws {
        let stub = StubNetworkClient()
        stub.stub(.get, "/posts/bookmarks", data: Self.timeline)
        stub.stub(.post, "/micropub", statusCode: 202)
        stub.stub(.delete, "/posts/2", statusCode: 204)
        let client: NetworkClientProtocol = stub

        let stubbed = try await client.run(PostsAPIFactory.makeBookmarksRequest())
        #expect(stubbed.value.items == [PostItem(id: 1, contentText: "Hello"), PostItem(id: 2, contentText: "World")])
        #expect(try await client.run(PostsAPIFactory.makePublishRequest(content: "Tea & cake")).statusCode == 202)
        #expect(try await client.run(PostsAPIFactory.makeDeleteRequest(id: 2)).statusCode == 204)
        #expect(stub.requests.map(\.description) == ["GET /posts/bookmarks", "POST /micropub", "DELETE /posts/2"])
        #expect(stub.requests[1].form("content") == "Tea & cake")
    }
}
