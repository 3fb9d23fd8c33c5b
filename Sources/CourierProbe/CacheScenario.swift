import Courier
import Foundation
import LoopbackHTTPServer

/// Stores one response in a disk `ResponseCache` in `directory`, fetched from a server that stops
/// with this process, and reports its URL: a later process that is served it read it from disk.
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
        let cache = ResponseCache(
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
