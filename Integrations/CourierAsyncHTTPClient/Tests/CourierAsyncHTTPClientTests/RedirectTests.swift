// Courier's API through the product's re-export alone (no `import Courier`).
import CourierAsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private struct Answer: Codable, Sendable, Equatable {
    let at: String
}

/// Courier's redirect and credential rules over this transport (the `HTTPClient` follows no redirect itself). One
/// server answers by two host names, `127.0.0.1` and `localhost`: two origins.
@Suite("AsyncHTTPClientTransport: redirects and credential scope")
struct RedirectTests {
    private static func server() async throws -> TestServer {
        let port = NIOLockedValueBox<Int>(0)
        let server = try await TestServer { request in
            let path = request.uri.split(separator: "?").first.map(String.init) ?? request.uri
            switch path {
            case "/away": return .redirect(to: "http://localhost:\(port.withLockedValue { $0 })/landed")
            case "/near": return .redirect(to: "/landed")
            case "/see-other": return .redirect(to: "/landed", status: .seeOther)
            case "/loop": return .redirect(to: "/loop")
            case "/ftp": return .redirect(to: "ftp://127.0.0.1/file")
            default: return .json(#"{"at":"\#(path)"}"#)
            }
        }
        port.withLockedValue { $0 = server.port }
        return server
    }

    @Test("authenticated(by:): the token reaches the same origin after a redirect, never another host")
    func tokenScope() async throws {
        let server = try await Self.server()
        let transport = try AsyncHTTPClientTransport()
        let client = client(transport, baseURL: server.url("/")).authenticated(
            by: BearerTokenAuthenticator(token: { "t0ken" }, refresh: { _ in "t0ken2" }))
        let near = try await client.run(NetworkRequest<VoidRequest, Answer>(path: "near", method: .get)).value
        #expect(near == Answer(at: "/landed"))
        let away = try await client.run(NetworkRequest<VoidRequest, Answer>(path: "away", method: .get)).value
        #expect(away == Answer(at: "/landed"))
        let requests = server.requests
        #expect(requests.map(\.uri) == ["/near", "/landed", "/away", "/landed"])
        #expect(
            requests.map { $0.headers["Authorization"] } == [["Bearer t0ken"], ["Bearer t0ken"], ["Bearer t0ken"], []])
        #expect(
            requests.map { $0.headers["Host"].first?.hasPrefix("localhost") == true } == [false, false, false, true])
        try await transport.shutdown()
        try await server.stop()
    }

    @Test("Cookie and the configuration's sensitive headers are dropped across origins, kept within one")
    func sensitiveHeaders() async throws {
        let server = try await Self.server()
        let transport = try AsyncHTTPClientTransport()
        let client = NetworkClient(
            configuration: NetworkConfiguration(
                transport: transport, baseURL: server.url("/"), sensitiveHeaders: ["X-Api-Key"]))
        let headers = ["X-Api-Key": "k3y", "Cookie": "session=c00kie", "X-Trace": "abc"]
        for path in ["near", "away"] {
            _ = try await client.run(
                NetworkRequest<VoidRequest, Answer>(path: path, method: .get, additionalHeaders: headers))
        }
        let landed = server.requests.filter { $0.uri == "/landed" }
        #expect(landed.count == 2)
        #expect(landed.map { $0.headers["X-Api-Key"] } == [["k3y"], []])
        #expect(landed.map { $0.headers["Cookie"] } == [["session=c00kie"], []])
        #expect(landed.map { $0.headers["X-Trace"] } == [["abc"], ["abc"]])
        try await transport.shutdown()
        try await server.stop()
    }

    @Test("A 303 after a POST is followed with a GET and no body")
    func seeOther() async throws {
        let server = try await Self.server()
        let transport = try AsyncHTTPClientTransport()
        let answer = try await client(transport, baseURL: server.url("/")).run(
            NetworkRequest<Answer, Answer>(path: "see-other", method: .post, body: Answer(at: "sent"))
        ).value
        #expect(answer == Answer(at: "/landed"))
        let second = try #require(server.requests.last)
        #expect(second.method == .GET)
        #expect(second.body.isEmpty)
        #expect(second.headers["Content-Type"].isEmpty)
        #expect(second.headers["Content-Length"].allSatisfy { $0 == "0" })
        try await transport.shutdown()
        try await server.stop()
    }

    @Test("A redirect loop ends after NetworkConfiguration.maximumRedirects with httpTooManyRedirects")
    func loop() async throws {
        let server = try await Self.server()
        let transport = try AsyncHTTPClientTransport()
        let (error, _) = try await failure {
            _ = try await client(transport, baseURL: server.url("/")).run(
                NetworkRequest<VoidRequest, Answer>(path: "loop", method: .get))
        }
        #expect(transportCode(error) == .httpTooManyRedirects, "\(String(describing: error))")
        #expect(server.requests.count == NetworkConfiguration.maximumRedirects + 1)
        try await transport.shutdown()
        try await server.stop()
    }

    @Test("A redirect to another scheme than http or https is refused; nothing is sent there")
    func otherScheme() async throws {
        let server = try await Self.server()
        let transport = try AsyncHTTPClientTransport()
        let (error, _) = try await failure {
            _ = try await client(transport, baseURL: server.url("/")).run(
                NetworkRequest<VoidRequest, Answer>(path: "ftp", method: .get))
        }
        guard case .redirectRefused = error as? NetworkClientError else {
            Issue.record("expected redirectRefused, got \(String(describing: error))")
            return
        }
        #expect(server.requests.count == 1)
        try await transport.shutdown()
        try await server.stop()
    }
}
