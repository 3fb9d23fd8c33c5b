import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// ``NetworkResponse``'s status and header fields, read without casting its `response`.
@Suite("NetworkResponse")
struct NetworkResponseTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("statusCode and header(_:), any case, through a real URLSession")
    func headerThroughURLSession() async throws {
        let server = try LoopbackServer { _ in
            .respond(
                status: 201,
                headers: [ServerHeader(name: "ETag", value: "\"v2\""), ServerHeader(name: "X-Rate", value: "7")],
                body: Data("{}".utf8))
        }
        let response = try await server.client().run(NetworkRequest<VoidRequest, Data>(path: "/r", method: .post))
        #expect(response.statusCode == 201)
        #expect(response.header("ETag") == "\"v2\"")
        #expect(response.header("etag") == "\"v2\"")
        #expect(response.header("x-rate") == "7")
        #expect(response.header("X-Missing") == nil)
    }

    @Test("The same through InMemoryTransport and StubNetworkClient, whose answers carry header fields")
    func headerThroughTheDoubles() async throws {
        let transport = InMemoryTransport { _ in
            InMemoryTransport.Response(status: 200, headers: ["Retry-After": "5", "Content-Type": "text/plain"])
        }
        let client = NetworkClient(
            configuration: NetworkConfiguration(transport: transport, baseURL: URL(string: "https://api.test")!))
        let viaTransport = try await client.run(NetworkRequest<VoidRequest, VoidResponse>(path: "/t", method: .get))
        #expect(viaTransport.header("retry-after") == "5")

        let stub = StubNetworkClient()
        stub.stub(.get, "/s", statusCode: 202, body: "{}", headers: ["Location": "/jobs/1"])
        stub.stub(
            label: "json with headers", where: { $0.path == "/j" },
            answer: { _ in .json("{}", statusCode: 200, headers: ["ETag": "\"j\""]) })
        let viaStub = try await stub.run(NetworkRequest<VoidRequest, VoidResponse>(path: "/s", method: .get))
        #expect(viaStub.statusCode == 202)
        #expect(viaStub.header("location") == "/jobs/1")
        let viaAnswer = try await stub.run(NetworkRequest<VoidRequest, VoidResponse>(path: "/j", method: .get))
        #expect(viaAnswer.header("etag") == "\"j\"")
    }

    @Test("A response a test double built without an HTTPURLResponse has status 0 and no header fields")
    func plainURLResponse() {
        let response = NetworkResponse(
            value: VoidResponse(),
            response: URLResponse(
                url: URL(string: "https://x.test")!, mimeType: nil, expectedContentLength: 0, textEncodingName: nil))
        #expect(response.statusCode == 0)
        #expect(response.header("Content-Type") == nil)
    }
}
