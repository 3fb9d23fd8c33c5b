import Courier
import SeedEraSDK
import XCTest

// An XCTest target in Swift 5 mode, as SDK authors of the MicroClient era write them, using Courier's ready test
// double instead of a hand-written one. Models here are not Sendable; that must not stop the stub.

final class BookmarksViewModelTests: XCTestCase {
    private var client: StubNetworkClient!

    override func setUp() {
        super.setUp()
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        client = StubNetworkClient(decoder: decoder)
    }

    func testLoadDecodesTheBookmarks() async throws {
        client.stub(.get, "/posts/bookmarks", body: #"{"items":[{"id":"1","content_text":"Hello"}]}"#)
        let viewModel = BookmarksViewModel(client: client)

        try await viewModel.load()

        XCTAssertEqual(viewModel.posts.map(\.contentText), ["Hello"])
        XCTAssertEqual(client.requests.map(\.description), ["GET /posts/bookmarks"])
    }

    func testPublishSendsTheBodyAndAcceptsAnEmptyResponse() async throws {
        client.stub(.post, "/posts", status: 201)
        _ = try await client.run(PostsAPIFactory.makePublishRequest(content: "Tea & cake"))
        let request = try XCTUnwrap(client.requests(.post, "/posts").first)
        XCTAssertEqual(request.header("X-Client"), "seed")
        XCTAssertEqual(String(decoding: request.body ?? Data(), as: UTF8.self), #"{"content":"Tea & cake"}"#)
    }

    func testAServerErrorCarriesItsPayload() async {
        client.stub(.get, "/posts/bookmarks", status: 401, body: #"{"error":"expired token"}"#)
        struct Payload: Decodable { let error: String }
        do {
            try await BookmarksViewModel(client: client).load()
            XCTFail("expected a 401")
        } catch let error as NetworkClientError {
            XCTAssertEqual(error.statusCode, 401)
            XCTAssertEqual(error.errorBody(Payload.self)?.error, "expired token")
        } catch {
            XCTFail("unexpected \(error)")
        }
    }

    func testAnUnstubbedRequestNamesItself() async {
        do {
            _ = try await client.run(PostsAPIFactory.makeSearchRequest(query: "swift"))
            XCTFail("expected no matching stub")
        } catch {
            XCTAssertEqual(
                "\(error)", "StubNetworkClient: no stub matches GET /posts/search?q=swift; there are no stubs.")
        }
    }

    func testAStubbedValueOfANonSendableModel() async throws {
        struct Plain: Decodable { let id: Int }
        client.stub(.get, "/plain", returning: Plain(id: 3))
        let value = try await client.run(NetworkRequest<VoidRequest, Plain>(path: "/plain", method: .get)).value
        XCTAssertEqual(value.id, 3)
    }
}
