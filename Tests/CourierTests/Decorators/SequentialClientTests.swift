import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// Wraps a client and logs when each call starts and ends, to check ordering from the caller's side.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
final class RecordingClient: NetworkClientProtocol {
    enum Event: Equatable, Sendable {
        case start(String)
        case end(String)
    }

    let wrapped: any NetworkClientProtocol
    private let log = Mutex<[Event]>([])

    init(_ wrapped: any NetworkClientProtocol) {
        self.wrapped = wrapped
    }

    var events: [Event] { log.withLock { $0 } }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        let name = networkRequest.path ?? ""
        log.withLock { $0.append(.start(name)) }
        defer { log.withLock { $0.append(.end(name)) } }
        return try await wrapped.run(networkRequest)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func index(of event: Event) -> Int {
        events.firstIndex(of: event) ?? -1
    }
}

/// A minimal lock for test state (the library's own lock is internal).
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
final class Mutex<Value>: @unchecked Sendable {  // `value` is guarded by `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

@Suite("SequentialClient")
struct SequentialClientTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("200 concurrent POSTs arrive in call order, never two at once")
    func strictOrder() async throws {
        let gate = Gate()
        defer { gate.open() }
        // Queueing 200 calls one by one takes over 10 s under the thread sanitizer on a busy machine: the gate must
        // hold the first request for longer than that, or the queue starts draining before every call is queued.
        let server = try LoopbackServer { _ in
            gate.wait(timeout: 120)
            return .respond(status: 201)
        }
        let client = server.client().sequential()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask {
                    // The gate holds the first request for up to 120 s: its idle timeout must not end it sooner (the
                    // suite's 10 s one did when queueing took longer, and the queue drained: "queued 88 of 94").
                    let request = NetworkRequest<Int, VoidResponse>(
                        path: "items", method: .post, body: index, timeoutInterval: 130)
                    let status = try await client.run(request).statusCode
                    #expect(status == 201)
                }
                // The call order is only known once the call is queued: wait for it before making the next one.
                // A miss ends the test at once: every later count would miss too.
                try #require(
                    await eventually(timeout: .seconds(60)) { client.pendingCount == index + 1 },
                    "queued \(client.pendingCount) of \(index + 1)")
            }
            gate.open()
            try await group.waitForAll()
        }
        let bodies = server.recordedRequests.map { String(decoding: $0.body, as: UTF8.self) }
        #expect(bodies == (0..<200).map(String.init))
        #expect(server.maxConcurrentRequests == 1)
        #expect(client.pendingCount == 0)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A failing request does not stall the queue")
    func failureDoesNotStall() async throws {
        let server = try LoopbackServer { request in
            request.path == "/fail" ? .respond(status: 500, delay: .milliseconds(50)) : .respond(status: 200)
        }
        let client = server.client().sequential()
        let failing = Task {
            try await client.run(NetworkRequest<VoidRequest, VoidResponse>(path: "fail", method: .post))
        }
        #expect(await server.waitUntil { $0.requestCount == 1 })
        let next = Task { try await client.run(NetworkRequest<VoidRequest, VoidResponse>(path: "ok", method: .post)) }
        await #expect(throws: NetworkClientError.self) { try await failing.value }
        #expect(try await next.value.statusCode == 200)
        #expect(client.pendingCount == 0)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Cancelling a waiting call removes it at once; it is never sent")
    func cancelWaiting() async throws {
        let gate = Gate()
        let server = try gatedServer(gate, answering: .respond(status: 200))
        let client = server.client().sequential()
        let first = Task { try await client.run(NetworkRequest<VoidRequest, VoidResponse>(path: "a", method: .post)) }
        #expect(await server.waitUntil { $0.requestCount == 1 })
        let second = Task { try await client.run(NetworkRequest<VoidRequest, VoidResponse>(path: "b", method: .post)) }
        #expect(await eventually { client.pendingCount == 2 })
        second.cancel()
        await #expect(throws: CancellationError.self) { try await second.value }
        #expect(client.pendingCount == 1)
        gate.open()
        #expect(try await first.value.statusCode == 200)
        #expect(server.recordedRequests.map(\.path) == ["/a"])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Cancelling the running call cancels its transfer and the queue moves on")
    func cancelRunning() async throws {
        let server = try LoopbackServer { request in request.path == "/hang" ? .hang : .respond(status: 200) }
        let client = server.client().sequential()
        let running = Task {
            try await client.run(NetworkRequest<VoidRequest, VoidResponse>(path: "hang", method: .get))
        }
        #expect(await server.waitUntil { $0.requestCount == 1 })
        let next = Task { try await client.run(NetworkRequest<VoidRequest, VoidResponse>(path: "next", method: .get)) }
        #expect(await eventually { client.pendingCount == 2 })
        running.cancel()
        await #expect(throws: CancellationError.self) { try await running.value }
        #expect(try await next.value.statusCode == 200)
        #expect(await server.waitUntil { $0.clientClosedCount == 1 })
        #expect(client.pendingCount == 0)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("concurrentReads: reads overlap; a write waits for everything before it, and everything after waits for it")
    func barrierPolicy() async throws {
        let readsTogether = Latch(count: 2)
        let gate = Gate()
        let server = try LoopbackServer { request in
            switch request.path {
            case "/r1", "/r2":
                // Both reads must be in progress at once, or the latch times out and they fail.
                return readsTogether.arriveAndWait() && gate.wait() ? .respond(status: 200) : .respond(status: 500)
            default:
                return .respond(status: 200, delay: .milliseconds(20))
            }
        }
        let recorder = RecordingClient(server.client())
        let client = recorder.sequential(policy: .concurrentReads)
        let calls: [(String, HTTPMethod)] = [("r1", .get), ("r2", .get), ("w3", .post), ("r4", .get), ("r5", .head)]
        var tasks: [Task<Int, any Error>] = []
        for (index, (path, method)) in calls.enumerated() {
            tasks.append(
                Task {
                    try await client.run(NetworkRequest<VoidRequest, VoidResponse>(path: path, method: method))
                        .statusCode
                })
            // Nothing finishes before the gate opens, so this counts every call made so far: the call order is known.
            #expect(await eventually { client.pendingCount == index + 1 })
        }
        gate.open()
        for task in tasks { #expect(try await task.value == 200) }

        // r1 and r2 overlapped (the latch proves it); w3 started after both ended; r4 and r5 after w3 ended.
        #expect(recorder.index(of: .start("w3")) > recorder.index(of: .end("r1")))
        #expect(recorder.index(of: .start("w3")) > recorder.index(of: .end("r2")))
        #expect(recorder.index(of: .start("r4")) > recorder.index(of: .end("w3")))
        #expect(recorder.index(of: .start("r5")) > recorder.index(of: .end("w3")))
        #expect(client.pendingCount == 0)
    }
}

@Suite("Decorator composition")
struct CompositionTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    private func identicalGets(_ client: any NetworkClientProtocol, count: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<count {
                group.addTask { _ = try await client.run(NetworkRequest<VoidRequest, Post>(path: "p", method: .get)) }
            }
            try await group.waitForAll()
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("sequential().deduplicated(): duplicates collapse first, then distinct calls queue one at a time")
    func dedupOutside() async throws {
        let gate = Gate()
        let server = try gatedServer(gate, answering: .json(Post(id: 1, title: "t")))
        let client = server.client().sequential().deduplicated()
        async let all: Void = identicalGets(client, count: 50)
        #expect(await eventually { client.waiterCount == 50 })
        gate.open()
        try await all
        #expect(server.requestCount == 1)

        server.resetStatistics()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask {
                    let request = NetworkRequest<VoidRequest, Post>(path: "p\(index)", method: .get)
                    _ = try await client.run(request)
                }
            }
            try await group.waitForAll()
        }
        #expect(server.requestCount == 20)
        #expect(server.maxConcurrentRequests == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("deduplicated().sequential(): the queue admits one call at a time, so strict order means no sharing")
    func queueOutside() async throws {
        let server = try LoopbackServer { _ in .json(Post(id: 1, title: "t"), delay: .milliseconds(2)) }
        let client = server.client().deduplicated().sequential()
        try await identicalGets(client, count: 20)
        #expect(server.requestCount == 20)
        #expect(server.maxConcurrentRequests == 1)

        // With concurrent reads, the queue lets identical GETs overlap and the inner deduplicator shares them.
        let gate = Gate()
        let gated = try gatedServer(gate, answering: .json(Post(id: 1, title: "t")))
        let deduplicator = gated.client().deduplicated()
        let reads = deduplicator.sequential(policy: .concurrentReads)
        async let all: Void = identicalGets(reads, count: 20)
        #expect(await eventually { deduplicator.waiterCount == 20 })
        gate.open()
        try await all
        #expect(gated.requestCount == 1)
    }
}
