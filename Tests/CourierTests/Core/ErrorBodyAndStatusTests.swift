import Courier
import Foundation
import LoopbackHTTPServer
import Testing

/// Reading the server's error payload, and choosing which statuses count as success, against a real server.
@Suite("Error bodies and acceptable status codes")
struct ErrorBodyAndStatusTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    private func statusServer() throws -> LoopbackServer {
        try LoopbackServer { request in
            switch request.path {
            case "/missing":
                return .json(APIErrorPayload(code: "not_found", message: "no such post"), status: 404)
            case "/snake":
                return .respond(status: 422, body: Data(#"{"error_code":"invalid","error_message":"too long"}"#.utf8))
            case "/html":
                return .respond(status: 502, body: Data("<html>Bad gateway</html>".utf8))
            case "/empty-error":
                return .respond(status: 500)
            case "/not-modified":
                return .respond(status: 304)
            case "/created":
                return .json(Post(id: 1, title: "new"), status: 201)
            default:
                return .json(Post(id: 1, title: "ok"))
            }
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("errorBody(_:) decodes the body of unacceptableStatusCode into the caller's model")
    func errorBodyDecodes() async throws {
        let server = try statusServer()
        let client = server.client()
        do {
            _ = try await client.run(NetworkRequest<VoidRequest, Post>(path: "/missing", method: .get))
            Issue.record("expected a 404")
        } catch let error as NetworkClientError {
            #expect(error.statusCode == 404)
            #expect(
                error.errorBody(APIErrorPayload.self) == APIErrorPayload(code: "not_found", message: "no such post"))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @available(*, deprecated, message: "Tests Courier 0.1's decodeErrorBody")
    @Test("A body that is not the error model gives nil, or decodingFailed naming the field, with the body kept")
    func errorBodyDoesNotDecode() async throws {
        let server = try statusServer()
        let client = server.client()
        for path in ["/html", "/empty-error"] {
            let error = try await #require(throws: NetworkClientError.self) {
                try await client.run(NetworkRequest<VoidRequest, Post>(path: path, method: .get))
            }
            #expect(error.errorBody(APIErrorPayload.self) == nil)
            let decodeError = try #require(throws: NetworkClientError.self) {
                try error.decodeErrorBody(APIErrorPayload.self)
            }
            guard case .decodingFailed(_, let data) = decodeError else {
                Issue.record("expected decodingFailed, got \(decodeError)")
                continue
            }
            #expect(data.isEmpty == (path == "/empty-error"))
        }
        let wrongShape = try await #require(throws: NetworkClientError.self) {
            try await client.run(NetworkRequest<VoidRequest, Post>(path: "/snake", method: .get))
        }
        let decodeError = try #require(throws: NetworkClientError.self) {
            try wrongShape.decodeErrorBody(APIErrorPayload.self)
        }
        #expect(decodeError.description.contains("missing key \"code\""))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @available(*, deprecated, message: "Tests Courier 0.1's decodeErrorBody and NetworkRequest.errorBody")
    @Test("decodeErrorBody rethrows any other error unchanged; errorBody gives nil")
    func otherErrors() throws {
        let timeout = NetworkClientError.transportFailed(URLError(.timedOut))
        #expect(timeout.errorBody(APIErrorPayload.self) == nil)
        #expect(timeout.statusCode == nil)
        let rethrown = try #require(throws: NetworkClientError.self) {
            try timeout.decodeErrorBody(APIErrorPayload.self)
        }
        guard case .transportFailed(let urlError) = rethrown else {
            Issue.record("expected the same error, got \(rethrown)")
            return
        }
        #expect(urlError.code == .timedOut)
        let request = NetworkRequest<VoidRequest, Post>(method: .get)
        #expect(request.errorBody(APIErrorPayload.self, from: CancellationError()) == nil)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @available(*, deprecated, message: "Tests Courier 0.1's decodeErrorBody and NetworkRequest.errorBody")
    @Test("NetworkRequest.errorBody decodes with the request's decoder, else the configuration's")
    func requestDecoder() async throws {
        struct SnakeError: Decodable, Equatable {
            let errorCode: String
            let errorMessage: String
        }
        let server = try statusServer()
        let snake = JSONDecoder()
        snake.keyDecodingStrategy = .convertFromSnakeCase
        let configuration = NetworkConfiguration(defaultDecoder: snake, baseURL: server.baseURL)
        let client = NetworkClient(configuration: configuration)
        let expected = SnakeError(errorCode: "invalid", errorMessage: "too long")

        let plain = NetworkRequest<VoidRequest, Post>(path: "/snake", method: .get)
        let error = try await #require(throws: NetworkClientError.self) { try await client.run(plain) }
        #expect(plain.errorBody(SnakeError.self, from: error, configuration: configuration) == expected)
        #expect(plain.errorBody(SnakeError.self, from: error) == nil)  // A plain JSONDecoder: keys do not match.

        let withOwnDecoder = NetworkRequest<VoidRequest, Post>(path: "/snake", method: .get, decoder: snake)
        #expect(withOwnDecoder.errorBody(SnakeError.self, from: error) == expected)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A request can accept 304 (nothing changed) and 404 (absent) as success")
    func requestAcceptableStatuses() async throws {
        let server = try statusServer()
        let client = server.client()
        let notModified = NetworkRequest<VoidRequest, VoidResponse>(
            path: "/not-modified", method: .get, acceptableStatusCodes: Set(200..<300).union([304]))
        #expect(try await client.run(notModified).statusCode == 304)

        let absent = NetworkRequest<VoidRequest, Data>(
            path: "/missing", method: .get, acceptableStatusCodes: [200, 404])
        let response = try await client.run(absent)
        #expect(response.statusCode == 404)
        #expect(try JSONDecoder().decode(APIErrorPayload.self, from: response.value).code == "not_found")

        // Without the request's set, the same statuses fail as before.
        await #expect(throws: NetworkClientError.self) {
            try await client.run(NetworkRequest<VoidRequest, VoidResponse>(path: "/not-modified", method: .get))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The configuration's set applies to every request; a request's own set replaces it")
    func configurationAcceptableStatuses() async throws {
        let server = try statusServer()
        let configuration = server.configuration()
        configuration.acceptableStatusCodes = Set(200..<300).union([404])
        let client = NetworkClient(configuration: configuration)
        let missing = try await client.run(NetworkRequest<VoidRequest, Data>(path: "/missing", method: .get))
        #expect(missing.statusCode == 404)

        let strict = NetworkRequest<VoidRequest, Data>(path: "/missing", method: .get, acceptableStatusCodes: [200])
        let error = try await #require(throws: NetworkClientError.self) { try await client.run(strict) }
        #expect(error.statusCode == 404)

        // A set without some 2xx makes that 2xx a failure: only 200 is success here, 201 is not.
        let onlyOK = NetworkRequest<VoidRequest, Post>(path: "/created", method: .post, acceptableStatusCodes: [200])
        let created = try await #require(throws: NetworkClientError.self) { try await client.run(onlyOK) }
        #expect(created.statusCode == 201)
        #expect(created.errorBody(Post.self) == Post(id: 1, title: "new"))

        configuration.acceptableStatusCodes = Set(200..<300)
        await #expect(throws: NetworkClientError.self) {
            try await client.run(NetworkRequest<VoidRequest, Data>(path: "/missing", method: .get))
        }
    }
}
