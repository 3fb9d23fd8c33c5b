import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What `Vary` costs the cache and what it leaves on disk: a bounded number of fields per stored response, every byte
/// of an entry counted, and no digest of a secret a dictionary could reverse.
@Suite("ResponseCache: Vary bounds and secrets")
struct VarySelectionTests {
    /// A `Vary` naming `count` fields, short names (17,000 of them in 85 KB, within libcurl's 100 KB for a header).
    static func vary(_ count: Int) -> String {
        (0..<count).map { "x" + String($0, radix: 36) }.joined(separator: ",")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A response whose Vary names more than maximumVaryFields fields is not stored (17,000 as a hostile server sent)",
        arguments: [ResponseCache.maximumVaryFields + 1, 17_000])
    func tooManyVaryFields(_ count: Int) async throws {
        let origin = try CacheOrigin { _, n in
            cacheable("v\(n)", ["Cache-Control": "max-age=60", "Vary": Self.vary(count)])
        }
        #expect(try await origin.get().text == "v1")
        let second = try await origin.get()
        #expect(second.text == "v2" && second.response.cacheStatus == .network)
        #expect(origin.cache.currentMemoryUsage == 0)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A response whose Vary names maximumVaryFields fields is stored, and selected by all of them")
    func mostVaryFields() async throws {
        let count = ResponseCache.maximumVaryFields
        let origin = try CacheOrigin { _, n in
            cacheable("v\(n)", ["Cache-Control": "max-age=60", "Vary": Self.vary(count)])
        }
        let fields = Dictionary(uniqueKeysWithValues: (0..<count).map { ("x" + String($0, radix: 36), "value \($0)") })
        try await origin.get(headers: fields)
        #expect(try await origin.get(headers: fields).response.cacheStatus == .fresh)
        var last = fields
        last["x" + String(count - 1, radix: 36)] = "another value"
        #expect(try await origin.get(headers: last).response.cacheStatus == .network)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A 304 that names more Vary fields than may be kept serves the response once, then keeps nothing")
    func revalidationWithTooManyVaryFields() async throws {
        let origin = try CacheOrigin { request, n in
            if n > 1, request.header("If-None-Match") == "\"1\"" {
                return cacheable("", status: 304, ["ETag": "\"1\"", "Vary": Self.vary(17_000)])
            }
            return cacheable("v\(n)", ["Cache-Control": "no-cache", "ETag": "\"\(n)\""])
        }
        try await origin.get()
        let revalidated = try await origin.get()
        #expect(revalidated.text == "v1" && revalidated.response.cacheStatus == .revalidated)
        #expect(origin.cache.currentMemoryUsage == 0)
        #expect(try await origin.get().text == "v3")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The memory an entry is charged holds every header field and Vary value, with what it takes to keep them")
    func costCountsEverything() async throws {
        let names = (0..<ResponseCache.maximumVaryFields).map { "x-vary-\($0)" }
        var fields = Dictionary(uniqueKeysWithValues: (0..<500).map { ("X-F\($0)", "v") })
        fields["Cache-Control"] = "max-age=60"
        fields["Vary"] = names.joined(separator: ", ")
        let origin = try CacheOrigin { [fields] _, _ in cacheable("body", fields) }
        try await origin.get(headers: Dictionary(uniqueKeysWithValues: names.map { ($0, "a value") }))
        // At the least: each field's bytes and its slot in an array of two strings (32 bytes); each Vary value's name
        // and a 64-character digest; the body.
        let fieldBytes = fields.reduce(0) { $0 + 32 + $1.key.utf8.count + $1.value.utf8.count }
        let varyBytes = names.reduce(0) { $0 + $1.utf8.count + 64 }
        #expect(origin.cache.currentMemoryUsage >= fieldBytes + varyBytes + 4)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A cache full of entries of many small fields stays within its capacity in resident memory too")
    func residentMemory() async throws {
        try await MemoryHeavyTests.exclusively {
            try await expectProbe("cache-memory", timeLimit: .seconds(180))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Vary: Authorization leaves no digest of the credential on disk; other Vary values are salted digests")
    func noDigestOfASecret() async throws {
        let directory = cacheDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let credential = "Basic " + Data("alice:password1".utf8).base64EncodedString()
        let origin = try CacheOrigin(
            cache: ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: directory)
        ) { request, n in
            cacheable("v\(n)", ["Cache-Control": "max-age=60", "Vary": "Authorization, X-Tenant"])
        }
        let headers = ["Authorization": credential, "X-Tenant": "acme"]
        try await origin.get(headers: headers)
        let files = cacheFiles(in: directory)
        #expect(files.count == 1)
        // Whoever reads the files with a list of guesses computes these: none may be there.
        let guesses = [credential, "acme"].flatMap { [$0, "v\n" + $0] }.map(SHA256Digest.hex)
        for file in files {
            let text = String(
                decoding: try Data(contentsOf: directory.appendingPathComponent(file.name)), as: UTF8.self)
            // Booleans, so that a failure does not print the file.
            let digests = guesses.filter { text.contains($0) }.count
            let clear = text.contains(credential) || text.contains("acme")
            #expect(digests == 0, "\(file.name) holds \(digests) unsalted digests")
            #expect(!clear, "\(file.name) holds a value in the clear")
        }
        // The stored response is still selected by both fields.
        #expect(try await origin.get(headers: headers).response.cacheStatus == .fresh)
        var otherTenant = headers
        otherTenant["X-Tenant"] = "globex"
        #expect(try await origin.get(headers: otherTenant).response.cacheStatus == .network)
    }
}
