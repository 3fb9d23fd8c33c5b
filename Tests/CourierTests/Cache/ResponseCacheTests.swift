import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A loopback origin whose answers a test writes, counting the requests that reach it (the server-side counter).
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct CacheOrigin {
    let server: LoopbackServer
    let cache: ResponseCache
    let client: NetworkClient

    /// `answer` gets each request and its 1-based number.
    init(
        cache: ResponseCache = ResponseCache(memoryCapacity: 1 << 20),
        _ answer: @escaping @Sendable (ServerRequest, Int) -> ServerResponse
    ) throws {
        let counter = Locked(0)
        server = try LoopbackServer { request in
            let number = counter.withLock { count -> Int in
                count += 1
                return count
            }
            return answer(request, number)
        }
        self.cache = cache
        let configuration = server.configuration()
        configuration.responseCache = cache
        client = NetworkClient(configuration: configuration)
    }

    /// Requests that reached the server.
    var count: Int { server.requestCount }

    /// GETs (or `method`s) `path` and returns the body as text and the response.
    @discardableResult
    func get(
        _ path: String = "/r", method: HTTPMethod = .get, headers: [String: String]? = nil,
        accepting: Set<Int>? = nil
    ) async throws -> (text: String, response: NetworkResponse<Data>) {
        let response = try await client.run(
            NetworkRequest<VoidRequest, Data>(
                path: path, method: method, additionalHeaders: headers, acceptableStatusCodes: accepting))
        return (String(decoding: response.value, as: UTF8.self), response)
    }
}

/// A response with these header fields and body.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func cacheable(_ body: String, status: Int = 200, _ fields: [String: String]) -> ServerResponse {
    .respond(status: status, headers: fields.map { ServerHeader(name: $0.key, value: $0.value) }, body: Data(body.utf8))
}

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
extension NetworkResponse {
    func header(_ name: String) -> String? {
        (response as? HTTPURLResponse)?.value(forHTTPHeaderField: name)
    }
}

/// An HTTP date `offset` seconds from now.
func httpDate(_ offset: TimeInterval = 0) -> String {
    HTTPDate.format(Date().timeIntervalSince1970 + offset)
}

