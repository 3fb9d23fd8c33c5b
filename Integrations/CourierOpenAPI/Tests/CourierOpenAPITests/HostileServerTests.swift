import Courier
import CourierOpenAPI
import Foundation
import LoopbackHTTPServer
import OpenAPIRuntime
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The API key every request of the hostile client carries, so that the tests can check it never leaks.
private struct APIKeyHeader: NetworkRequestInterceptor {
    func intercept(_ request: URLRequest) async throws -> URLRequest {
        var request = request
        request.setValue("k3y", forHTTPHeaderField: "X-Api-Key")
        return request
    }
}

/// A generated client over the recommended stack on Courier's default transport (`URLSession`), whose configuration's
/// base URL is `home`'s: a bearer token from `authenticated(by:)`, and an interceptor that adds `X-Api-Key`, which
/// the configuration names sensitive. The generated client calls `server` (`home` by default).
private func hostileClient(
    home: LoopbackServer, server: URL? = nil, bodies: CourierClientTransport.ResponseBodies = .streamed,
    maximumResponseSize: Int? = nil
) -> Client {
    let sessionConfiguration = URLSessionConfiguration.ephemeral
    sessionConfiguration.timeoutIntervalForRequest = 10
    let configuration = NetworkConfiguration(
        sessionConfiguration: sessionConfiguration, baseURL: home.url("/api"), sensitiveHeaders: ["X-Api-Key"])
    configuration.interceptors = [APIKeyHeader()]
    if let maximumResponseSize { configuration.maximumResponseSize = maximumResponseSize }
    let courier = NetworkClient(configuration: configuration)
        .retrying(RetryPolicy(maxAttempts: 2, baseDelay: 0))
        .authenticated(by: BearerTokenAuthenticator(token: { "t0ken" }, refresh: { _ in "t0ken-2" }))
    return Client(
        serverURL: server ?? home.url("/api"),
        transport: CourierClientTransport(client: courier, responseBodies: bodies))
}

private let memoJSON = #"{"id":7,"text":"memo"}"#

/// The probes of hostile round four that apply to the OpenAPI transport: where credentials go, redirects, bodies over
/// a limit, a body cut off, and what the errors say.
@Suite("CourierClientTransport against hostile servers")
struct HostileServerTests {
    @Test(
        "The credential goes to the configuration's origin only: a generated client pointed elsewhere does not carry it",
        arguments: [CourierClientTransport.ResponseBodies.streamed, .buffered])
    func credentialScope(bodies: CourierClientTransport.ResponseBodies) async throws {
        let memo = ServerResponse.respond(
            status: 200, headers: [ServerHeader(name: "Content-Type", value: "application/json")],
            body: Data(memoJSON.utf8))
        let elsewhere = try LoopbackServer(host: "127.0.0.2") { _ in memo }
        let home = try LoopbackServer { _ in memo }
        let api = hostileClient(home: home, server: elsewhere.url("/api"), bodies: bodies)
        _ = try await api.getMemo(path: .init(id: "7"))
        let sent = try #require(elsewhere.recordedRequests.first)
        #expect(sent.header("Authorization") == nil)
        #expect(home.requestCount == 0)

        _ = try await hostileClient(home: home, bodies: bodies).getMemo(path: .init(id: "7"))
        #expect(home.recordedRequests.first?.header("Authorization") == "Bearer t0ken")
    }

    @Test(
        "A redirect to another origin carries neither the credential nor a configured sensitive header there",
        arguments: [CourierClientTransport.ResponseBodies.streamed, .buffered])
    func crossOriginRedirect(bodies: CourierClientTransport.ResponseBodies) async throws {
        let other = try LoopbackServer(host: "127.0.0.2") { _ in
            .respond(
                status: 200, headers: [ServerHeader(name: "Content-Type", value: "application/json")],
                body: Data(memoJSON.utf8))
        }
        let home = try LoopbackServer { request in .redirect(location: other.url(request.path).absoluteString) }
        let memo = try await hostileClient(home: home, bodies: bodies).getMemo(path: .init(id: "7")).ok.body.json
        #expect(memo == Components.Schemas.Memo(id: 7, text: "memo"))
        let first = try #require(home.recordedRequests.first)
        #expect(first.header("Authorization") == "Bearer t0ken")
        #expect(first.header("X-Api-Key") == "k3y")
        let redirected = try #require(other.recordedRequests.first)
        #expect(redirected.path == "/api/memos/7")
        #expect(redirected.header("Authorization") == nil)
        #expect(redirected.header("X-Api-Key") == nil)
    }

