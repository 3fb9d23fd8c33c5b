import Courier
import Foundation
import LoopbackHTTPServer
import Testing

/// Credentials stay on the origin they were set for, even when a server redirects elsewhere.
/// 127.0.0.1 and 127.0.0.2 are two loopback hosts, so two distinct origins.
@Suite("Credential safety")
struct CredentialSafetyTests {
    private let secrets = [
        "Authorization": "Bearer s3cr3t", "Cookie": "session=s3cr3t", "Proxy-Authorization": "Basic s3cr3t",
        "X-Api-Key": "s3cr3t",
    ]

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Sensitive headers from the request and the interceptor never follow a redirect to another origin")
    func crossOriginRedirectStripsCredentials() async throws {
        let elsewhere = try echoServer(host: "127.0.0.2")
        let origin = try LoopbackServer { _ in .redirect(location: elsewhere.url("/landing").absoluteString) }
        let configuration = origin.configuration(sensitiveHeaders: ["X-Api-Key"])
        configuration.interceptors = [
            RequestChange { request in
                request.setValue("Bearer from-interceptor", forHTTPHeaderField: "Authorization")
            }
        ]
        let request = Echo(
            path: "start", method: .get, additionalHeaders: secrets.merging(["X-Plain": "kept"]) { a, _ in a })
        let echo = try await NetworkClient(configuration: configuration).run(request).value

        #expect(echo.path == "/landing")
        #expect(origin.recordedRequests.first?.header("authorization") == "Bearer from-interceptor")
        #expect(origin.recordedRequests.first?.header("x-api-key") == "s3cr3t")
        for name in ["authorization", "cookie", "proxy-authorization", "x-api-key"] {
            #expect(echo.header(name) == nil, "\(name) leaked to another origin")
        }
        #expect(echo.header("x-plain") == "kept")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A redirect within the same origin keeps the credentials")
    func sameOriginRedirectKeepsCredentials() async throws {
        let server = try LoopbackServer { request in
            request.path == "/start" ? .redirect(location: "/landing") : .echo()
        }
        let echo = try await NetworkClient(configuration: server.configuration())
            .run(Echo(path: "start", method: .get, additionalHeaders: secrets)).value
        #expect(echo.path == "/landing")
        #expect(echo.header("authorization") == "Bearer s3cr3t")
        #expect(echo.header("cookie") == "session=s3cr3t")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Another port on the same host is another origin")
    func otherPortIsAnotherOrigin() async throws {
        let elsewhere = try echoServer()
        let origin = try LoopbackServer { _ in .redirect(status: 307, location: elsewhere.url("/x").absoluteString) }
        let echo = try await NetworkClient(configuration: origin.configuration())
            .run(Echo(path: "start", method: .get, additionalHeaders: secrets)).value
        #expect(echo.path == "/x")
        #expect(echo.header("authorization") == nil)
        #expect(echo.header("cookie") == nil)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Descriptions of errors never contain header values or query values")
    func redactedDescriptions() async throws {
        let server = try LoopbackServer { _ in .respond(status: 403, body: Data("denied".utf8)) }
        let request = NetworkRequest<VoidRequest, Post>(
            path: "private", method: .get, queryItems: [URLQueryItem(name: "api_key", value: "s3cr3t")],
            additionalHeaders: secrets)
        do {
            _ = try await server.client().run(request)
            Issue.record("expected a 403")
        } catch {
            let text = "\(error) \(error.localizedDescription)"
            #expect(text.contains("403"))
            #expect(text.contains("/private"))
            #expect(!text.contains("s3cr3t"))
        }
    }
}