@Suite("ResponseCache: RFC 9111 against a loopback origin")
struct ResponseCacheTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A fresh response is served from the cache: the server sees one request, the caller an Age")
    func freshHit() async throws {
        let origin = try CacheOrigin { _, n in cacheable("v\(n)", ["Cache-Control": "max-age=60"]) }
        let first = try await origin.get()
        let second = try await origin.get()
        #expect(first.text == "v1" && first.response.cacheStatus == .network)
        #expect(second.text == "v1" && second.response.cacheStatus == .fresh)
        #expect(second.response.header("Age") != nil)
        #expect(origin.count == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Nothing is cached without a ResponseCache")
    func noCacheByDefault() async throws {
        let server = try LoopbackServer { _ in cacheable("v", ["Cache-Control": "max-age=60"]) }
        let client = NetworkClient(configuration: server.configuration())
        for _ in 0..<2 {
            let response = try await client.run(NetworkRequest<VoidRequest, Data>(path: "/r", method: .get))
            #expect(response.cacheStatus == .network)
        }
        #expect(server.requestCount == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A stale response is validated with its ETag; a 304 serves the stored body")
    func staleValidatedWithETag() async throws {
        let origin = try CacheOrigin { request, _ in
            if request.header("If-None-Match") == "\"a\"" { return cacheable("", status: 304, ["ETag": "\"a\""]) }
            return cacheable("body", ["Cache-Control": "max-age=0", "ETag": "\"a\""])
        }
        try await origin.get()
        let second = try await origin.get()
        #expect(second.text == "body" && second.response.cacheStatus == .revalidated)
        #expect(second.response.statusCode == 200)
        #expect(origin.server.recordedRequests.last?.header("If-None-Match") == "\"a\"")
        #expect(origin.count == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A stale response with only Last-Modified is validated with If-Modified-Since")
    func staleValidatedWithLastModified() async throws {
        let modified = httpDate(-3600)
        let origin = try CacheOrigin { request, _ in
            if request.header("If-Modified-Since") == modified { return cacheable("", status: 304, [:]) }
            return cacheable("body", ["Cache-Control": "no-cache", "Last-Modified": modified])
        }
        try await origin.get()
        let second = try await origin.get()
        #expect(second.text == "body" && second.response.cacheStatus == .revalidated)
        #expect(origin.server.recordedRequests.last?.header("If-Modified-Since") == modified)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A 304 updates the stored header fields, and its new lifetime holds")
    func notModifiedMergesHeaders() async throws {
        let origin = try CacheOrigin { request, _ in
            if request.header("If-None-Match") != nil {
                return cacheable("", status: 304, ["ETag": "\"a\"", "Cache-Control": "max-age=60", "X-Version": "2"])
            }
            return cacheable("body", ["Cache-Control": "max-age=0", "ETag": "\"a\"", "X-Version": "1"])
        }
        try await origin.get()
        let revalidated = try await origin.get()
        let third = try await origin.get()
        #expect(revalidated.response.header("X-Version") == "2")
        #expect(third.response.cacheStatus == .fresh && third.response.header("X-Version") == "2")
        #expect(third.text == "body")
        #expect(origin.count == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A 200 to a validation replaces the stored response")
    func fullResponseReplaces() async throws {
        let origin = try CacheOrigin { _, n in
            cacheable("v\(n)", ["Cache-Control": n == 1 ? "max-age=0" : "max-age=60", "ETag": "\"\(n)\""])
        }
        try await origin.get()
        let second = try await origin.get()
        let third = try await origin.get()
        #expect(second.text == "v2" && second.response.cacheStatus == .network)
        #expect(third.text == "v2" && third.response.cacheStatus == .fresh)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Heuristic freshness: a response with Last-Modified long ago and no lifetime is served fresh")
    func heuristicFreshness() async throws {
        let origin = try CacheOrigin { _, n in
            cacheable("v\(n)", ["Date": httpDate(), "Last-Modified": httpDate(-100 * 86_400)])
        }
        try await origin.get()
        let second = try await origin.get()
        #expect(second.text == "v1" && second.response.cacheStatus == .fresh)
        #expect(origin.count == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Expires with Date gives the lifetime; an Expires in the past is stale")
    func expiresAndDate() async throws {
        let origin = try CacheOrigin { request, n in
            request.path == "/future"
                ? cacheable("f\(n)", ["Date": httpDate(), "Expires": httpDate(600)])
                : cacheable("p\(n)", ["Date": httpDate(), "Expires": httpDate(-600)])
        }
        try await origin.get("/future")
        try await origin.get("/past")
        #expect(try await origin.get("/future").response.cacheStatus == .fresh)
        #expect(try await origin.get("/past").response.cacheStatus == .network)
        #expect(origin.count == 3)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("An Age from upstream counts: max-age=60 with Age: 100 is already stale")
    func upstreamAge() async throws {
        let origin = try CacheOrigin { _, n in cacheable("v\(n)", ["Cache-Control": "max-age=60", "Age": "100"]) }
        try await origin.get()
        #expect(try await origin.get().response.cacheStatus == .network)
        #expect(origin.count == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("s-maxage is ignored by a private cache")
    func sharedMaxAgeIgnored() async throws {
        let origin = try CacheOrigin { _, n in cacheable("v\(n)", ["Cache-Control": "s-maxage=600, max-age=0"]) }
        try await origin.get()
        #expect(try await origin.get().response.cacheStatus == .network)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Vary: a request with another value of the varying field is not served the stored response")
    func varyMismatch() async throws {
        let origin = try CacheOrigin { request, _ in
            cacheable(
                request.header("Accept-Language") ?? "none", ["Cache-Control": "max-age=60", "Vary": "Accept-Language"])
        }
        try await origin.get(headers: ["Accept-Language": "en"])
        let other = try await origin.get(headers: ["Accept-Language": "fr"])
        let same = try await origin.get(headers: ["Accept-Language": "fr"])
        #expect(other.text == "fr" && other.response.cacheStatus == .network)
        #expect(same.text == "fr" && same.response.cacheStatus == .fresh)
        #expect(origin.count == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Vary: * is never served from the cache")
    func varyStar() async throws {
        let origin = try CacheOrigin { _, n in cacheable("v\(n)", ["Cache-Control": "max-age=60", "Vary": "*"]) }
        try await origin.get()
        #expect(try await origin.get().text == "v2")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A response with no-store is not stored")
    func responseNoStore() async throws {
        let origin = try CacheOrigin { _, n in cacheable("v\(n)", ["Cache-Control": "no-store, max-age=60"]) }
        try await origin.get()
        #expect(try await origin.get().text == "v2")
        #expect(origin.cache.currentMemoryUsage == 0)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A request with no-store is neither served from the cache nor stored")
    func requestNoStore() async throws {
        let origin = try CacheOrigin { _, n in cacheable("v\(n)", ["Cache-Control": "max-age=60"]) }
        try await origin.get()
        let bypassed = try await origin.get(headers: ["Cache-Control": "no-store"])
        #expect(bypassed.text == "v2" && bypassed.response.cacheStatus == .network)
        #expect(try await origin.get().text == "v1")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Set-Cookie is never stored, and never served again")
    func setCookieNotStored() async throws {
        let server = try LoopbackServer { _ in
            cacheable("v", ["Cache-Control": "max-age=60", "Set-Cookie": "session=secret"])
        }
        // A session that sends no cookie: one that sent this one would key the next request apart (see
        // RequestAdditionsTests).
        let client = RequestAdditionsTests.client(server, cache: ResponseCache(memoryCapacity: 1 << 20)) {
            $0.httpShouldSetCookies = false
        }
        let request = NetworkRequest<VoidRequest, Data>(path: "/r", method: .get)
        #expect(try await client.run(request).header("Set-Cookie") == "session=secret")
        let cached = try await client.run(request)
        #expect(cached.cacheStatus == .fresh)
        #expect(cached.header("Set-Cookie") == nil)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Authorization isolates: one credential's response is never served to another, or to none")
    func authorizationIsolation() async throws {
        let origin = try CacheOrigin { request, _ in
            cacheable(request.header("Authorization") ?? "anonymous", ["Cache-Control": "private, max-age=60"])
        }
        try await origin.get(headers: ["Authorization": "Bearer alice"])
        let bob = try await origin.get(headers: ["Authorization": "Bearer bob"])
        let anonymous = try await origin.get()
        let alice = try await origin.get(headers: ["Authorization": "Bearer alice"])
        #expect(bob.text == "Bearer bob" && bob.response.cacheStatus == .network)
        #expect(anonymous.text == "anonymous" && anonymous.response.cacheStatus == .network)
        #expect(alice.text == "Bearer alice" && alice.response.cacheStatus == .fresh)
        #expect(origin.count == 3)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A successful POST invalidates the stored response for its URL")
    func invalidationAfterPost() async throws {
        let origin = try CacheOrigin { request, n in
            request.method == "POST" ? cacheable("posted", [:]) : cacheable("v\(n)", ["Cache-Control": "max-age=60"])
        }
        try await origin.get()
        try await origin.get(method: .post)
        let after = try await origin.get()
        #expect(after.text == "v3" && after.response.cacheStatus == .network)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A failed DELETE invalidates nothing")
    func failedUnsafeKeeps() async throws {
        let origin = try CacheOrigin { request, n in
            request.method == "DELETE"
                ? cacheable("no", status: 403, [:]) : cacheable("v\(n)", ["Cache-Control": "max-age=60"])
        }
        try await origin.get()
        _ = try? await origin.get(method: .delete)
        #expect(try await origin.get().response.cacheStatus == .fresh)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A PUT's Location and Content-Location on the same origin are invalidated too")
    func invalidationOfLocation() async throws {
        let origin = try CacheOrigin { request, n in
            request.method == "PUT"
                ? cacheable("", status: 201, ["Location": "/other", "Content-Location": "/third"])
                : cacheable("v\(n)", ["Cache-Control": "max-age=60"])
        }
        try await origin.get("/other")
        try await origin.get("/third")
        try await origin.get("/kept")
        try await origin.get("/r", method: .put)
        #expect(try await origin.get("/other").response.cacheStatus == .network)
        #expect(try await origin.get("/third").response.cacheStatus == .network)
        #expect(try await origin.get("/kept").response.cacheStatus == .fresh)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("only-if-cached with nothing stored answers 504 and sends nothing")
    func onlyIfCachedMiss() async throws {
        let origin = try CacheOrigin { _, _ in cacheable("v", ["Cache-Control": "max-age=60"]) }
        let answer = try await origin.get(headers: ["Cache-Control": "only-if-cached"], accepting: [504])
        #expect(answer.response.statusCode == 504 && answer.response.cacheStatus == .unavailable)
        await #expect(throws: NetworkClientError.self) {
            try await origin.get(headers: ["Cache-Control": "only-if-cached"])
        }
        #expect(origin.count == 0)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("only-if-cached with a stored response serves it, even stale")
    func onlyIfCachedHit() async throws {
        let origin = try CacheOrigin { _, _ in cacheable("v", ["Cache-Control": "max-age=60"]) }
        try await origin.get()
        let hit = try await origin.get(headers: ["Cache-Control": "only-if-cached, max-stale"])
        #expect(hit.text == "v" && hit.response.cacheStatus == .fresh)
        #expect(origin.count == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Request no-cache and max-age=0 force validation of a fresh response")
    func requestForcesValidation() async throws {
        let origin = try CacheOrigin { request, _ in
            request.header("If-None-Match") != nil
                ? cacheable("", status: 304, ["ETag": "\"a\""])
                : cacheable("body", ["Cache-Control": "max-age=600", "ETag": "\"a\""])
        }
        try await origin.get()
        #expect(try await origin.get(headers: ["Cache-Control": "no-cache"]).response.cacheStatus == .revalidated)
        #expect(try await origin.get(headers: ["Cache-Control": "max-age=0"]).response.cacheStatus == .revalidated)
        #expect(try await origin.get(headers: ["Pragma": "no-cache"]).response.cacheStatus == .revalidated)
        #expect(origin.count == 4)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Request min-fresh asks for more lifetime left than there is")
    func minFresh() async throws {
        let origin = try CacheOrigin { _, n in cacheable("v\(n)", ["Cache-Control": "max-age=60"]) }
        try await origin.get()
        #expect(try await origin.get(headers: ["Cache-Control": "min-fresh=120"]).text == "v2")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Request max-stale accepts a stale response")
    func maxStale() async throws {
        let origin = try CacheOrigin { _, n in cacheable("v\(n)", ["Cache-Control": "max-age=0"]) }
        try await origin.get()
        let stale = try await origin.get(headers: ["Cache-Control": "max-stale=600"])
        #expect(stale.text == "v1" && stale.response.cacheStatus == .fresh)
        #expect(origin.count == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("must-revalidate: a stale response is not served under max-stale")
    func mustRevalidate() async throws {
        let origin = try CacheOrigin { _, n in cacheable("v\(n)", ["Cache-Control": "max-age=0, must-revalidate"]) }
        try await origin.get()
        #expect(try await origin.get(headers: ["Cache-Control": "max-stale=600"]).text == "v2")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("stale-if-error serves the stale body when the server cannot be reached")
    func staleIfErrorOnConnectionFailure() async throws {
        let origin = try CacheOrigin { _, _ in cacheable("kept", ["Cache-Control": "max-age=0, stale-if-error=600"]) }
        try await origin.get()
        origin.server.stop()
        let stale = try await origin.get()
        #expect(stale.text == "kept" && stale.response.cacheStatus == .staleOnError)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("stale-if-error serves the stale body when the server answers 503")
    func staleIfErrorOn503() async throws {
        let origin = try CacheOrigin { _, n in
            n == 1
                ? cacheable("kept", ["Cache-Control": "max-age=0, stale-if-error=600"])
                : cacheable("down", status: 503, [:])
        }
        try await origin.get()
        let stale = try await origin.get()
        #expect(stale.text == "kept" && stale.response.cacheStatus == .staleOnError)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Without stale-if-error a connection failure fails the call")
    func noStaleIfError() async throws {
        let origin = try CacheOrigin { _, _ in cacheable("kept", ["Cache-Control": "max-age=0"]) }
        try await origin.get()
        origin.server.stop()
        await #expect(throws: NetworkClientError.self) { try await origin.get() }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("stale-while-revalidate serves the stale body at once and revalidates in the background")
    func staleWhileRevalidate() async throws {
        let origin = try CacheOrigin { _, n in
            cacheable("v\(n)", ["Cache-Control": "max-age=0, stale-while-revalidate=600"])
        }
        try await origin.get()
        let stale = try await origin.get()
        #expect(stale.text == "v1" && stale.response.cacheStatus == .staleWhileRevalidating)
        #expect(await eventually { origin.count == 2 })
        // The background answer replaced the stored one.
        #expect(
            await eventually(timeout: promptly) {
                origin.cache.lookup(CacheKey(url: origin.server.url("/r").absoluteString, partition: ""))?.body
                    == Data("v2".utf8)
            })
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A HEAD is answered from the stored GET, without a body")
    func headFromStoredGet() async throws {
        let origin = try CacheOrigin { _, n in cacheable("v\(n)", ["Cache-Control": "max-age=60", "X-Kind": "get"]) }
        try await origin.get()
        let head = try await origin.get(method: .head)
        #expect(head.response.cacheStatus == .fresh && head.response.header("X-Kind") == "get")
        #expect(head.response.data.isEmpty)
        #expect(origin.count == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A cached redirect is followed by Courier's redirect rules like a network one")
    func cachedRedirect() async throws {
        let origin = try CacheOrigin { request, n in
            request.path == "/old"
                ? .redirect(
                    status: 301, location: "/new", headers: [ServerHeader(name: "Cache-Control", value: "max-age=60")])
                : cacheable("new\(n)", ["Cache-Control": "max-age=60"])
        }
        let first = try await origin.get("/old")
        let second = try await origin.get("/old")
        #expect(first.text == second.text)
        #expect(second.response.cacheStatus == .fresh)
        #expect(origin.count == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The caller's own conditional request goes to the server as it is")
    func callerConditionalPassesThrough() async throws {
        let origin = try CacheOrigin { request, _ in
            request.header("If-None-Match") != nil
                ? cacheable("", status: 304, [:]) : cacheable("v", ["Cache-Control": "max-age=60", "ETag": "\"a\""])
        }
        try await origin.get()
        let own = try await origin.get(headers: ["If-None-Match": "\"a\""], accepting: [304])
        #expect(own.response.statusCode == 304 && own.response.cacheStatus == .network)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A stored body larger than a request's size limit is refused like a network one")
    func sizeLimitHoldsForCachedBodies() async throws {
        let origin = try CacheOrigin { _, _ in
            cacheable(String(repeating: "x", count: 1_000), ["Cache-Control": "max-age=60"])
        }
        try await origin.get()
        let error = await #expect(throws: NetworkClientError.self) {
            try await origin.client.run(
                NetworkRequest<VoidRequest, Data>(path: "/r", method: .get, maximumResponseSize: 100))
        }
        guard case .responseTooLarge(limit: 100) = error else {
            Issue.record("expected responseTooLarge, got \(String(describing: error))")
            return
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("removeResponses(for:) and removeAll() empty the cache")
    func removal() async throws {
        let origin = try CacheOrigin { _, n in cacheable("v\(n)", ["Cache-Control": "max-age=60"]) }
        try await origin.get("/a", headers: ["Authorization": "one"])
        try await origin.get("/a", headers: ["Authorization": "two"])
        try await origin.get("/b")
        origin.cache.removeResponses(for: origin.server.url("/a"))
        #expect(try await origin.get("/a", headers: ["Authorization": "one"]).response.cacheStatus == .network)
        #expect(try await origin.get("/b").response.cacheStatus == .fresh)
        origin.cache.removeAll()
        #expect(origin.cache.currentMemoryUsage == 0)
        #expect(try await origin.get("/b").response.cacheStatus == .network)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Memory capacity is a hard limit: ten times the capacity stored, never more than the capacity held")
    func memoryCapacity() async throws {
        let capacity = 64 * 1024
        let origin = try CacheOrigin(cache: ResponseCache(memoryCapacity: capacity)) { _, n in
            cacheable(String(repeating: "m", count: 5_000) + "\(n)", ["Cache-Control": "max-age=60"])
        }
        for index in 0..<130 {
            try await origin.get("/item\(index)")
            #expect(origin.cache.currentMemoryUsage <= capacity)
        }
        // The most recent is kept, the oldest is gone.
        #expect(try await origin.get("/item129").response.cacheStatus == .fresh)
        #expect(try await origin.get("/item0").response.cacheStatus == .network)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A response larger than a tenth of the capacity is not stored")
    func entryFraction() async throws {
        let origin = try CacheOrigin(cache: ResponseCache(memoryCapacity: 10_000)) { _, n in
            cacheable(String(repeating: "b", count: 2_000) + "\(n)", ["Cache-Control": "max-age=60"])
        }
        try await origin.get()
        #expect(try await origin.get().response.cacheStatus == .network)
        #expect(origin.cache.currentMemoryUsage == 0)
    }
}
