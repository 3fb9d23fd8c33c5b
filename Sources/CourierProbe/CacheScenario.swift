import Courier
import Foundation
import LoopbackHTTPServer

/// Stores one response in a disk `ResponseCache` in `directory`, fetched from a server that stops
/// with this process, and reports its URL: a later process that is served it read it from disk. Fails with the
/// `ResponseCacheError` when the directory cannot be opened (another process holds it).
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func cacheFill(_ directory: String?) async -> (Bool, String) {
    guard let path = directory else { return (false, "cache-fill needs --directory PATH") }
    do {
        let server = try LoopbackServer { _ in
            .respond(
                status: 200, headers: [ServerHeader(name: "Cache-Control", value: "max-age=3600")],
                body: Data("stored by another process".utf8))
        }
        defer { server.stop() }
        let cache = try ResponseCache(
            memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: URL(fileURLWithPath: path))
        let configuration = NetworkConfiguration(baseURL: server.baseURL)
        configuration.responseCache = cache
        let response = try await NetworkClient(configuration: configuration).run(
            NetworkRequest<VoidRequest, Data>(path: "/kept", method: .get))
        guard response.cacheStatus == .network, cache.currentDiskUsage > 0 else {
            return (false, "nothing was stored on disk (\(response.cacheStatus))")
        }
        return (true, "url=\(server.url("/kept").absoluteString)")
    } catch {
        return (false, "\(error)")
    }
}

/// See ``Scenario/cacheMemory``.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func cacheMemory(_ options: ProbeOptions) async -> (Bool, String) {
    let capacity = 8 << 20
    let varyNames = (0..<32).map { "X-Vary-\($0)" }
    var fields = Dictionary(uniqueKeysWithValues: (0..<200).map { ("X-F\($0)", "v\($0)") })
    fields["Vary"] = varyNames.joined(separator: ", ")
    // In memory, no socket, nothing recorded: what the process grows by is the cache's.
    let transport = CannedTransport(fields: fields)
    let cache = ResponseCache(memoryCapacity: capacity)
    let configuration = NetworkConfiguration(transport: transport, baseURL: URL(string: "https://api.test")!)
    configuration.responseCache = cache
    let client = NetworkClient(configuration: configuration)
    let headers = Dictionary(uniqueKeysWithValues: varyNames.map { ($0, "a value of \($0)") })
    func get(_ path: String) async throws {
        let request = NetworkRequest<VoidRequest, Data>(path: path, method: .get, additionalHeaders: headers)
        _ = try await client.run(request)
    }
    do {
        // Some of the same traffic, none of it stored, first: the process's own working memory.
        let count = options.count ?? 1_500
        let start = residentMegabytes() ?? 0
        for index in 0..<200 { try await get("/passing/\(index)") }
        guard let before = residentMegabytes() else { return (true, "no /proc/self/status: nothing measured") }
        progress("step: resident \(start) MB at the start, \(before) MB after 200 responses not stored")
        var stored = 0
        for index in 0..<count {
            try await get("/kept/\(index)")
            stored = max(stored, cache.currentMemoryUsage)
        }
        guard let after = residentMegabytes() else { return (false, "resident memory unreadable") }
        let summary =
            "\(count) responses stored in \(capacity >> 20) MB: reported \(stored >> 10) KB at most, "
            + "resident \(before) MB before, \(after) MB after"
        let allowed = (capacity >> 20) + 6
        guard stored <= capacity, after - before <= allowed else {
            return (false, summary + " (more than \(allowed) MB)")
        }
        return (true, summary)
    } catch {
        return (false, "\(error)")
    }
}

/// Answers every request with `fields` and the path as the body, fresh for an hour under `/kept/`, `no-store`
/// elsewhere; keeps no record of what it answered.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private struct CannedTransport: HTTPTransport {
    let fields: [String: String]

    func send(_ exchange: HTTPExchange) async throws {
        let url = exchange.request.url!
        var fields = fields
        fields["Cache-Control"] = url.path.hasPrefix("/kept/") ? "max-age=3600" : "no-store"
        let head = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: fields)!
        guard exchange.receive(head) else { return }
        _ = exchange.receive(Data(url.path.utf8))
    }
}
