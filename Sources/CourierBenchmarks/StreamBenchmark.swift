import Courier
import Foundation
import LoopbackHTTPServer

/// `--streams`: what reading a stream costs. Events per second parsed from a loopback `text/event-stream` of small
/// events, Courier's `ServerSentEvents` against raw URLSession bytes (a data-task delegate) cut into events by a plain
/// line splitter, interleaved; and `--stream-memory`: a slow reader of a large stream, its peak resident set and how
/// far the server got ahead.
enum StreamBenchmark {
    /// One small event, as an LLM token stream or a live feed sends it: 21 bytes.
    static func event(_ index: Int) -> String {
        "data: {\"n\":\(index % 1_000_000)}\n\n"
    }

    /// The whole stream of `count` events, cut into 64 KiB chunks as the server writes them.
    static func body(events count: Int) -> [Data] {
        var text = ""
        text.reserveCapacity(count * 21)
        for index in 0..<count { text += event(index) }
        let bytes = Data(text.utf8)
        return stride(from: 0, to: bytes.count, by: 64 * 1_024).map {
            bytes.subdata(in: $0..<min($0 + 64 * 1_024, bytes.count))
        }
    }

    /// Runs the events-per-second comparison: `rounds` interleaved rounds of each contender reading `count` events.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func runEvents(count: Int, rounds: Int) async throws {
        let chunks = body(events: count)
        let server = try LoopbackServer { _ in
            .writer(headers: [ServerHeader(name: "Content-Type", value: "text/event-stream")]) { writer in
                for chunk in chunks where !writer.send(chunk) { return .close }
                return .finish
            }
        }
        defer { server.stop() }
        let client = NetworkClient(configuration: NetworkConfiguration(baseURL: server.baseURL))
        let raw = RawEventReader()
        var courierSamples: [Sample] = []
        var rawSamples: [Sample] = []
        for round in 0...rounds {
            let courier = try await measure {
                var events = 0
                for try await _ in try await client.run(
                    NetworkRequest<VoidRequest, ServerSentEvents>(path: "/events", method: .get)
                ).value {
                    events += 1
                }
                guard events == count else { throw BenchmarkError.usage("Courier read \(events) of \(count) events") }
            }
            let plain = try await measure {
                let events = try await raw.read(server.url("/events"))
                guard events == count else { throw BenchmarkError.usage("raw read \(events) of \(count) events") }
            }
            if round > 0 {  // The first round warms up.
                courierSamples.append(courier)
                rawSamples.append(plain)
            }
        }
        func rate(_ samples: [Sample]) -> Double { Double(count) / median(samples.map(\.wallSeconds)) }
        let ratios = zip(courierSamples, rawSamples).map { $0.wallSeconds / $1.wallSeconds }
        print("| reader | events/s (median of \(rounds)) | CPU µs per event | wall vs raw |")
        print("| --- | --: | --: | --: |")
        for (name, samples) in [
            ("raw URLSession bytes + line splitter", rawSamples), ("Courier ServerSentEvents", courierSamples),
        ] {
            let cpu = median(samples.map(\.cpuSeconds)) / Double(count) * 1e6
            let ratio = samples.count == courierSamples.count && name.hasPrefix("Courier") ? median(ratios) : 1
            print(
                "| \(name) | \(Int(rate(samples))) | " + String(format: "%.2f", cpu) + " | "
                    + String(format: "%.2fx", ratio) + " |")
        }
        print("\(count) events of 21 bytes (\(chunks.count) chunks of 64 KiB) from the in-process loopback server.")
    }

    /// `--stream-memory`: a reader that sleeps 1 ms per event reads `size` bytes of 64 KiB events through Courier;
    /// prints the peak resident set and the most the server was ahead of the reader.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func runMemory(size: Int) async throws {
        let eventSize = 64 * 1_024
        let payload = "data: " + String(repeating: "x", count: eventSize - 8) + "\n\n"
        let event = Data(payload.utf8)
        let count = size / eventSize
        let server = try LoopbackServer { _ in
            .writer(headers: [ServerHeader(name: "Content-Type", value: "text/event-stream")]) { writer in
                for _ in 0..<count where !writer.send(event) { return .close }
                return .finish
            }
        }
        defer { server.stop() }
        let baseline = peakResidentBytes()
        let client = NetworkClient(configuration: NetworkConfiguration(baseURL: server.baseURL))
        let clock = ContinuousClock()
        let start = clock.now
        var events = 0
        var mostAhead = 0
        for try await _ in try await client.run(
            NetworkRequest<VoidRequest, ServerSentEvents>(path: "/big", method: .get)
        ).value {
            events += 1
            mostAhead = max(mostAhead, server.bodyBytesSent - events * eventSize)
            try await Task.sleep(for: .milliseconds(1))
        }
        guard events == count else { throw BenchmarkError.usage("read \(events) of \(count) events") }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print(
            "stream-memory: \(count) events of 64 KiB (\(size >> 20) MiB), a reader sleeping 1 ms per event: "
                + String(format: "%.1f s", seconds) + ", peak RSS \(peakResidentBytes() >> 20) MiB "
                + "(\(baseline >> 20) MiB before), the server at most \(mostAhead >> 20) MiB ahead of the reader")
    }
}

/// Raw URLSession's bytes of one response, cut into lines by a plain splitter (LF, each line a `String`): a blank line
/// ends an event.
/// What a hand-written Linux SSE client does with a data-task delegate (corelibs has no `bytes(for:)`).
final class RawEventReader: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // `events`, `pending` and `continuation` are touched only on the session's serial delegate queue, and by `read`
    // before the task starts.
    private var session: URLSession!
    private var events = 0
    private var pending: [UInt8] = []
    private var continuation: CheckedContinuation<Int, any Error>?

    override init() {
        super.init()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: .ephemeral, delegate: self, delegateQueue: queue)
    }

    /// The number of events in the body at `url`.
    func read(_ url: URL) async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            events = 0
            pending.removeAll()
            self.continuation = continuation
            session.dataTask(with: url).resume()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        // Each line becomes a String, as `bytes.lines` would give it; a blank line ends an event.
        data.withUnsafeBytes { bytes in
            var start = 0
            for index in bytes.indices where bytes[index] == 0x0A {
                pending.append(contentsOf: bytes[start..<index])
                let line = String(decoding: pending, as: UTF8.self)
                pending.removeAll(keepingCapacity: true)
                if line.isEmpty { events += 1 }
                start = index + 1
            }
            pending.append(contentsOf: bytes[start...])
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let continuation = self.continuation
        self.continuation = nil
        if let error { continuation?.resume(throwing: error) } else { continuation?.resume(returning: events) }
    }
}
