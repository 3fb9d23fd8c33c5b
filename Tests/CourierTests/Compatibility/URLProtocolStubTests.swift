import Courier
import Foundation
import Testing

/// The Testing article's `URLProtocol` stub, run for real: the real client, Courier's encoding and decoding, no socket.
final class InMemoryURLProtocol: URLProtocol {
    typealias Responder = @Sendable (URLRequest) -> (status: Int, body: Data)

    private static let lock = NSLock()
    nonisolated(unsafe) private static var responders: [String: Responder] = [:]

    static func register(host: String, _ responder: @escaping Responder) {
        lock.lock()
        defer { lock.unlock() }
        responders[host] = responder
    }

    private static func responder(for host: String) -> Responder? {
        lock.lock()
        defer { lock.unlock() }
        return responders[host]
    }

    override class func canInit(with request: URLRequest) -> Bool { true }

    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        guard let url = request.url, let responder = Self.responder(for: url.host ?? "") else {
            client?.urlProtocol(self, didFailWithError: URLError(.cannotConnectToHost))
            return
        }
        let (status, body) = responder(request)
        let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: [:])!
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        client?.urlProtocol(self, didLoad: body)
        client?.urlProtocolDidFinishLoading(self)
    }

    override func stopLoading() {}
}

@Suite("Stubbing the real client with a URLProtocol")
struct URLProtocolStubTests {
    private func client(host: String) -> NetworkClient {
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.protocolClasses = [InMemoryURLProtocol.self]
        return NetworkClient(
            configuration: NetworkConfiguration(
                sessionConfiguration: sessionConfiguration, baseURL: URL(string: "https://\(host)/api")!))
    }

    @Test("A session Courier owns keeps protocolClasses: the request is built and the answer decoded in memory")
    func decodes() async throws {
        InMemoryURLProtocol.register(host: "decode.test") { request in
            let ok =
                request.url?.absoluteString == "https://decode.test/api/todos/1?q=a%2Bb"
                && request.value(forHTTPHeaderField: "Accept") == "application/json"
            return ok ? (200, Data(#"{"id":1,"title":"Milk","done":false}"#.utf8)) : (400, Data())
        }
        let request = NetworkRequest<VoidRequest, Todo>(
            path: "/todos/1", method: .get, queryItems: [URLQueryItem(name: "q", value: "a+b")])
        let todo = try await client(host: "decode.test").run(request).value
        #expect(todo == Todo(id: 1, title: "Milk", done: false))
    }

    @Test("Statuses and error bodies go through the real client's checks")
    func errors() async throws {
        InMemoryURLProtocol.register(host: "errors.test") { _ in
            (409, Data(#"{"code":"conflict","message":"already done"}"#.utf8))
        }
        let error = try await #require(throws: NetworkClientError.self) {
            try await client(host: "errors.test").run(NetworkRequest<VoidRequest, Todo>(path: "/todos/1", method: .get))
        }
        #expect(error.statusCode == 409)
        #expect(error.errorBody(TodoAPIError.self) == TodoAPIError(code: "conflict", message: "already done"))
    }
}
