import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A fresh directory under the temporary directory, for one test.
func cacheDirectory() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("CourierCache-\(UUID().uuidString)")
}

/// The entry files in `directory` and their sizes.
func cacheFiles(in directory: URL) -> [(name: String, size: Int)] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    return names.filter { $0.hasSuffix(".cached") }.map { name in
        let attributes = try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)
        return (name, (attributes?[.size] as? NSNumber)?.intValue ?? 0)
    }
}

/// The bytes of every file in `directory`, the salt included.
func directoryBytes(_ directory: URL) -> Int {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    return names.reduce(0) { total, name in
        let attributes = try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)
        return total + ((attributes?[.size] as? NSNumber)?.intValue ?? 0)
    }
}

@Suite("ResponseCache: the disk store")
struct ResponseCacheDiskTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A response stored on disk by another process is served from disk, with the network gone")
    func survivesANewProcess() async throws {
        let directory = cacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outcome = try await runProbe(
            "cache-fill", arguments: ["--directory", directory.path], timeLimit: .seconds(120))
        #expect(outcome.behaved, "\(outcome.ending)\n\(outcome.excerpt)")
        guard let line = outcome.output.split(separator: "\n").first(where: { $0.contains("url=") }),
            let url = URL(string: String(line[line.range(of: "url=")!.upperBound...]))
        else {
            Issue.record("no URL in the probe's output:\n\(outcome.excerpt)")
            return
        }
        // The probe's server stopped with it: only the disk can answer.
        let cache = try ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory)
        let configuration = NetworkConfiguration(
            transport: InMemoryTransport { _ in throw URLError(.cannotConnectToHost) }, baseURL: url)
        configuration.responseCache = cache
        let response = try await NetworkClient(configuration: configuration).run(
            NetworkRequest<VoidRequest, Data>(method: .get))
        #expect(String(decoding: response.value, as: UTF8.self) == "stored by another process")
        #expect(response.cacheStatus == .fresh)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Entry files are owner-only, the directory too, and hold neither the credential nor the URL's query")
    func filesAreOwnerOnlyAndHoldNoSecret() async throws {
        let directory = cacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try CacheOrigin(
            cache: ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory)
        ) { _, _ in cacheable("body", ["Cache-Control": "max-age=60"]) }
        try await origin.get("/r?token=query-secret-123", headers: ["Authorization": "Bearer header-secret-456"])
        let files = cacheFiles(in: directory)
        #expect(files.count == 1)
        let manager = FileManager.default
        let directoryMode = (try manager.attributesOfItem(atPath: directory.path)[.posixPermissions] as? NSNumber)?
            .intValue
        #expect(directoryMode == 0o700)
        for name in (try manager.contentsOfDirectory(atPath: directory.path)) {
            let path = directory.appendingPathComponent(name).path
            let mode = (try manager.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
            #expect(mode == 0o600, "\(name)")
            let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
            #expect(!text.contains("query-secret-123") && !text.contains("header-secret-456"), "\(name)")
            #expect(!name.contains("secret"))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A damaged entry (truncated, bit flipped, emptied) is a miss, and its file is removed",
        arguments: ["truncated", "bit flipped", "emptied"])
    func damagedEntry(_ damage: String) async throws {
        let directory = cacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stored = try await {
            // Released at the end of the closure: the directory is one cache's at a time.
            let origin = try CacheOrigin(
                cache: ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory)
            ) { _, n in cacheable("body \(n)", ["Cache-Control": "max-age=60"]) }
            try await origin.get()
            return origin.server.url("/r")
        }()
        let file = try #require(cacheFiles(in: directory).first).name
        let url = directory.appendingPathComponent(file)
        var bytes = try Data(contentsOf: url)
        switch damage {
        case "truncated": bytes = bytes.prefix(bytes.count - 3)
        case "bit flipped": bytes[bytes.count - 2] ^= 0x04
        default: bytes = Data()
        }
        try bytes.write(to: url)
        // A new cache on the directory: nothing in memory, the damaged file is all there is.
        let reopened = try CacheOrigin(
            cache: ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory)
        ) { _, _ in cacheable("from the network", ["Cache-Control": "no-store"]) }
        let lookup = reopened.cache.lookup(CacheKey(url: stored.absoluteString, partition: ""))
        #expect(lookup == nil)
        #expect(cacheFiles(in: directory).isEmpty)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Disk capacity is a hard limit: ten times the capacity written, the directory never holds more")
    func diskCapacity() async throws {
        let directory = cacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let capacity = 100_000
        do {
            let origin = try CacheOrigin(
                cache: ResponseCache(memoryCapacity: 0, diskCapacity: capacity, directory: directory)
            ) { _, n in cacheable(String(repeating: "d", count: 5_000) + "\(n)", ["Cache-Control": "max-age=60"]) }
            for index in 0..<200 {  // About 1 MB in all.
                try await origin.get("/item\(index)")
                #expect(directoryBytes(directory) <= capacity)
                #expect(origin.cache.currentDiskUsage <= capacity)
            }
            #expect(cacheFiles(in: directory).count >= 10)
            #expect(try await origin.get("/item199").response.cacheStatus == .fresh)
            #expect(try await origin.get("/item0").response.cacheStatus == .network)
        }
        // A new cache on a fuller directory with a smaller capacity trims it at once (the first one is gone: a
        // directory is one cache's at a time).
        let smaller = try ResponseCache(memoryCapacity: 0, diskCapacity: capacity / 4, directory: directory)
        #expect(smaller.currentDiskUsage <= capacity / 4 && directoryBytes(directory) <= capacity / 4)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("removeAll() and removeResponses(for:) delete the files")
    func removalDeletesFiles() async throws {
        let directory = cacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try CacheOrigin(
            cache: ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory)
        ) { _, _ in cacheable("body", ["Cache-Control": "max-age=60"]) }
        try await origin.get("/a", headers: ["Authorization": "one"])
        try await origin.get("/a")
        try await origin.get("/b")
        #expect(cacheFiles(in: directory).count == 3)
        origin.cache.removeResponses(for: origin.server.url("/a"))
        #expect(cacheFiles(in: directory).count == 1)
        origin.cache.removeAll()
        #expect(cacheFiles(in: directory).isEmpty)
    }
}
