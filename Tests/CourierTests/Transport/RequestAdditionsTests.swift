import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a session adds to a request on the wire reaches the cache's key: two configurations that share one
/// `ResponseCache` never serve each other's responses because their sessions send different header fields, cookies or
/// credentials.
@Suite("ResponseCache: what the session adds is part of the key")
struct RequestAdditionsTests {
    /// A server that answers with the value of `field` it received, fresh for a minute, `Vary`ing on `vary`.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func echoing(_ field: String, vary: String? = nil) throws -> LoopbackServer {
        try LoopbackServer { request in
            var fields = ["Cache-Control": "max-age=60"]
            if let vary { fields["Vary"] = vary }
            return cacheable("for \(request.header(field) ?? "nobody")", fields)
        }
    }

    /// A client on `server` whose session is `.ephemeral` changed by `configure`, with `cache`.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func client(
        _ server: LoopbackServer, cache: ResponseCache, _ configure: (URLSessionConfiguration) -> Void = { _ in }
    ) -> NetworkClient {
        let session = URLSessionConfiguration.ephemeral
        session.timeoutIntervalForRequest = 10
        configure(session)
        let configuration = NetworkConfiguration(sessionConfiguration: session, baseURL: server.baseURL)
        configuration.responseCache = cache
        return NetworkClient(configuration: configuration)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func get(_ client: NetworkClient, _ path: String = "/r") async throws -> (String, CacheStatus) {
        let response = try await client.run(NetworkRequest<VoidRequest, Data>(path: path, method: .get))
        return (String(decoding: response.value, as: UTF8.self), response.cacheStatus)
    }

    /// A field each session adds through `httpAdditionalHeaders`, and the `Vary` the server answers with.
    struct SessionField: Sendable, CustomStringConvertible {
        let name: String
        let vary: String?
        var description: String { vary.map { "\(name) (Vary: \($0))" } ?? name }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "Sessions whose httpAdditionalHeaders differ never get each other's responses from a shared cache",
        arguments: [
            SessionField(name: "Authorization", vary: nil),
            // Not declared sensitive: still the session's own, and the key holds it.
            SessionField(name: "X-Api-Key", vary: nil),
            SessionField(name: "Accept-Language", vary: "Accept-Language"),
        ])
    func sessionHeaderFields(_ field: SessionField) async throws {
        let server = try Self.echoing(field.name, vary: field.vary)
        let cache = ResponseCache(memoryCapacity: 1 << 20)
        let alice = Self.client(server, cache: cache) { $0.httpAdditionalHeaders = [field.name: "ALICE"] }
        let bob = Self.client(server, cache: cache) { $0.httpAdditionalHeaders = [field.name: "BOB"] }
        let plain = Self.client(server, cache: cache)

        #expect(try await Self.get(alice) == ("for ALICE", .network))
        #expect(try await Self.get(bob) == ("for BOB", .network))
        // URLSession may add a field of its own (corelibs sends `Accept-Language` with the locale's language).
        let (plainText, plainStatus) = try await Self.get(plain)
        #expect(plainStatus == .network && plainText != "for ALICE" && plainText != "for BOB")
        // Each is still served its own from the cache.
        #expect(try await Self.get(alice) == ("for ALICE", .fresh))
        #expect(try await Self.get(bob) == ("for BOB", .fresh))
        #expect(server.requestCount == 3)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A request's own field wins over the session's, as on the wire: the key follows the value sent")
    func requestFieldOverridesSession() async throws {
        let server = try Self.echoing("Authorization")
        let cache = ResponseCache(memoryCapacity: 1 << 20)
        let alice = Self.client(server, cache: cache) { $0.httpAdditionalHeaders = ["Authorization": "ALICE"] }
        let bob = Self.client(server, cache: cache)
        #expect(try await Self.get(alice) == ("for ALICE", .network))
        // Bob's request sets the same value itself: the same bytes on the wire, the same answer.
        let response = try await bob.run(
            NetworkRequest<VoidRequest, Data>(
                path: "/r", method: .get, additionalHeaders: ["Authorization": "ALICE"]))
        #expect(String(decoding: response.value, as: UTF8.self) == "for ALICE")
        let overridden = try await alice.run(
            NetworkRequest<VoidRequest, Data>(path: "/r", method: .get, additionalHeaders: ["Authorization": "BOB"]))
        #expect(String(decoding: overridden.value, as: UTF8.self) == "for BOB")
        #expect(overridden.cacheStatus == .network)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Cookies a session adds from its cookie storage are part of the key, and follow the storage's content")
    func cookieStorage() async throws {
        let server = try Self.echoing("Cookie")
        let cache = ResponseCache(memoryCapacity: 1 << 20)
        let aliceCookies = try #require(URLSessionConfiguration.ephemeral.httpCookieStorage)
        let bobCookies = try #require(URLSessionConfiguration.ephemeral.httpCookieStorage)
        #expect(aliceCookies !== bobCookies)
        aliceCookies.setCookie(try Self.cookie("alice", for: server))
        bobCookies.setCookie(try Self.cookie("bob", for: server))
        let alice = Self.client(server, cache: cache) { $0.httpCookieStorage = aliceCookies }
        let bob = Self.client(server, cache: cache) { $0.httpCookieStorage = bobCookies }

        #expect(try await Self.get(alice) == ("for session=alice", .network))
        #expect(try await Self.get(bob) == ("for session=bob", .network))
        #expect(try await Self.get(alice) == ("for session=alice", .fresh))
        // Alice signs out and Carol signs in on the same storage: Carol is not served Alice's response.
        aliceCookies.setCookie(try Self.cookie("carol", for: server))
        #expect(try await Self.get(alice) == ("for session=carol", .network))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Credentials a session's credential storage holds for the origin are part of the key")
    func credentialStorage() async throws {
        let server = try LoopbackServer { request in
            guard let credential = request.header("Authorization") else {
                return .respond(
                    status: 401, headers: [ServerHeader(name: "WWW-Authenticate", value: #"Basic realm="api""#)],
                    body: Data())
            }
            return cacheable("for \(credential)", ["Cache-Control": "max-age=60"])
        }
        let space = URLProtectionSpace(
            host: server.host, port: server.port, protocol: "http", realm: "api",
            authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
        let storage = URLCredentialStorage()
        let cache = ResponseCache(memoryCapacity: 1 << 20)
        let client = Self.client(server, cache: cache) { $0.urlCredentialStorage = storage }
        let transport = client.configuration.transport
        let request = URLRequest(url: server.url("/r"))
        func key() -> CacheKey? {
            CacheKey(
                request, additions: transport.additions(to: request), sensitiveHeaders: ["authorization"],
                salt: cache.salt)
        }
        /// What the call returned: the body, or the status it failed with.
        func call() async -> String {
            do {
                let (text, _) = try await Self.get(client)
                return text
            } catch NetworkClientError.unacceptableStatusCode(let status, _, _) {
                return "status \(status)"
            } catch {
                return "\(error)"
            }
        }
        let nobody = try #require(key())
        #expect(nobody.partition.isEmpty)

        let alice = URLCredential(user: "alice", password: "alice's", persistence: .forSession)
        storage.set(alice, for: space)
        let aliceKey = try #require(key())
        let aliceAnswer = await call()
        // Apple's URLSession answers the challenge with the stored credential; corelibs (Swift 6.3) does not.
        #expect(["for Basic " + Data("alice:alice's".utf8).base64EncodedString(), "status 401"].contains(aliceAnswer))

        // Alice signs out, Bob signs in: Bob is never served what Alice's credential fetched.
        storage.remove(alice, for: space)
        storage.set(URLCredential(user: "bob", password: "bob's", persistence: .forSession), for: space)
        let bobKey = try #require(key())
        #expect(Set([nobody.partition, aliceKey.partition, bobKey.partition]).count == 3)
        let bobAnswer = await call()
        #expect(["for Basic " + Data("bob:bob's".utf8).base64EncodedString(), "status 401"].contains(bobAnswer))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A transport of one's own that adds a header field or a credential keys them apart, wrapped or not",
        arguments: ["header field", "credential", "wrapped"])
    func transportOfOnesOwn(_ kind: String) async throws {
        let cache = ResponseCache(memoryCapacity: 1 << 20)
        func client(_ token: String) -> NetworkClient {
            let signing = SigningTransport(token: token, asHeaderField: kind != "credential")
            let transport: any HTTPTransport = kind == "wrapped" ? ForwardingTransport(wrapping: signing) : signing
            let configuration = NetworkConfiguration(transport: transport, baseURL: URL(string: "https://api.test")!)
            configuration.responseCache = cache
            return NetworkClient(configuration: configuration)
        }
        let alice = client("ALICE")
        let bob = client("BOB")
        #expect(try await Self.get(alice) == ("for ALICE", .network))
        #expect(try await Self.get(bob) == ("for BOB", .network))
        #expect(try await Self.get(alice) == ("for ALICE", .fresh))
        #expect(try await Self.get(bob) == ("for BOB", .fresh))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func cookie(_ value: String, for server: LoopbackServer) throws -> HTTPCookie {
        try #require(
            HTTPCookie(properties: [.name: "session", .value: value, .domain: server.host, .path: "/"]))
    }
}

/// A transport that signs every request with its own token, as an engine with a credential of its own does: the
/// server's answer depends on it, and it says so through `additions(to:)`.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private struct SigningTransport: HTTPTransport {
    let token: String
    let asHeaderField: Bool
    let answers: InMemoryTransport

    init(token: String, asHeaderField: Bool) {
        self.token = token
        self.asHeaderField = asHeaderField
        answers = InMemoryTransport { _ in
            InMemoryTransport.Response(headers: ["Cache-Control": "max-age=60"], body: Data("for \(token)".utf8))
        }
    }

    func send(_ exchange: HTTPExchange) async throws {
        try await answers.send(exchange)
    }

    func additions(to request: URLRequest) -> RequestAdditions {
        asHeaderField
            ? RequestAdditions(headerFields: ["Authorization": "Bearer \(token)"])
            : RequestAdditions(credentials: ["token \(token)"])
    }
}

/// A transport that wraps another, as *The pipeline* shows one: it forwards the wrapped one's additions.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private struct ForwardingTransport: HTTPTransport {
    let wrapped: any HTTPTransport

    init(wrapping transport: any HTTPTransport) {
        wrapped = transport
    }

    func send(_ exchange: HTTPExchange) async throws {
        try await wrapped.send(exchange)
    }

    func additions(to request: URLRequest) -> RequestAdditions {
        wrapped.additions(to: request)
    }
}
