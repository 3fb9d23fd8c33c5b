import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Appends its mark to `X-Order`, to show the order interceptors run in.
private struct Mark: NetworkRequestInterceptor {
    let mark: String

    func intercept(_ request: URLRequest) async throws -> URLRequest {
        var request = request
        let order = request.value(forHTTPHeaderField: "X-Order").map { "\($0)," } ?? ""
        request.setValue(order + mark, forHTTPHeaderField: "X-Order")
        return request
    }
}

private struct Refusal: Error {}

private struct Refuse: NetworkRequestInterceptor {
    func intercept(_ request: URLRequest) async throws -> URLRequest { throw Refusal() }
}

/// Records the responses it sees; throws `Refusal` when asked to.
private final class ResponseRecorder: NetworkResponseInterceptor, Sendable {
    let name: String
    let log: Locked<[String]>
    let refuses: Bool

    init(_ name: String, log: Locked<[String]>, refuses: Bool = false) {
        self.name = name
        self.log = log
        self.refuses = refuses
    }

    func intercept<ResponseModel: Sendable>(
        _ response: NetworkResponse<ResponseModel>, _ data: Data
    ) async throws -> NetworkResponse<ResponseModel> {
        log.withLock { $0.append("\(name):\(response.statusCode):\(data.count)") }
        if refuses { throw Refusal() }
        return response
    }
}

/// A session double that answers every request with `status` and records what it was handed.
private final class SessionDouble: URLSessionProtocol, Sendable {
    let status: Int
    let failure: URLError?
    let requests = Locked<[URLRequest]>([])

    init(status: Int = 200, failure: URLError? = nil) {
        self.status = status
        self.failure = failure
    }

