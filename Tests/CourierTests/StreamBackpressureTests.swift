import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// What a slow or stalled reader does to the server and to the rest of the process, on Courier's `URLSession`.
@Suite("Stream backpressure", .serialized)
struct StreamBackpressureTests {
    /// A server that writes 64 KiB chunks as fast as the client takes them, up to `total` bytes.
    func fastServer(total: Int) throws -> LoopbackServer {
        try LoopbackServer { request in
            if request.path == "/echo" { return .echo }
            return .writer(headers: [ServerHeader(name: "Content-Type", value: "application/octet-stream")]) {
                writer in
                let chunk = Data(repeating: 0x61, count: 64 * 1_024)
                var sent = 0
                while sent < total, writer.send(chunk) { sent += chunk.count }
                return .finish
            }
        }
    }

    @Test("A slow reader holds the server back: what is buffered stays within the capacity and a piece")
    func slowReader() async throws {
        try await MemoryHeavyTests.exclusively {
            let server = try fastServer(total: 256 << 20)
            let response = try await server.client().run(BytesRequest(path: "/bytes", method: .get))
            let source = try #require(ResponseKinds.streamSource(of: response.value))
            var read = 0
            var mostBuffered = 0
            var mostAhead = 0
            for try await chunk in response.value {
                read += chunk.count
                mostBuffered = max(mostBuffered, source.bufferedBytes)
                mostAhead = max(mostAhead, server.bodyBytesSent - read)
                // About 64 MB/s: far slower than loopback.
                try await Task.sleep(for: .microseconds(chunk.count / 64))
                if read >= 32 << 20 { break }
            }
            // Courier's buffer: the capacity, plus the one piece (at most 512 KiB from libcurl) that found it full.
            #expect(mostBuffered <= StreamDefaults.bufferCapacity + 512 * 1_024)
            // The server is ahead by what the kernel buffers on loopback (here up to 32 MiB of receive buffer and
            // 4 MiB of send buffer) and Courier's buffer; without backpressure it would have sent all 256 MiB.
            #expect(mostAhead < 48 << 20)
            #expect(server.bodyBytesSent < 128 << 20)
        }
    }

    @Test(
        "A reader that stops reading does not hold the other transfers; past the backlog its stream ends with responseTooLarge"
    )
    func stalledReader() async throws {
        try await MemoryHeavyTests.exclusively {
            let server = try fastServer(total: 1 << 30)
            let client = server.client()
            let response = try await client.run(BytesRequest(path: "/bytes", method: .get))
            var iterator = response.value.makeAsyncIterator()
            _ = try await iterator.next()
            // The reader reads nothing now; other calls on the same session go on.
            for index in 0..<5 {
                let echoed = await firstWithin(promptly) {
                    try? await client.run(Echo(path: "/echo", method: .get, additionalHeaders: ["X-N": "\(index)"]))
                }
                #expect(echoed?.statusCode == 200)
            }
            // Past the backlog the transfer stops: the server sees the connection close.
            #expect(await server.waitUntil(timeout: promptly) { $0.clientClosedCount == 1 })
            #expect(server.bodyBytesSent < 512 << 20)
            var failure: (any Error)?
            do {
                while try await iterator.next() != nil {}
            } catch {
                failure = error
            }
            guard case NetworkClientError.responseTooLarge(let limit)? = failure else {
                Issue.record("expected responseTooLarge, got \(String(describing: failure))")
                return
            }
            #expect(limit == StreamDefaults.bufferCapacity + StreamDefaults.maximumBacklog)
        }
    }
}
