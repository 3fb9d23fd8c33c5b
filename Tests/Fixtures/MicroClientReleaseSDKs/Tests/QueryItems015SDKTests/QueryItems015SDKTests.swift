import Courier
import Foundation
import QueryItems015SDK
import XCTest

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A MicroClient 0.0.13–0.0.15 test double: it implements the `init(configuration:)` that 0.0.13's protocol required.
final class NetworkClientDouble: NetworkClientProtocol {
    var lastPath: String?
    var lastQueryItems: [URLQueryItem] = []
    let configuration: NetworkConfiguration

    init(configuration: NetworkConfiguration) {
        self.configuration = configuration
    }

    func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        lastPath = networkRequest.path
        lastQueryItems = networkRequest.queryItems ?? []
        let json = #"{"posts":[{"href":"https://swift.org","description":"Swift"}]}"#
        let value = try JSONDecoder().decode(ResponseModel.self, from: Data(json.utf8))
        let response = HTTPURLResponse(
            url: configuration.baseURL, statusCode: 200, httpVersion: nil, headerFields: nil)!
        return NetworkResponse(value: value, response: response)
    }
}

final class QueryItems015SDKTests: XCTestCase {
    func testQueryItemsReadAsTheNonOptionalArrayOf0015() {
        let request = PostsAPIFactory.makeAllRequest(tag: "swift", start: 0, results: nil)

        XCTAssertTrue(request.queryItems.contains(URLQueryItem(name: "tag", value: "swift")))
        XCTAssertEqual(request.queryItems.count, 4)
        XCTAssertFalse(request.queryItems.isEmpty)
        XCTAssertEqual(request.queryItems[0].name, "format")
        XCTAssertNil(request.queryItems[3].value)
        XCTAssertEqual(request.queryItems.first?.value, "json")
        XCTAssertEqual(request.queryItems.first { $0.name == "start" }?.value, "0")
        XCTAssertTrue(request.queryItems.contains { $0.name == "results" })

        let items = request.queryItems
        XCTAssertTrue(items.contains(URLQueryItem(name: "start", value: "0")))
        XCTAssertEqual(items.count, 4)
    }

    func testQueryItemsStillReadAsTheOptionalOf0014() {
        let request = PostsAPIFactory.makeAllRequest(tag: nil, start: 5, results: 10)

        XCTAssertEqual(request.queryItems?.first, URLQueryItem(name: "format", value: "json"))
        XCTAssertEqual(request.queryItems?.count, 3)
        XCTAssertEqual(
            request.queryItems,
            [
                URLQueryItem(name: "format", value: "json"),
                URLQueryItem(name: "start", value: "5"),
                URLQueryItem(name: "results", value: "10"),
            ]
        )
    }

    func testAnEmptyQuery() {
        let request = PostsAPIFactory.makeUpdateRequest()
        XCTAssertTrue(request.queryItems.isEmpty)
        XCTAssertEqual(request.queryItems.count, 0)
        XCTAssertEqual(request.baseURL, URL(string: "https://api.pinboard.in/v2"))
    }

    func testADoubleWithInitConfigurationReplacesTheClient() async throws {
        let configuration = NetworkConfiguration(
            session: URLSession.shared,
            defaultDecoder: JSONDecoder(),
            defaultEncoder: JSONEncoder(),
            baseURL: URL(string: "https://api.pinboard.in/v1")!
        )
        let double = NetworkClientDouble(configuration: configuration)
        let store = BookmarksStore(client: double)

        try await store.load(tag: "swift")

        XCTAssertEqual(store.bookmarks.map(\.href), ["https://swift.org"])
        XCTAssertEqual(double.lastPath, "/posts/all")
        XCTAssertTrue(double.lastQueryItems.contains(URLQueryItem(name: "tag", value: "swift")))
        _ = PinboardAPIFactory.makeClient(token: "user:123")
    }
}