    func data(for request: URLRequest, delegate: (any URLSessionTaskDelegate)?) async throws -> (Data, URLResponse) {
        requests.withLock { $0.append(request) }
        if let failure { throw failure }
        let response = HTTPURLResponse(
            url: request.url!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: nil)!
        return (Data(#"{"id":1,"title":"t"}"#.utf8), response)
    }
}

@Suite("MicroClient compatibility")
struct MicroClientCompatibilityTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("0.0.6 parameters: sorted by name, nil values kept as bare names, nil stays nil")
    func parameters() {
        let items = MicroClientParameters.queryItems(["b": "2", "a": nil, "c": "x y"])
        #expect(
            items == [
                URLQueryItem(name: "a", value: nil), URLQueryItem(name: "b", value: "2"),
                .init(name: "c", value: "x y"),
            ])
        #expect(MicroClientParameters.queryItems(nil) == nil)
        #expect(MicroClientParameters.queryItems([:]) == [])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("0.0.8 scheme and hostname: the base URL, a port kept, no host fails every request with invalidURL")
    func schemeAndHostname() async throws {
        #expect(MicroClientHost.baseURL(scheme: "https", hostname: "micro.blog").absoluteString == "https://micro.blog")
        #expect(MicroClientHost.baseURL(scheme: "http", hostname: "localhost:8080").port == 8080)
        let broken = MicroClientHost.baseURL(scheme: "https", hostname: "")
        let client = NetworkClient(
            configuration: NetworkConfiguration(sessionConfiguration: .ephemeral, baseURL: broken))
        await #expect {
            _ = try await client.run(NetworkRequest<VoidRequest, VoidResponse>(path: "/x", method: .get))
        } throws: { error in
            guard case NetworkClientError.invalidURL = error else { return false }
            return true
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("0.0.15 queryItems: read as an array through the optional, nil reads as empty")
    func queryItemsAsArray() {
        let request = NetworkRequest<VoidRequest, VoidResponse>(
            method: .get, queryItems: [URLQueryItem(name: "q", value: "a"), URLQueryItem(name: "flag", value: nil)])
        let items = request.queryItems
        #expect(items.contains(URLQueryItem(name: "q", value: "a")))
        #expect(items.count == 2 && !items.isEmpty)
        #expect(items[1].value == nil)
        #expect(items.first?.name == "q" && items?.last?.name == "flag")
        #expect(items.first { $0.name == "flag" } != nil)
        #expect(items.contains { $0.name == "flag" })
        #expect(request.queryItems?.first?.name == "q")
        let none = NetworkRequest<VoidRequest, VoidResponse>(method: .get).queryItems
        #expect(none.isEmpty && none.count == 0 && none.first == nil && !none.contains { _ in true })
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @available(*, deprecated, message: "Tests MicroClient's interceptor closures and credential interceptors")
    @Test("The interceptor closures run first, then the interceptor values in order; the ready ones set their headers")
    func interceptorsInOrder() async throws {
        let server = try echoServer()
        let configuration = server.configuration()
        configuration.interceptor = { request in
            var request = request
            request.setValue("sync", forHTTPHeaderField: "X-Order")
            return request
        }
        configuration.asyncInterceptor = { try await Mark(mark: "async").intercept($0) }
        configuration.interceptors = [
            Mark(mark: "first"), Mark(mark: "second"),
            BearerAuthorizationInterceptor { "token" }, UserAgentInterceptor(appName: "App", version: "1.2"),
            APIKeyInterceptor(apiKey: "k"), CacheControlInterceptor(policy: .maxAge(seconds: 60)),
            RequestIDInterceptor(), AcceptHeaderInterceptor(acceptType: "text/plain"),
            TimeoutInterceptor(timeout: 5),
        ]
        _ = try await NetworkClient(configuration: configuration).run(Echo(path: "/i", method: .get))
        let received = try #require(server.recordedRequests.last)
        #expect(received.header("X-Order") == "sync,async,first,second")
        #expect(received.header("Authorization") == "Bearer token")
        #expect(received.header("User-Agent") == "App/1.2")
        #expect(received.header("X-API-Key") == "k")
        #expect(received.header("Cache-Control") == "max-age=60")
        #expect(received.header("Accept") == "text/plain")
        #expect(UUID(uuidString: received.header("X-Request-ID") ?? "") != nil)

        let basic = try await BasicAuthInterceptor(username: "u", password: "p").intercept(
            URLRequest(url: server.baseURL))
        #expect(basic.value(forHTTPHeaderField: "Authorization") == "Basic dTpw")
        let none = try await BearerAuthorizationInterceptor { nil }.intercept(URLRequest(url: server.baseURL))
        #expect(none.value(forHTTPHeaderField: "Authorization") == nil)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @available(*, deprecated, message: "Tests MicroClient's request initializers with interceptors")
    @Test(
        "A throwing interceptor is interceptorFailed, nothing sent; a request's own interceptors replace the configuration's"
    )
    func interceptorFailureAndReplacement() async throws {
        let server = try echoServer()
        let configuration = server.configuration()
        configuration.interceptors = [Refuse()]
        let client = NetworkClient(configuration: configuration)
        await #expect {
            _ = try await client.run(Echo(path: "/refused", method: .get))
        } throws: { error in
            guard case NetworkClientError.interceptorFailed(let underlying) = error else { return false }
            return underlying is Refusal
        }
        #expect(server.requestCount == 0)

        let own = Echo(path: "/own", method: .get, interceptors: [Mark(mark: "own")])
        #expect(own.interceptors?.count == 1)
        _ = try await client.run(own)
        #expect(server.recordedRequests.last?.header("X-Order") == "own")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @available(*, deprecated, message: "Tests MicroClient's request initializers with interceptors")
    @Test("DeduplicatingClient never shares a request that carries interceptors of its own")
    func requestInterceptorsAreNotShared() async throws {
        let gate = Gate()
        let server = try gatedServer(gate, answering: .echo)
        let client = server.client().deduplicated()
        let request = Echo(path: "/same", method: .get, interceptors: [Mark(mark: "own")])
        async let first = client.run(request)
        async let second = client.run(request)
        #expect(await eventually { server.requestCount == 2 })
        gate.open()
        _ = try await (first, second)
        #expect(server.requestCount == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @available(*, deprecated, message: "Tests MicroClient's request initializers with interceptors")
    @Test("Response interceptors run in order on success; their error reaches the caller unchanged")
    func responseInterceptors() async throws {
        let server = try echoServer()
        let client = server.client()
        let log = Locked<[String]>([])
        let request = Echo(
            path: "/r", method: .get,
            responseInterceptors: [ResponseRecorder("a", log: log), ResponseRecorder("b", log: log)])
        let response = try await client.run(request)
        #expect(log.withLock { $0 } == ["a:200:\(response.data.count)", "b:200:\(response.data.count)"])

        let refused = Echo(
            path: "/r", method: .get, responseInterceptors: [ResponseRecorder("c", log: log, refuses: true)])
        await #expect(throws: Refusal.self) { _ = try await client.run(refused) }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A retry strategy is Courier's RetryingClient: a GET's 503 retried, a POST's not; every attempt logged")
    func retryAndLogging() async throws {
        let server = try failingThenEcho([status(503), status(503)])
        let configuration = server.configuration()
        let entries = Locked<[String]>([])
        configuration.install(
            MicroClientOptions(
                retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: 0.01),
                log: MicroClientOptions.Log(
                    level: .info, sink: { entry in entries.withLock { $0.append(entry.description) } })))
        let client = NetworkClient(configuration: configuration)
        _ = try await client.run(
            Echo(path: "/get", method: .get, queryItems: [URLQueryItem(name: "api_key", value: "s3cret")]))
        #expect(server.requestCount == 3)
        let lines = entries.withLock { $0 }
        #expect(lines.count == 3)
        #expect(lines.first?.contains("-> 503") == true)
        #expect(!lines.contains { $0.contains("s3cret") })

        let posts = try failingThenEcho([status(503)])
        let postConfiguration = posts.configuration()
        postConfiguration.install(MicroClientOptions(retryPolicy: RetryPolicy(maxAttempts: 3)))
        await #expect(throws: NetworkClientError.self) {
            _ = try await NetworkClient(configuration: postConfiguration).run(
                NetworkRequest<VoidRequest, VoidResponse>(path: "/post", method: .post))
        }
        #expect(posts.requestCount == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A request's own attempts and response interceptors replace the configuration's, on a plain configuration too; such a request is never shared"
    )
    func requestLevelReplacesConfiguration() async throws {
        let retryNow = status(503, [ServerHeader(name: "Retry-After", value: "0")])
        // A plain Courier configuration: the request's own attempts are a RetryingClient for it alone.
        let plain = try failingThenEcho([retryNow, retryNow])
        var retried = Echo(path: "/get", method: .get)
        retried.adopt(interceptors: nil, maxAttempts: 3, responseInterceptors: nil)
        #expect(!retried.options.allowsSharing)
        _ = try await plain.client().run(retried)
        #expect(plain.requestCount == 3)
        _ = try await plain.client().run(Echo(path: "/once", method: .get))
        #expect(plain.requestCount == 4)

        // A configuration whose stack retries 3 times, logs and has a response interceptor.
        let server = try failingThenEcho([retryNow, retryNow, retryNow])
        let configuration = server.configuration()
        let entries = Locked<[String]>([])
        let seen = Locked<[String]>([])
        configuration.install(
            MicroClientOptions(
                retryPolicy: RetryPolicy(maxAttempts: 3, baseDelay: 0),
                log: MicroClientOptions.Log(
                    level: .info, sink: { entry in entries.withLock { $0.append("\(entry)") } }),
                responseInterceptors: [ResponseRecorder("configured", log: seen)]))
        let client = NetworkClient(configuration: configuration)
        // One attempt of its own: no retry, still logged, the configuration's response interceptors.
        var once = Echo(path: "/once", method: .get)
        once.adopt(interceptors: nil, maxAttempts: 1, responseInterceptors: nil)
        await #expect(throws: NetworkClientError.self) { _ = try await client.run(once) }
        #expect(server.requestCount == 1 && entries.withLock { $0.count } == 1 && seen.withLock { $0.isEmpty })
        // Its own response interceptors: the configuration's retries (two more 503s, then the echo) and logger.
        var own = Echo(path: "/own", method: .get)
        own.adopt(interceptors: nil, maxAttempts: nil, responseInterceptors: [ResponseRecorder("own", log: seen)])
        _ = try await client.run(own)
        #expect(server.requestCount == 4 && entries.withLock { $0.count } == 4)
        #expect(seen.withLock { $0.map { $0.prefix(4) } } == ["own:"])
        // Neither: the stack the client built once.
        _ = try await client.run(Echo(path: "/plain", method: .get))
        #expect(server.requestCount == 5 && entries.withLock { $0.count } == 5)
        #expect(seen.withLock { $0.last?.hasPrefix("configured:") } == true)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A URLSessionProtocol double gets the finished request; its URLError is transportFailed; a status is checked")
    func sessionDouble() async throws {
        let double = SessionDouble()
        let configuration = NetworkConfiguration(
            anySession: double, defaultDecoder: JSONDecoder(), defaultEncoder: JSONEncoder(),
            baseURL: URL(string: "https://api.example/v1")!)
        configuration.interceptors = [Mark(mark: "m")]
        let post = try await NetworkClient(configuration: configuration).run(
            NetworkRequest<VoidRequest, Post>(path: "/posts/1", method: .get))
        #expect(post.value == Post(id: 1, title: "t"))
        let sent = try #require(double.requests.withLock { $0.first })
        #expect(sent.url?.absoluteString == "https://api.example/v1/posts/1")
        #expect(sent.value(forHTTPHeaderField: "X-Order") == "m")

        let failing = NetworkConfiguration(
            anySession: SessionDouble(failure: URLError(.timedOut)), defaultDecoder: JSONDecoder(),
            defaultEncoder: JSONEncoder(), baseURL: URL(string: "https://api.example")!)
        await #expect {
            _ = try await NetworkClient(configuration: failing).run(NetworkRequest<VoidRequest, Post>(method: .get))
        } throws: { error in
            guard case NetworkClientError.transportFailed(let urlError) = error else { return false }
            return urlError.code == .timedOut
        }

        let notFound = NetworkConfiguration(
            anySession: SessionDouble(status: 404), defaultDecoder: JSONDecoder(), defaultEncoder: JSONEncoder(),
            baseURL: URL(string: "https://api.example")!)
        await #expect {
            _ = try await NetworkClient(configuration: notFound).run(NetworkRequest<VoidRequest, Post>(method: .get))
        } throws: { error in
            guard case NetworkClientError.unacceptableStatusCode(404, _, let data?) = error else { return false }
            return !data.isEmpty
        }

        let real = NetworkConfiguration(
            anySession: URLSession.shared, defaultDecoder: JSONDecoder(), defaultEncoder: JSONEncoder(),
            baseURL: URL(string: "https://api.example")!)
        #expect(
            !(real.transport is URLSessionDoubleTransport),
            "a URLSession passed as URLSessionProtocol is used as a session, not as a double")
    }
}