    @Test("A redirect to a file: URL is refused: the caller gets redirectRefused, nothing is read from disk")
    func fileRedirect() async throws {
        let home = try LoopbackServer { _ in .redirect(location: "file:///etc/passwd") }
        let error = try await #require(throws: ClientError.self) {
            try await hostileClient(home: home).getMemo(path: .init(id: "7"))
        }
        guard case .redirectRefused? = error.underlyingError as? NetworkClientError else {
            Issue.record("expected redirectRefused, got \(error.underlyingError)")
            return
        }
    }

    @Test(
        "An error status with a body over maximumResponseSize fails with responseTooLarge, and the transfer stops",
        arguments: [CourierClientTransport.ResponseBodies.streamed, .buffered])
    func errorBodyOverTheLimit(bodies: CourierClientTransport.ResponseBodies) async throws {
        // A documented 404 that declares 1 GiB; the server stops after 64 MiB and waits for the client to close.
        let home = try LoopbackServer { _ in
            .stream(
                status: 404, headers: [ServerHeader(name: "Content-Type", value: "application/json")],
                length: 1 << 30, holdAfter: 64 << 20)
        }
        let api = hostileClient(home: home, bodies: bodies, maximumResponseSize: 1 << 20)
        let error = try await #require(throws: ClientError.self) { try await api.getMemo(path: .init(id: "7")) }
        guard case .responseTooLarge(1 << 20)? = error.underlyingError as? NetworkClientError else {
            Issue.record("expected responseTooLarge(1 MiB), got \(error.underlyingError)")
            return
        }
        // Not how much the server wrote before: corelibs reads on for a while after a cancellation.
        #expect(await home.waitUntil(timeout: .seconds(20)) { $0.clientClosedCount == 1 })
    }

    @Test("A JSON body that declares more than maximumJSONBodySize is refused at its head, before it is read")
    func declaredJSONOverTheLimit() async throws {
        // Declares 1 GiB; the server stops after 8 MiB and waits for the client to close.
        let home = try LoopbackServer { _ in
            .stream(
                headers: [ServerHeader(name: "Content-Type", value: "application/json")], length: 1 << 30,
                holdAfter: 8 << 20)
        }
        let configuration = NetworkConfiguration(baseURL: home.url("/api"))
        let api = Client(
            serverURL: home.url("/api"),
            transport: CourierClientTransport(
                client: NetworkClient(configuration: configuration), maximumJSONBodySize: 1 << 20))
        let error = try await #require(throws: ClientError.self) { try await api.getMemo(path: .init(id: "7")) }
        #expect(error.underlyingError as? CourierClientTransportError == .jsonBodyTooLarge(limit: 1 << 20))
        #expect("\(error.underlyingError)".contains("maximumJSONBodySize"))
        #expect(await home.waitUntil(timeout: .seconds(10)) { $0.clientClosedCount == 1 })
    }

    @Test(
        "A body cut off mid-way fails the operation with transportFailed, never a short value",
        arguments: [CourierClientTransport.ResponseBodies.streamed, .buffered])
    func droppedMidway(bodies: CourierClientTransport.ResponseBodies) async throws {
        let home = try LoopbackServer { _ in
            .partialBody(status: 200, declaredLength: memoJSON.utf8.count, body: Data(memoJSON.utf8.prefix(10)))
        }
        let error = try await #require(throws: ClientError.self) {
            _ = try await hostileClient(home: home, bodies: bodies).getMemo(path: .init(id: "7")).ok.body.json
        }
        guard case .transportFailed? = error.underlyingError as? NetworkClientError else {
            Issue.record("expected transportFailed, got \(error.underlyingError)")
            return
        }
    }

    @Test("A JSON Lines export dropped mid-way yields the lines that arrived, then throws transportFailed")
    func exportDroppedMidway() async throws {
        let home = try LoopbackServer { _ in
            .writer(headers: [ServerHeader(name: "Content-Type", value: "application/x-ndjson")]) { writer in
                writer.send(memoJSON + "\n" + #"{"id":8,"te"#)
                return .close
            }
        }
        let body = try await hostileClient(home: home).exportMemos().ok.body.application_x_hyphen_ndjson
        var read: [Components.Schemas.Memo] = []
        let error = await #expect(throws: (any Error).self) {
            for try await memo in body.asDecodedJSONLines(of: Components.Schemas.Memo.self) { read.append(memo) }
        }
        #expect(read == [Components.Schemas.Memo(id: 7, text: "memo")])
        guard case .transportFailed? = error as? NetworkClientError else {
            Issue.record("expected transportFailed, got \(String(describing: error))")
            return
        }
    }

    @Test("Errors name no secret: neither the credential, a sensitive header's value nor a query value")
    func errorTexts() async throws {
        // A server that drops every connection before answering.
        let home = try LoopbackServer { _ in .raw(Data()) }
        let api = hostileClient(home: home)
        let error = try await #require(throws: ClientError.self) {
            try await api.listMemos(query: .init(limit: 1, q: "secret-term"))
        }
        let underlying = "\(error.underlyingError)"
        for secret in ["t0ken", "k3y", "secret-term"] { #expect(!underlying.contains(secret)) }
        // The generated client's own text prints its request (path and query, as it made them) but never what Courier
        // adds: the credential and the interceptor's header.
        let whole = "\(error)"
        for secret in ["t0ken", "k3y"] { #expect(!whole.contains(secret)) }
    }
}
