import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// What a slow or stalled reader does to the server and to the rest of the process.
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

    @Test("A slow reader alone in its process holds the server back (child process)")
    func slowReader() async throws {
        try await MemoryHeavyTests.exclusively {
            try await expectProbe("slow-stream-reader", timeLimit: .seconds(120))
        }
    }

    @Test("A reader that stops reading holds no other transfer; past the backlog its stream ends with readerFellBehind")
    func stalledReader() async throws {
        try await MemoryHeavyTests.exclusively {
            // More than any run could read before the stop lands: only the stop ends this body.
            let total = 1 << 34
            let server = try fastServer(total: total)
            let client = server.client()
            let response = try await client.run(BytesRequest(path: "/bytes", method: .get))
            var iterator = response.value.makeAsyncIterator()
            _ = try await iterator.next()
            // The reader reads nothing now; other calls on the same session go on, each within its idle timeout.
            for index in 0..<5 {
                let echoed = await firstWithin(promptly) {
                    try? await client.run(
                        Echo(path: "/echo", method: .get, additionalHeaders: ["X-N": "\(index)"], timeoutInterval: 2))
                }
                #expect(echoed?.statusCode == 200)
            }
            // Past the backlog the transfer stops: the server sees the connection close.
            // How much went out before the stop depends on how fast the machine is (on a loaded one libcurl read
            // 680 MB before the close): what shows the stop is that the body did not end.
            #expect(await server.waitUntil(timeout: promptly) { $0.clientClosedCount == 1 })
            #expect(server.bodyBytesSent < total)
            var failure: (any Error)?
            do {
                while try await iterator.next() != nil {}
            } catch {
                failure = error
            }
            guard case StreamError.readerFellBehind(let limit)? = failure else {
                Issue.record("expected readerFellBehind, got \(String(describing: failure))")
                return
            }
            #expect(limit == NetworkConfiguration.streamBufferCapacity + NetworkConfiguration.maximumStreamBacklog)
            // The error names the limits that applied, not the response size limit, which does not bound a stream.
            let text = "\(failure.map { "\($0)" } ?? "")"
            #expect(text.contains("NetworkConfiguration.maximumStreamBacklog") && !text.contains("maximumResponseSize"))
        }
    }

    @Test("While another transfer runs, a slow reader never holds the transport: the other's bytes arrive on time")
    func neverHoldsOthers() async throws {
        try await MemoryHeavyTests.exclusively {
            // More than any run could read before the stop lands: only the stop ends this body.
            let total = 1 << 34
            let server = try fastServer(total: total)
            let ticker = try LoopbackServer { _ in
                .writer(headers: [ServerHeader(name: "Content-Type", value: "text/event-stream")]) { writer in
                    for index in 0..<10 {
                        guard writer.send("data: \(index)\n\n"), writer.wait(.milliseconds(100)) else { return .close }
                    }
                    return .finish
                }
            }
            let client = server.client()
            // A ticker with a 1 s idle timeout, read by a reader that keeps up.
            let ticks = Task {
                try await events(ticker.client(), EventsRequest(path: "/ticks", method: .get, timeoutInterval: 1))
            }
            // Meanwhile a stream whose reader is far slower than the server.
            let slow = try await client.run(BytesRequest(path: "/bytes", method: .get))
            var read = 0
            do {
                for try await chunk in slow.value {
                    read += chunk.count
                    try await Task.sleep(for: .milliseconds(20))
                    if read >= 4 << 20 { break }
                }
            } catch StreamError.readerFellBehind {
                // Without holding, a reader this slow may fall the whole backlog behind: its stream ends, bounded.
            }
            #expect(try await ticks.value.count == 10)
        }
    }
}

