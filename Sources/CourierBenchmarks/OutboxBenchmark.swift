import Courier
import Foundation
import LoopbackHTTPServer

/// `--outbox`: durable enqueues per second from 1 and from 16 callers (group commit), and the cost of sending small
/// POSTs through an ``Outbox`` (one global order) against `sequential()`, on the in-process server.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func runOutboxBenchmark(rounds: Int) async throws {
    let server = try LoopbackServer { _ in .respond(status: 201, body: Data(#"{"ok":true}"#.utf8)) }
    defer { server.stop() }
    let configuration = NetworkConfiguration(sessionConfiguration: .ephemeral, baseURL: server.baseURL)
    let client = NetworkClient(configuration: configuration)
    let small = NetworkRequest<Data, VoidResponse>(path: "/write", method: .post, body: Data(repeating: 65, count: 200))
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("courier-outbox-bench-\(UUID())")
    defer { try? FileManager.default.removeItem(at: root) }
    let clock = ContinuousClock()
    func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Enqueues per second with `callers` concurrent callers, `perCaller` each, on a paused outbox.
    func enqueueRate(callers: Int, perCaller: Int) async throws -> Double {
        let directory = root.appendingPathComponent(UUID().uuidString)
        let outbox = try Outbox(
            directory: directory, client: client, rules: Outbox.Rules(configuration), paused: true)
        let start = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<callers {
                group.addTask {
                    for _ in 0..<perCaller { try await outbox.enqueue(small, kind: "bench") }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = seconds(clock.now - start)
        await outbox.close()
        return Double(callers * perCaller) / elapsed
    }

    /// Seconds per request to drain `count` entries enqueued beforehand, one at a time (one global order).
    func outboxSend(count: Int) async throws -> Double {
        let directory = root.appendingPathComponent(UUID().uuidString)
        let outbox = try Outbox(
            directory: directory, client: client, rules: Outbox.Rules(configuration), paused: true)
        outbox.onResult(kind: "bench", as: VoidResponse.self) { _, result in _ = try result.get() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<16 {
                group.addTask { for _ in 0..<(count / 16) { try await outbox.enqueue(small, kind: "bench") } }
            }
            try await group.waitForAll()
        }
        let start = clock.now
        outbox.resume()
        while outbox.pendingCount > 0 { try await Task.sleep(for: .milliseconds(1)) }
        let elapsed = seconds(clock.now - start)
        await outbox.close()
        return elapsed / Double(count / 16 * 16)
    }

    /// Seconds per request for `count` POSTs through `sequential()`, all callers at once.
    func sequentialSend(count: Int) async throws -> Double {
        let sequential = client.sequential()
        let start = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<count { group.addTask { _ = try await sequential.run(small) } }
            try await group.waitForAll()
        }
        return seconds(clock.now - start) / Double(count)
    }

    var one: [Double] = []
    var sixteen: [Double] = []
    var viaOutbox: [Double] = []
    var viaSequential: [Double] = []
    for _ in 0..<rounds {
        one.append(try await enqueueRate(callers: 1, perCaller: 100))
        sixteen.append(try await enqueueRate(callers: 16, perCaller: 100))
        viaSequential.append(try await sequentialSend(count: 400))
        viaOutbox.append(try await outboxSend(count: 400))
    }
    func format(_ value: Double) -> String { String(format: "%.0f", value) }
    print("Outbox, \(rounds) rounds, medians (200-byte POST bodies, in-process loopback server):")
    print("  durable enqueues/s, 1 caller:          \(format(median(one)))")
    print("  durable enqueues/s, 16 callers:        \(format(median(sixteen)))  (group commit)")
    print(
        "  send, sequential():                    \(String(format: "%.3f", median(viaSequential) * 1000)) ms/request")
    print(
        "  send, outbox (one order, handler run): \(String(format: "%.3f", median(viaOutbox) * 1000)) ms/request  "
            + "(\(String(format: "%.2f", median(viaOutbox) / median(viaSequential)))x)")
}
