import Foundation
import LoopbackHTTPServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The loopback server's transfer helpers, proved with a plain `URLSession`: request bodies discarded as they arrive
/// (``RequestBodyMode/discard``) and a generated resource that honours ranged GETs (``CountingResource``).
@Suite("LoopbackServer transfer endpoints")
struct LoopbackTransferEndpointTests {
    /// Answers `/discard` with what the server saw of the discarded body, and `/keep` with the kept body's size.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    private func makeDiscardServer() throws -> LoopbackServer {
        try LoopbackServer(
            requestBodyMode: { _, path in path == "/discard" ? .discard : .buffer },
            handler: { request in
                switch request.path {
                case "/discard": .json(request.discardedBody ?? DiscardedRequestBody(byteCount: -1, adler32: 0))
                default:
                    .json(DiscardedRequestBody(byteCount: request.body.count, adler32: Adler32.checksum(request.body)))
                }
            })
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func adler32MatchesZlib() {
        #expect(Adler32.checksum(Data()) == 1)
        #expect(Adler32.checksum(Data("Wikipedia".utf8)) == 0x11E6_0398)
        // Split updates give the same value as one pass, across the reduction block size.
        let bytes = Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        var split = Adler32()
        split.update(bytes.prefix(7_001))
        split.update(bytes.dropFirst(7_001))
        #expect(split.value == Adler32.checksum(bytes))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(arguments: [false, true])
    func discardModeCountsAndDropsTheBody(chunked: Bool) async throws {
        let server = try makeDiscardServer()
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let body = Data((0..<3_000_017).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) })

        var request = URLRequest(url: server.url("/discard"))
        request.httpMethod = "PUT"
        let data: Data
        if chunked {
            // A body stream without a length goes out with `Transfer-Encoding: chunked`.
            request.httpBodyStream = InputStream(data: body)
            (data, _) = try await session.data(for: request)
        } else {
            (data, _) = try await session.upload(for: request, from: body)
        }
        let seen = try JSONDecoder().decode(DiscardedRequestBody.self, from: data)
        #expect(seen == DiscardedRequestBody(byteCount: body.count, adler32: Adler32.checksum(body)))
        let recorded = try #require(server.recordedRequests.last)
        #expect(recorded.body.isEmpty)
        #expect(recorded.discardedBody == seen)
        #expect(recorded.header("Transfer-Encoding") == (chunked ? "chunked" : nil))

        // Other paths of the same server still keep their bodies.
        var keep = URLRequest(url: server.url("/keep"))
        keep.httpMethod = "POST"
        let (kept, _) = try await session.upload(for: keep, from: Data("kept".utf8))
        #expect(try JSONDecoder().decode(DiscardedRequestBody.self, from: kept).byteCount == 4)
        #expect(server.recordedRequests.last?.body == Data("kept".utf8))
        #expect(server.recordedRequests.last?.discardedBody == nil)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func countingResourceAnswersRangedGETs() async throws {
        let length = 100_000
        let resource = CountingResource(length: length)
        let server = try LoopbackServer { request in resource.response(to: request) }
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let whole = Data((0..<length).map { UInt8($0 % 251) })

        func get(range: String?, ifRange: String? = nil) async throws -> (Data, HTTPURLResponse) {
            var request = URLRequest(url: server.url("/bytes"))
            if let range { request.setValue(range, forHTTPHeaderField: "Range") }
            if let ifRange { request.setValue(ifRange, forHTTPHeaderField: "If-Range") }
            let (data, response) = try await session.data(for: request)
            return (data, try #require(response as? HTTPURLResponse))
        }

        let (plain, first) = try await get(range: nil)
        #expect(first.statusCode == 200)
        #expect(plain == whole)
        #expect(first.value(forHTTPHeaderField: "Accept-Ranges") == "bytes")
        #expect(first.value(forHTTPHeaderField: "Last-Modified") == CountingResource.lastModified)
        let entityTag = try #require(first.value(forHTTPHeaderField: "ETag"))
        #expect(entityTag == "\"counting-\(length)\"")
        #expect(entityTag == CountingResource(length: length).entityTag)  // Stable for a given length.

        // Resume from byte 70,000 while the representation is the same.
        let (tail, resumed) = try await get(range: "bytes=70000-", ifRange: entityTag)
        #expect(resumed.statusCode == 206)
        #expect(resumed.value(forHTTPHeaderField: "Content-Range") == "bytes 70000-99999/100000")
        #expect(tail == whole.suffix(from: 70_000))
        let (byDate, dated) = try await get(range: "bytes=99990-", ifRange: CountingResource.lastModified)
        #expect(dated.statusCode == 206)
        #expect(byDate == whole.suffix(from: 99_990))

        // A closed range and a suffix range.
        let (ten, closed) = try await get(range: "bytes=10-19")
        #expect(closed.statusCode == 206)
        #expect(closed.value(forHTTPHeaderField: "Content-Range") == "bytes 10-19/100000")
        #expect(ten == whole.subdata(in: 10..<20))
        let (last, suffix) = try await get(range: "bytes=-5")
        #expect(suffix.statusCode == 206)
        #expect(last == whole.suffix(5))

        // A changed representation (another tag, a weak tag) gets the whole body.
        for stale in ["\"counting-1\"", "W/\(entityTag)", "Tue, 02 Jan 2024 00:00:00 GMT"] {
            let (full, fresh) = try await get(range: "bytes=70000-", ifRange: stale)
            #expect(fresh.statusCode == 200)
            #expect(full == whole)
        }

        // Past the end: 416 with the size.
        let (_, unsatisfiable) = try await get(range: "bytes=\(length)-")
        #expect(unsatisfiable.statusCode == 416)
        #expect(unsatisfiable.value(forHTTPHeaderField: "Content-Range") == "bytes */100000")
    }
}