/// The hold rules of ``StreamChannel``, without a socket: a producer thread writes while a reader reads or not.
@Suite("StreamChannel holds")
struct StreamChannelTests {
    /// Writes `pieces` pieces of `size` bytes from a thread of its own (a held producer blocks its thread, as
    /// corelibs' is, never one of the cooperative pool's); returns how it ended.
    func produce(
        _ channel: StreamChannel, pieces: Int, size: Int
    ) -> Task<Result<Int, any Error>, Never> {
        let outcome = Locked<Result<Int, any Error>?>(nil)
        let thread = Thread {
            let piece = Data(count: size)
            do {
                for _ in 0..<pieces { _ = try channel.write(piece) }
                outcome.withLock { $0 = .success(pieces) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
                // As a transport does: the exchange ends with the error, so a reader waiting in next() hears of it
                // instead of waiting for pieces that will never come.
                channel.transportEnded(.failed(error), as: .failure(error))
            }
        }
        thread.start()
        return Task {
            while true {
                if let ended = outcome.withLock({ $0 }) { return ended }
                try? await Task.sleep(for: .milliseconds(1))
            }
        }
    }

    @Test(
        "A producer that runs alone is held while the reader reads: the buffer never exceeds the capacity and a piece")
    func heldWhileReading() async throws {
        let channel = StreamChannel(capacity: 64 * 1_024, backlog: 1 << 20, hold: 30, mayHoldTransport: { true })
        // Holds of 30 s: a reader kept off the processor by a loaded machine is still a reader.
        let producer = produce(channel, pieces: 200, size: 16 * 1_024)
        var most = 0
        var read = 0
        while read < 200 * 16 * 1_024 {
            most = max(most, channel.bufferedBytes)
            guard let piece = try await channel.next() else { break }
            read += piece.count
            try await Task.sleep(for: .microseconds(200))
        }
        #expect(read == 200 * 16 * 1_024)
        #expect(most <= 64 * 1_024 + 16 * 1_024)
        guard case .success = await producer.value else {
            Issue.record("the producer failed")
            return
        }
    }

    @Test("A producer that does not run alone is never held: it fills the backlog and then fails")
    func notHeldBesideOthers() async throws {
        let channel = StreamChannel(capacity: 64 * 1_024, backlog: 256 * 1_024, hold: 60, mayHoldTransport: { false })
        let producer = produce(channel, pieces: 100, size: 16 * 1_024)
        let clock = ContinuousClock()
        let start = clock.now
        guard case .failure(StreamError.readerFellBehind(let limit)) = await producer.value else {
            Issue.record("the producer should have failed at the backlog")
            return
        }
        #expect(limit == 64 * 1_024 + 256 * 1_024)
        // Never held: not one 60 s hold went by (the bound leaves room for a loaded machine).
        #expect(clock.now - start < .seconds(30))
        #expect(channel.bufferedBytes <= 64 * 1_024 + 256 * 1_024)
    }

    @Test("A stalled reader: the producer stops being held after one hold, and fails a stall after the backlog filled")
    func stalledReader() async throws {
        let channel = StreamChannel(
            capacity: 64 * 1_024, backlog: 256 * 1_024, hold: 0.05, stall: 0.2, mayHoldTransport: { true })
        let producer = produce(channel, pieces: 100, size: 16 * 1_024)
        guard case .failure(StreamError.readerFellBehind) = await producer.value else {
            Issue.record("the producer should have failed at the backlog")
            return
        }
        #expect(channel.bufferedBytes <= 64 * 1_024 + 256 * 1_024)
    }

    @Test("A reader that reads again within the stall keeps its stream: the producer is held again")
    func readerComesBack() async throws {
        let channel = StreamChannel(
            capacity: 64 * 1_024, backlog: 256 * 1_024, hold: 0.05, stall: 30, mayHoldTransport: { true })
        // A stall of 30 s: a reader kept off the processor by a loaded machine is still a reader.
        let producer = produce(channel, pieces: 100, size: 16 * 1_024)
        // Nothing read until the producer has run into the backlog and waits for the reader.
        #expect(await eventually { channel.bufferedBytes > 256 * 1_024 })
        var read = 0
        while let piece = try await channel.next() {
            read += piece.count
            if read == 100 * 16 * 1_024 { break }
        }
        #expect(read == 100 * 16 * 1_024)
        guard case .success = await producer.value else {
            Issue.record("the producer failed")
            return
        }
    }

    @Test("A call that starts while a producer holds lets it go at once: the producer asks again and stops holding")
    func startingCallWakesHolder() async throws {
        let alone = Locked(true)
        let channel = StreamChannel(
            capacity: 16 * 1_024, backlog: 1 << 20, hold: 30, mayHoldTransport: { alone.withLock { $0 } })
        let producer = produce(channel, pieces: 10, size: 16 * 1_024)
        // The reader reads nothing: the producer holds on the full buffer (30 s holds).
        #expect(await eventually { StreamChannel.mayHoldTransports })
        alone.withLock { $0 = false }
        StreamChannel.wakeHolders()
        let ended = await firstWithin(promptly) { await producer.value }
        guard case .success? = ended else {
            Issue.record("the producer was still held: \(String(describing: ended))")
            return
        }
        #expect(channel.bufferedBytes == 10 * 16 * 1_024)
    }

    @Test("A stop (the deadline, a cancellation) lets go a transport waiting in readyForMore for a full buffer")
    func stopReleasesWaitingTransport() async throws {
        let channel = StreamChannel(capacity: 1_024, backlog: 1 << 20, hold: 30, mayHoldTransport: { false })
        let sink = StreamSink(channel: channel, acceptable: nil, refusal: { _ in nil })
        let exchange = HTTPExchange(
            request: URLRequest(url: URL(string: "https://api.test/feed")!), body: .none, limit: 1 << 20, sink: sink,
            reporter: nil)
        let head = try #require(
            HTTPURLResponse(
                url: URL(string: "https://api.test/feed")!, statusCode: 200, httpVersion: nil, headerFields: nil))
        #expect(exchange.receive(head))
        #expect(exchange.receive(Data(count: 2_048)))
        // The reader reads nothing: the buffer is past its capacity, and the transport waits for room.
        let waiting = Task { await exchange.readyForMore() }
        #expect(await eventually { channel.bufferedBytes == 2_048 })
        exchange.stop(.timedOut)
        let ready = await firstWithin(promptly) { await waiting.value }
        #expect(ready == false)
        // A transport that asks again after the stop is not made to wait.
        #expect(await exchange.readyForMore() == false)
    }

    @Test("The reader leaving wakes a held producer at once, which then fails with CancellationError")
    func readerLeaves() async throws {
        let channel = StreamChannel(capacity: 16 * 1_024, backlog: 1 << 20, hold: 30, mayHoldTransport: { true })
        let producer = produce(channel, pieces: 10, size: 16 * 1_024)
        _ = try await channel.next()
        // The producer is held on a full buffer (30 s holds); the reader goes away.
        #expect(await eventually { channel.bufferedBytes >= 16 * 1_024 })
        channel.cancel()
        let ended = await firstWithin(promptly) { await producer.value }
        guard case .failure(let error)? = ended else {
            Issue.record("the producer was not released: \(String(describing: ended))")
            return
        }
        #expect(error is CancellationError)
    }
}
