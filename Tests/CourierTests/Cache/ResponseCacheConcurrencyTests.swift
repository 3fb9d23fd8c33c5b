import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("ResponseCache: concurrency and other transports")
struct ResponseCacheConcurrencyTests {
    /// The answer of the in-memory origin for `request`: a body naming the path, a lifetime by path (fresh, always
    /// validated, stale-while-revalidate), a 304 to a matching validator, and 204 to unsafe methods.
    private static func answer(_ request: InMemoryTransport.Request) -> InMemoryTransport.Response {
        let path = request.url.path
        if request.method == "POST" { return .status(204) }
        let tag = "\"\(path)\""
        if request.header("If-None-Match") == tag { return .status(304, headers: ["ETag": tag]) }
        let number = Int(path.dropFirst(2)) ?? 0
        let control = ["max-age=60", "max-age=0", "max-age=0, stale-while-revalidate=60", "no-store"][number % 4]
        return InMemoryTransport.Response(
            headers: ["Cache-Control": control, "ETag": tag], body: Data("body for \(path)".utf8))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("10,000 mixed requests, 256 at once: every answer is the right body, the capacity holds, hits happened")
    func concurrentMixedRequests() async throws {
        let transport = InMemoryTransport { request in Self.answer(request) }
        let configuration = NetworkConfiguration(transport: transport, baseURL: URL(string: "https://cache.test")!)
        let cache = ResponseCache(memoryCapacity: 8 * 1024)
        configuration.responseCache = cache
        let client = NetworkClient(configuration: configuration)
        let total = 10_000
        // 256 in flight at once, not 10,000: ten thousand tasks queued on two cooperative threads held every other test
        // of the parallel suite back for over a minute (a sequential-queue test timed out waiting to enqueue).
        let window = 256
        let wrong = try await withThrowingTaskGroup(of: Int.self) { group in
            var wrong = 0
            for index in 0..<total {
                if index >= window { wrong += try await group.next() ?? 0 }
                group.addTask {
                    let path = "/p\(index % 40)"
                    switch index % 50 {
                    case 0:
                        _ = try await client.run(NetworkRequest<VoidRequest, Data>(path: path, method: .post))
                        return 0
                    case 1:
                        cache.removeResponses(for: URL(string: "https://cache.test" + path)!)
                        return 0
                    case 2:
                        cache.removeAll()
                        return 0
                    default:
                        let method: HTTPMethod = index % 7 == 0 ? .head : .get
                        let response = try await client.run(
                            NetworkRequest<VoidRequest, Data>(path: path, method: method))
                        let expected = method == .head ? Data() : Data("body for \(path)".utf8)
                        return response.value == expected && response.statusCode == 200 ? 0 : 1
                    }
                }
            }
            return try await group.reduce(wrong, +)
        }
        #expect(wrong == 0)
        #expect(cache.currentMemoryUsage <= 8 * 1024)
        #expect(transport.requests.count < total)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The cache serves InMemoryTransport as it serves URLSession: a fresh hit sends nothing")
    func inMemoryTransport() async throws {
        let transport = InMemoryTransport { request in Self.answer(request) }
        let configuration = NetworkConfiguration(transport: transport, baseURL: URL(string: "https://cache.test")!)
        configuration.responseCache = ResponseCache(memoryCapacity: 1 << 20)
        let client = NetworkClient(configuration: configuration)
        _ = try await client.run(NetworkRequest<VoidRequest, Data>(path: "/p0", method: .get))
        let hit = try await client.run(NetworkRequest<VoidRequest, Data>(path: "/p0", method: .get))
        _ = try await client.run(NetworkRequest<VoidRequest, Data>(path: "/p1", method: .get))
        let revalidated = try await client.run(NetworkRequest<VoidRequest, Data>(path: "/p1", method: .get))
        #expect(hit.cacheStatus == .fresh && revalidated.cacheStatus == .revalidated)
        #expect(
            transport.requests.map(\.description) == [
                "GET https://cache.test/p0", "GET https://cache.test/p1", "GET https://cache.test/p1",
            ])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Decorators work unchanged above the cache: a retried call is served from the cache")
    func decoratorsAbove() async throws {
        let transport = InMemoryTransport { request in Self.answer(request) }
        let configuration = NetworkConfiguration(transport: transport, baseURL: URL(string: "https://cache.test")!)
        configuration.responseCache = ResponseCache(memoryCapacity: 1 << 20)
        let client = NetworkClient(configuration: configuration).retrying().deduplicated()
        _ = try await client.run(NetworkRequest<VoidRequest, Data>(path: "/p0", method: .get))
        let again = try await client.run(NetworkRequest<VoidRequest, Data>(path: "/p0", method: .get))
        #expect(again.cacheStatus == .fresh && transport.requests.count == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A download is never cached: it goes to the transport every time")
    func downloadsBypass() async throws {
        let transport = InMemoryTransport { request in Self.answer(request) }
        let configuration = NetworkConfiguration(transport: transport, baseURL: URL(string: "https://cache.test")!)
        configuration.responseCache = ResponseCache(memoryCapacity: 1 << 20)
        let client = NetworkClient(configuration: configuration)
        for _ in 0..<2 {
            let file = try await client.run(NetworkRequest<VoidRequest, DownloadedFile>(path: "/p0", method: .get))
            #expect(file.cacheStatus == .network)
            try? FileManager.default.removeItem(at: file.value.url)
        }
        #expect(transport.requests.count == 2)
    }
}
