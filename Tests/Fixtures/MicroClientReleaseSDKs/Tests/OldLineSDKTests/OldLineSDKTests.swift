import Courier
import Foundation
import OldLineSDK
import XCTest

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stops a request in the async interceptor, after Courier built it and the SDK's interceptor ran: nothing is sent.
private struct Stop: Error {}

private final class Captured: @unchecked Sendable {
    private let lock = NSLock()
    private var requests: [URLRequest] = []
    func append(_ request: URLRequest) {
        lock.lock()
        requests.append(request)
        lock.unlock()
    }
    var last: URLRequest? {
        lock.lock()
        defer { lock.unlock() }
        return requests.last
    }
}

final class OldLineSDKTests: XCTestCase {
    func testParametersBecomeQueryItems() {
        let request = PostRequestFactory.makeTimelineRequest(pagination: Pagination(count: 10))
        XCTAssertEqual(request.queryItems, [URLQueryItem(name: "count", value: "10")])
        XCTAssertEqual(request.parameters, ["count": "10"])
        XCTAssertTrue(request.queryItems?.contains(URLQueryItem(name: "count", value: "10")) ?? false)
    }

    func testNoParametersNoQueryItems() {
        XCTAssertNil(PostRequestFactory.makeTimelineRequest().queryItems)
        XCTAssertNil(PostRequestFactory.makeBookmarksRequest().parameters)
    }

    func testParametersAreSortedByName() {
        let request = PostRequestFactory.makeMicropubRequest(content: "Hi", title: nil, isDraft: true)
        XCTAssertEqual(request.queryItems?.map(\.name), ["content", "h", "name", "post-status"])
        XCTAssertEqual(request.queryItems?.first(where: { $0.name == "name" })?.value, nil)
        XCTAssertEqual(request.additionalHeaders?["X-Client"], "old-line")
    }

    func testThePublicDecodeOf006() throws {
        let request = PostRequestFactory.makeBookmarksRequest()
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let timeline = try request.decode(
            data: Data(#"{"items":[{"id":"1","content_text":"Hi"}]}"#.utf8), defaultDecoder: decoder)
        XCTAssertEqual(timeline.items.first?.contentText, "Hi")
    }

    func testSchemeAndHostname() {
        let configuration = MicroAPIFactory.makeConfiguration(token: { "t" })
        XCTAssertEqual(configuration.baseURL, URL(string: "https://micro.blog"))
        XCTAssertEqual(configuration.scheme, "https")
        XCTAssertEqual(configuration.hostname, "micro.blog")
    }

    func testTheURLSentIsStableAndOnTheConfiguredHost() async throws {
        let captured = Captured()
        let configuration = MicroAPIFactory.makeConfiguration(token: { "secret" })
        configuration.asyncInterceptor = { request in
            captured.append(request)
            throw Stop()
        }
        let client = MicroAPIFactory.makeClient(configuration: configuration)
        for _ in 0..<3 {
            do {
                _ = try await client.run(
                    PostRequestFactory.makeTimelineRequest(pagination: Pagination(count: 5, sinceID: "a b")))
                XCTFail("the interceptor stops every request")
            } catch NetworkClientError.interceptorFailed {
            }
            XCTAssertEqual(
                captured.last?.url?.absoluteString, "https://micro.blog/posts/timeline?count=5&since_id=a%20b")
            XCTAssertEqual(captured.last?.value(forHTTPHeaderField: "Authorization"), "Bearer secret")
        }
        do {
            _ = try await client.run(PostRequestFactory.makeMicropubRequest(content: "x", title: nil, isDraft: false))
        } catch NetworkClientError.interceptorFailed {
        }
        XCTAssertEqual(captured.last?.url?.absoluteString, "https://micro.blog/micropub?content=x&h=entry&name")
        XCTAssertEqual(captured.last?.httpMethod, "POST")
    }

    func testTheSDKsOwnLocationIsNotAmbiguous() {
        let response = HTTPURLResponse(
            url: URL(string: "https://micro.blog/micropub")!, statusCode: 201, httpVersion: nil,
            headerFields: ["Location": "https://micro.blog/posts/1"])!
        XCTAssertEqual(locationOfCreatedPost(response), URL(string: "https://micro.blog/posts/1"))
        XCTAssertEqual(response.location, URL(string: "https://micro.blog/posts/1"))
    }
}
