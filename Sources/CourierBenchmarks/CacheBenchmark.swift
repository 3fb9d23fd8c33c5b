import Courier
import Foundation
import LoopbackHTTPServer

/// `--cache`: what a `ResponseCache` saves. Two interleaved comparisons, concurrency 1, medians of the measured rounds:
///
/// - a small GET (1 KB of JSON, decoded): a raw dictionary lookup plus decode (the floor), a fresh hit through
///   Courier, and the network round trip through Courier without a cache;
/// - a GET of `/large.json` (about 1 MB): the full 200 without a cache against a 304 revalidation (`Cache-Control:
///   no-cache` on the request, so every call validates).
///
/// Against the in-process loopback server by default; `--base-url` sends to another server (e.g. nginx serving the
/// `--write-fixtures` files, whose heuristic lifetime is short: the fresh-hit side then asks `max-stale`).
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func runCacheBenchmark(rounds: Int, quick: Bool, baseURL: String?) async throws {
    var server: LoopbackServer?
    let base: URL
    if let baseURL, let url = URL(string: baseURL) {
        base = url
    } else {
        let started = try LoopbackServer { request in
            let large = request.path == "/large.json"
            let tag = large ? "\"large\"" : "\"small\""
            var headers = [
                ServerHeader(name: "ETag", value: tag), ServerHeader(name: "Cache-Control", value: "max-age=3600"),
            ]
            if request.header("If-None-Match") == tag { return .respond(status: 304, headers: headers) }
            headers.append(ServerHeader(name: "Content-Type", value: "application/json"))
            return .respond(status: 200, headers: headers, body: large ? Fixtures.large : Fixtures.small)
        }
        server = started
        base = started.baseURL
    }
    defer { server?.stop() }
    let plain = NetworkClient(configuration: NetworkConfiguration(sessionConfiguration: .ephemeral, baseURL: base))
    let cachedConfiguration = NetworkConfiguration(sessionConfiguration: .ephemeral, baseURL: base)
    cachedConfiguration.responseCache = ResponseCache(memoryCapacity: 64 * 1024 * 1024)
    let cached = NetworkClient(configuration: cachedConfiguration)
    let hitHeaders = baseURL == nil ? nil : ["Cache-Control": "max-stale"]
    let small = NetworkRequest<VoidRequest, SmallItem>(path: "/small.json", method: .get, additionalHeaders: hitHeaders)
    let largePlain = NetworkRequest<VoidRequest, Data>(path: "/large.json", method: .get)
    let largeValidated = NetworkRequest<VoidRequest, Data>(
        path: "/large.json", method: .get, additionalHeaders: ["Cache-Control": "no-cache"])
    // Prime the cache, and check that each side does what it claims.
    guard try await cached.run(small).cacheStatus == .network, try await cached.run(small).cacheStatus == .fresh,
        try await cached.run(largeValidated).cacheStatus == .network,
        try await cached.run(largeValidated).cacheStatus == .revalidated
    else { throw BenchmarkError.usage("the server's answers are not cacheable as the benchmark needs") }

    let dictionary = GuardedValue([base.appendingPathComponent("small.json").absoluteString: Fixtures.small])
    let key = base.appendingPathComponent("small.json").absoluteString
    let decoder = JSONDecoder()
    let smallChunk = quick ? 50 : 500
    let largeChunk = quick ? 4 : 30
    let hits = Comparison(
        scenario: "small GET",
        contenders: [
            Contender(client: "dictionary lookup + decode", concurrency: 1, requestsPerChunk: smallChunk) { _ in
                guard let data = dictionary.withLock({ $0[key] }) else { throw BenchmarkError.usage("missing") }
                _ = try decoder.decode(SmallItem.self, from: data)
            },
            Contender(client: "Courier, fresh hit", concurrency: 1, requestsPerChunk: smallChunk) { _ in
                guard try await cached.run(small).cacheStatus == .fresh else { throw BenchmarkError.usage("miss") }
            },
            Contender(client: "Courier, network (no cache)", concurrency: 1, requestsPerChunk: smallChunk) { _ in
                _ = try await plain.run(small)
            },
        ])
    let validations = Comparison(
        scenario: "1 MB GET",
        contenders: [
            Contender(client: "full 200 (no cache)", concurrency: 1, requestsPerChunk: largeChunk) { _ in
                _ = try await plain.run(largePlain)
            },
            Contender(client: "304 revalidation", concurrency: 1, requestsPerChunk: largeChunk) { _ in
                let status = try await cached.run(largeValidated).cacheStatus
                guard status == .revalidated else { throw BenchmarkError.usage("not revalidated: \(status)") }
            },
        ])
    var index = 0
    print(
        "ResponseCache, \(rounds) rounds (first discarded), medians per request, concurrency 1, \(server == nil ? base.absoluteString : "in-process loopback server"):"
    )
    print("| scenario | client | wall µs/request | CPU µs/request | wall ratio to first |")
    print("|---|---|---:|---:|---:|")
    for comparison in [hits, validations] {
        for result in try await run(comparison, rounds: rounds, nextIndex: &index) {
            let count = Double(result.contender.requestsPerChunk)
            let wall = median(result.samples.map(\.wallSeconds)) / count * 1e6
            let cpu = median(result.samples.map(\.cpuSeconds)) / count * 1e6
            let ratio = result.wallRatios.isEmpty ? "1" : String(format: "%.3f", median(result.wallRatios))
            print(
                "| \(result.scenario) | \(result.contender.client) | \(String(format: "%.1f", wall)) | "
                    + "\(String(format: "%.1f", cpu)) | \(ratio) |")
        }
    }
}

/// A value under a lock: the cache benchmark's dictionary side, the count of `/slower` requests.
final class GuardedValue<Value: Sendable>: @unchecked Sendable {  // `value` is guarded by `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
