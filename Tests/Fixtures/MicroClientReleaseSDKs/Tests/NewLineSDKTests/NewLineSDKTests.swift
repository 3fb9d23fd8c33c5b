import Courier
import Foundation
import NewLineSDK
import XCTest

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A MicroClient 0.0.16+ session double: scripted responses, recorded requests.
final class URLSessionMock: URLSessionProtocol, @unchecked Sendable {
    private let lock = NSLock()
    private var script: [(status: Int, body: String)]
    private var recorded: [URLRequest] = []

    init(_ script: [(status: Int, body: String)]) {
        self.script = script
    }

    var requests: [URLRequest] {
        lock.withLock { recorded }
    }

    func data(for request: URLRequest, delegate: URLSessionTaskDelegate?) async throws -> (Data, URLResponse) {
        let next = lock.withLock {
            recorded.append(request)
            return script.count > 1 ? script.removeFirst() : script[0]
        }
        let response = HTTPURLResponse(
            url: request.url!, statusCode: next.status, httpVersion: "HTTP/1.1", headerFields: nil)!
        return (Data(next.body.utf8), response)
    }
}

/// A newer-line double of the client protocol, building the response with 0.0.16's public initializer.
struct NetworkClientMock: NetworkClientProtocol {
    func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        let value = try JSONDecoder().decode(ResponseModel.self, from: Data(#"[{"href":"h","tags":"t"}]"#.utf8))
        let response = HTTPURLResponse(
            url: URL(string: "https://x.example")!, statusCode: 200, httpVersion: nil, headerFields: nil)!
        return NetworkResponse(value: value, response: response)
    }
}

final class NewLineSDKTests: XCTestCase {
    func testInterceptorsRunInOrderOnTheDouble() async throws {
        let session = URLSessionMock([(200, #"[{"href":"https://swift.org","tags":"swift"}]"#)])
        let configuration = BookmarksAPIFactory.makeConfiguration(session: session, tokenProvider: { "token-1" })
        let client = BookmarksAPIFactory.makeClient(configuration: configuration)

        let response = try await client.run(BookmarksRequestFactory.makeRecentRequest(count: 2))

        XCTAssertEqual(response.value.map(\.href), ["https://swift.org"])
        let sent = try XCTUnwrap(session.requests.first)
        XCTAssertEqual(sent.url?.absoluteString, "https://api.bookmarks.example/v1/posts/recent?count=2")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "Authorization"), "Bearer token-1")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "User-Agent"), "Bookmarks/1.0")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "Cache-Control"), "no-cache")
        XCTAssertNotNil(sent.value(forHTTPHeaderField: "X-Request-ID"))
    }

    func testARequestsOwnInterceptorsReplaceTheConfigurations() async throws {
        let session = URLSessionMock([(200, "[]")])
        let configuration = BookmarksAPIFactory.makeConfiguration(session: session, tokenProvider: { "token-1" })
        let request = BookmarksRequestFactory.makePublicFeedRequest()
        XCTAssertEqual(request.interceptors?.count, 2)
        XCTAssertEqual(request.retryStrategy, RetryStrategy.none)
        XCTAssertTrue(request.queryItems.isEmpty)

        _ = try await BookmarksAPIFactory.makeClient(configuration: configuration).run(request)

        let sent = try XCTUnwrap(session.requests.first)
        XCTAssertEqual(sent.url?.host, "feeds.bookmarks.example")
        XCTAssertEqual(sent.value(forHTTPHeaderField: "X-API-Key"), "public-key")
        XCTAssertNil(sent.value(forHTTPHeaderField: "Authorization"))
    }

    func testATransientFailureOfAGetIsRetriedAndLogged() async throws {
        let session = URLSessionMock([(503, #"{"message":"busy"}"#), (200, "[]")])
        let logger = MemoryLogger()
        let configuration = BookmarksAPIFactory.makeConfiguration(
            session: session, tokenProvider: { "secret-token" }, logger: logger)

        let response = try await BookmarksAPIFactory.makeClient(configuration: configuration)
            .run(BookmarksRequestFactory.makeRecentRequest(count: 1))

        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(session.requests.count, 2)
        let messages = logger.messages
        XCTAssertEqual(messages.count, 2)
        XCTAssertEqual(messages.first?.level, .error)
        XCTAssertTrue(
            messages.first?.message.hasPrefix("GET https://api.bookmarks.example/v1/posts/recent?count=1 -> 503")
                ?? false)
        XCTAssertEqual(messages.last?.level, .info)
        XCTAssertFalse(messages.contains { $0.message.contains("secret-token") })
    }

    func testAPostIsNotRetriedAndTheErrorPayloadIsRead() async throws {
        let session = URLSessionMock([(503, #"{"message":"busy"}"#), (200, "")])
        let configuration = BookmarksAPIFactory.makeConfiguration(session: session, tokenProvider: { nil })
        let request = BookmarksRequestFactory.makeAddRequest(NewBookmark(href: "https://swift.org", tags: "swift"))
        XCTAssertEqual(request.retryStrategy, .retry(count: 3))

        do {
            _ = try await BookmarksAPIFactory.makeClient(configuration: configuration).run(request)
            XCTFail("503 is an error")
        } catch {
            XCTAssertEqual(serverMessage(of: error), "busy")
        }
        XCTAssertEqual(session.requests.count, 1, "POST is not idempotent: Courier does not retry it")
        XCTAssertNil(session.requests.first?.value(forHTTPHeaderField: "Authorization"))
    }

    func testA0018ConfigurationWithInterceptorArguments() async throws {
        let session = URLSessionMock([(200, "[]")])
        let configuration = BookmarksAPIFactory.makeKeyedConfiguration(session: session, apiKey: "k-1")
        _ = try await NetworkClient(configuration: configuration).run(
            BookmarksRequestFactory.makeRecentRequest(count: 1))
        XCTAssertEqual(session.requests.first?.value(forHTTPHeaderField: "X-Key"), "k-1")
        XCTAssertEqual(session.requests.first?.value(forHTTPHeaderField: "X-Async"), "async")
    }

    func testA0017ConfigurationOnASessionDouble() async throws {
        let session = URLSessionMock([(404, #"{"message":"gone"}"#)])
        let configuration = NetworkConfiguration(
            session: session,
            defaultDecoder: JSONDecoder(),
            defaultEncoder: JSONEncoder(),
            baseURL: URL(string: "https://api.bookmarks.example/v1")!
        )
        do {
            _ = try await NetworkClient(configuration: configuration).run(
                BookmarksRequestFactory.makeRecentRequest(count: 1))
            XCTFail("404 is an error")
        } catch {
            XCTAssertEqual(serverMessage(of: error), "gone")
        }
        XCTAssertEqual(session.requests.count, 1, "no retry strategy: one attempt")
        XCTAssertNil(session.requests.first?.value(forHTTPHeaderField: "User-Agent"))
    }

    func testAClientDoubleBuildsResponsesWithTheInitializerOf0016() async throws {
        let response = try await NetworkClientMock().run(BookmarksRequestFactory.makeRecentRequest(count: 1))
        XCTAssertEqual(response.value.first?.href, "h")
        XCTAssertTrue(
            BookmarksRequestFactory.makeRecentRequest(count: 3).queryItems.contains(
                URLQueryItem(name: "count", value: "3")))
    }
}
