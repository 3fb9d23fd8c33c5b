import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// A fresh directory under the temporary directory, removed by `cleanUp`.
func temporaryOutboxDirectory() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("courier-outbox-\(UUID().uuidString)")
}

/// Waits for the first event of `stream` that `matches`, for up to 20 s.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func firstEvent(
    _ stream: AsyncStream<OutboxEvent>, _ matches: @escaping @Sendable (OutboxEvent) -> Bool
) async -> OutboxEvent? {
    await firstWithin {
        for await event in stream where matches(event) { return event }
        return nil
    }
}

/// All bytes of every file under `directory`.
func everyByte(under directory: URL) -> Data {
    var all = Data()
    let enumerator = FileManager.default.enumerator(atPath: directory.path)
    while let name = enumerator?.nextObject() as? String {
        all.append(FileManager.default.contents(atPath: directory.appendingPathComponent(name).path) ?? Data())
    }
    return all
}

struct NewPost: Codable, Sendable {
    let title: String
}

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
typealias CreatePost = NetworkRequest<NewPost, EchoedRequest>

@Suite("Outbox")
struct OutboxTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("An entry is sent with its idempotency key and its result reaches the handler of its kind")
    func sendsAndDelivers() async throws {
        let server = try echoServer()
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules(), paused: true)
        let received = Locked<[(OutboxEntry, EchoedRequest)]>([])
        outbox.onResult(kind: "createPost", as: EchoedRequest.self) { entry, result in
            try received.withLock { $0.append((entry, try result.get().value)) }
        }
        let events = outbox.events()
        let id = try await outbox.enqueue(
            CreatePost(path: "/posts", method: .post, body: NewPost(title: "Hello")), kind: "createPost")
        #expect(outbox.pendingCount == 1)
        outbox.resume()
        #expect(await firstEvent(events) { if case .drained = $0 { return true } else { return false } } != nil)
        #expect(outbox.pendingCount == 0)
        let (entry, echoed) = try #require(received.withLock { $0.first })
        #expect(entry.ticket == id)
        #expect(echoed.method == "POST")
        #expect(echoed.path == "/posts")
        #expect(echoed.header("Idempotency-Key") == entry.idempotencyKey)
        #expect(echoed.header("Content-Type") == "application/json")
        #expect(try JSONDecoder().decode(NewPost.self, from: echoed.bodyData).title == "Hello")
        await outbox.close()
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("pause() holds new sends, resume() sends them; pendingCount counts until handled")
    func pauseAndResume() async throws {
        let server = try echoServer()
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules())
        outbox.onResult(kind: "k", as: VoidResponse.self) { _, _ in }
        outbox.pause()
        for index in 0..<3 {
            try await outbox.enqueue(
                NetworkRequest<VoidRequest, VoidResponse>(path: "/\(index)", method: .post), kind: "k")
        }
        #expect(outbox.pendingCount == 3)
        // enqueue decides at once whether to send: paused, it started no send, and nothing starts one before resume().
        #expect(outbox.pending().allSatisfy { !$0.inFlight })
        #expect(server.requestCount == 0)
        outbox.resume()
        #expect(await eventually { outbox.pendingCount == 0 })
        #expect(server.recordedRequests.map(\.path) == ["/0", "/1", "/2"])
        await outbox.close()
        await #expect(throws: OutboxError.closed) {
            try await outbox.enqueue(NetworkRequest<VoidRequest, VoidResponse>(path: "/x", method: .post), kind: "k")
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("One outbox per directory: a second one gets directoryInUse until the first is closed")
    func exclusiveLock() async throws {
        let server = try echoServer()
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules())
        #expect(throws: OutboxError.directoryInUse(path: directory.path)) {
            try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules())
        }
        await first.close()
        let second = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules())
        await second.close()
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Entries with the same ordering key arrive in enqueue order, one at a time, whatever fails")
    func orderPerKeyUnderFailures() async throws {
        // Every third request fails with a transient status or a 429 with Retry-After.
        let server = try LoopbackServer { request in
            switch request.sequenceNumber % 3 {
            case 0: return status(503)
            case 1: return status(429, [ServerHeader(name: "Retry-After", value: "2")])
            default: return .echo
            }
        }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let time = VirtualTime()
        let outbox = try Outbox(
            directory: directory, client: server.client(), paused: true, environment: time.environment)
        var expected: [String: [String]] = [:]
        for index in 0..<30 {
            let key = ["a", "b", "c"][index % 3]
            let request = NetworkRequest<Data, VoidResponse>(
                path: "/\(key)/\(index)", method: .post, body: Data("\(index)".utf8))
            try await outbox.enqueue(request, kind: "write", orderingKey: key)
            expected[key, default: []].append("/\(key)/\(index)")
        }
        outbox.onResult(kind: "write", as: VoidResponse.self) { _, result in _ = try result.get() }
        outbox.resume()
        #expect(await eventually(timeout: .seconds(60)) { outbox.pendingCount == 0 })
        let delivered = server.recordedRequests.filter { $0.sequenceNumber % 3 == 2 }
        for key in ["a", "b", "c"] {
            let paths = delivered.map(\.path).filter { $0.hasPrefix("/\(key)/") }
            #expect(paths == expected[key])
            // First arrivals too: a later entry never went out before an earlier one of its key succeeded.
            var firstArrivals: [String] = []
            for request in server.recordedRequests where request.path.hasPrefix("/\(key)/") {
                if !firstArrivals.contains(request.path) { firstArrivals.append(request.path) }
            }
            #expect(firstArrivals == expected[key])
        }
        #expect(time.sleeps.contains(2))
        await outbox.close()
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Concurrent enqueues on one key while sending: each entry sent once, one at a time")
    func concurrentEnqueuesOnOneKey() async throws {
        let server = try LoopbackServer { _ in .echo(delay: .milliseconds(1)) }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules())
        outbox.onResult(kind: "k", as: VoidResponse.self) { _, result in _ = try result.get() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for caller in 0..<16 {
                group.addTask {
                    for index in 0..<10 {
                        try await outbox.enqueue(
                            NetworkRequest<VoidRequest, VoidResponse>(path: "/\(caller)/\(index)", method: .post),
                            kind: "k", orderingKey: "one")
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(await eventually(timeout: .seconds(30)) { outbox.pendingCount == 0 })
        #expect(server.requestCount == 160)
        #expect(Set(server.recordedRequests.map(\.path)).count == 160)
        #expect(server.maxConcurrentRequests == 1)
        // Each caller's own entries went out in its order.
        for caller in 0..<16 {
            let mine = server.recordedRequests.map(\.path).filter { $0.hasPrefix("/\(caller)/") }
            #expect(mine == (0..<10).map { "/\(caller)/\($0)" })
        }
        await outbox.close()
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Backoff with jitter by the retry policy, Retry-After honoured even above maxDelay, on virtual time")
    func backoffAndRetryAfter() async throws {
        let server = try failingThenEcho([
            status(503, [ServerHeader(name: "Retry-After", value: "120")]), status(500), status(502),
        ])
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let time = VirtualTime(longestWaits: true)
        let policy = RetryPolicy(baseDelay: 1, maxDelay: 30)
        let outbox = try Outbox(
            directory: directory, client: server.client(), retryPolicy: policy, environment: time.environment)
        let events = outbox.events()
        try await outbox.enqueue(NetworkRequest<VoidRequest, VoidResponse>(path: "/x", method: .post), kind: "x")
        let delays = Locked<[TimeInterval]>([])
        let sent = await firstEvent(events) { event in
            if case .retrying(_, _, let delay, _) = event { delays.withLock { $0.append(delay) } }
            if case .sent = event { return true } else { return false }
        }
        #expect(sent != nil)
        // 120 s asked by the server; then the backoff ceilings after attempts 2 and 3: 2 s and 4 s.
        #expect(time.sleeps == [120, 2, 4])
        #expect(delays.withLock { $0 } == [120, 2, 4])
        #expect(server.requestCount == 4)
        let keys = Set(server.recordedRequests.compactMap { $0.header("Idempotency-Key") })
        #expect(keys.count == 1)
        await outbox.close()
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A maximum age fails an entry that never succeeds, and the queue moves on")
    func maximumAge() async throws {
        let server = try LoopbackServer { request in request.path == "/never" ? status(503) : .echo }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let time = VirtualTime(longestWaits: true)
        let outbox = try Outbox(
            directory: directory, client: server.client(), limits: Outbox.Limits(maximumAge: 60), paused: true,
            environment: time.environment)
        let outcomes = Locked<[String]>([])
        outbox.onResult(kind: "w", as: VoidResponse.self) { entry, result in
            switch result {
            case .success: outcomes.withLock { $0.append("ok") }
            case .failure(.unacceptableStatusCode(let status, _, _)): outcomes.withLock { $0.append("\(status)") }
            case .failure: outcomes.withLock { $0.append("other") }
            }
        }
        try await outbox.enqueue(NetworkRequest<VoidRequest, VoidResponse>(path: "/never", method: .post), kind: "w")
        try await outbox.enqueue(NetworkRequest<VoidRequest, VoidResponse>(path: "/fine", method: .post), kind: "w")
        outbox.resume()
        #expect(await eventually { outbox.pendingCount == 0 })
        #expect(outcomes.withLock { $0 } == ["503", "ok"])
        #expect(time.sleeps.reduce(0, +) <= 60)
        await outbox.close()
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A permanent failure goes to the handler as a failure and the next entry is sent")
    func permanentFailure() async throws {
        let server = try LoopbackServer { request in
            request.path == "/missing" ? status(404, body: #"{"code":"nope","message":"gone"}"#) : .echo
        }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules(), paused: true)
        let outcomes = Locked<[Int]>([])
        outbox.onResult(kind: "w", as: EchoedRequest.self) { _, result in
            switch result {
            case .success(let response): outcomes.withLock { $0.append(response.statusCode) }
            case .failure(.unacceptableStatusCode(let status, _, let data)):
                let payload = try? JSONDecoder().decode(APIErrorPayload.self, from: data ?? Data())
                #expect(payload?.code == "nope")
                outcomes.withLock { $0.append(status) }
            case .failure(let error): Issue.record("unexpected \(error)")
            }
        }
        try await outbox.enqueue(NetworkRequest<VoidRequest, VoidResponse>(path: "/missing", method: .post), kind: "w")
        try await outbox.enqueue(NetworkRequest<VoidRequest, VoidResponse>(path: "/ok", method: .post), kind: "w")
        outbox.resume()
        #expect(await eventually { outbox.pendingCount == 0 })
        #expect(outcomes.withLock { $0 } == [404, 200])
        #expect(server.requestCount == 2)
        await outbox.close()
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Results reach handlers registered after a restart; entries left unsent are sent by the next outbox")
    func resultsAfterRestart() async throws {
        let server = try echoServer()
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules())
        let events = first.events()
        let sentID = try await first.enqueue(
            CreatePost(path: "/posts", method: .post, body: NewPost(title: "before")), kind: "createPost",
            orderingKey: "one")
        #expect(await firstEvent(events) { if case .sent = $0 { return true } else { return false } } != nil)
        // The result is stored (no handler yet); a second entry stays unsent.
        #expect(await eventually { first.pendingCount == 1 && server.requestCount == 1 })
        first.pause()
        let unsentID = try await first.enqueue(
            CreatePost(path: "/posts", method: .post, body: NewPost(title: "unsent")), kind: "createPost",
            orderingKey: "two")
        await first.close()
        #expect(server.requestCount == 1)

        let second = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules(), paused: true)
        #expect(second.pendingCount == 2)
        let received = Locked<[UUID: String]>([:])
        second.onResult(kind: "createPost", as: EchoedRequest.self) { entry, result in
            let post = try JSONDecoder().decode(NewPost.self, from: try result.get().value.bodyData)
            received.withLock { $0[entry.id] = post.title }
        }
        second.resume()
        #expect(await eventually { second.pendingCount == 0 })
        #expect(received.withLock { $0 } == [sentID.id: "before", unsentID.id: "unsent"])
        #expect(server.requestCount == 2)
        await second.close()

        let third = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules())
        #expect(third.pendingCount == 0)
        await third.close()
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A handler that throws keeps its result, delivered again when a handler is registered again")
    func throwingHandlerKeepsResult() async throws {
        struct Refused: Error {}
        let server = try echoServer()
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules(), paused: true)
        let calls = Locked(0)
        outbox.onResult(kind: "k", as: VoidResponse.self) { _, _ in
            calls.withLock { $0 += 1 }
            throw Refused()
        }
        try await outbox.enqueue(NetworkRequest<VoidRequest, VoidResponse>(path: "/x", method: .post), kind: "k")
        outbox.resume()
        #expect(await eventually { calls.withLock { $0 } == 1 })
        #expect(outbox.pendingCount == 1)
        outbox.onResult(kind: "k", as: VoidResponse.self) { _, _ in calls.withLock { $0 += 1 } }
        #expect(await eventually { outbox.pendingCount == 0 })
        #expect(calls.withLock { $0 } == 2)
        #expect(server.requestCount == 1)
        await outbox.close()
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The rewrite hook turns update /items/<local id> into update /items/<server id> after create succeeded")
    func rewriteWithServerIdentifier() async throws {
        let server = try LoopbackServer { request in
            request.method == "POST" ? .json(Post(id: 42, title: "created"), status: 201) : .echo
        }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let identifiers = Locked<[String: Int]>([:])
        let outbox = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules(), paused: true) {
            request in
            var request = request
            let local = request.path.map { ($0 as NSString).lastPathComponent } ?? ""
            if let serverID = identifiers.withLock({ $0[local] }) {
                request.path = "/items/\(serverID)"
                request.headers["X-Merged"] = "1"
            }
            return request
        }
        outbox.onResult(kind: "create", as: Post.self) { _, result in
            let post = try result.get().value
            identifiers.withLock { $0["local-1"] = post.id }
        }
        outbox.onResult(kind: "update", as: EchoedRequest.self) { _, _ in }
        try await outbox.enqueue(
            NetworkRequest<NewPost, Post>(path: "/items", method: .post, body: NewPost(title: "draft")),
            kind: "create")
        try await outbox.enqueue(
            NetworkRequest<NewPost, EchoedRequest>(
                path: "/items/local-1", method: .put, body: NewPost(title: "edited")),
            kind: "update")
        outbox.resume()
        #expect(await eventually { outbox.pendingCount == 0 })
        let paths = server.recordedRequests.map { "\($0.method) \($0.path)" }
        #expect(paths == ["POST /items", "PUT /items/42"])
        #expect(server.recordedRequests.last?.header("X-Merged") == "1")
        await outbox.close()
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Limits: entries, bytes and body size are refused at enqueue and nothing is stored")
    func limits() async throws {
        let server = try echoServer()
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let limits = Outbox.Limits(maximumEntries: 2, maximumBytes: 6_000, maximumBodySize: 4_000)
        let outbox = try Outbox(
            directory: directory, client: server.client(), rules: Outbox.Rules(), limits: limits, paused: true)
        let small = NetworkRequest<Data, VoidResponse>(path: "/x", method: .post, body: Data(count: 100))
        await #expect(throws: OutboxError.bodyTooLarge(size: 4_001, limit: 4_000)) {
            try await outbox.enqueue(
                NetworkRequest<Data, VoidResponse>(path: "/x", method: .post, body: Data(count: 4_001)), kind: "k")
        }
        try await outbox.enqueue(
            NetworkRequest<Data, VoidResponse>(path: "/x", method: .post, body: Data(count: 3_500)), kind: "k")
        await #expect(throws: OutboxError.tooManyBytes(limit: 6_000)) {
            try await outbox.enqueue(
                NetworkRequest<Data, VoidResponse>(path: "/x", method: .post, body: Data(count: 3_000)), kind: "k")
        }
        try await outbox.enqueue(small, kind: "k")
        await #expect(throws: OutboxError.tooManyEntries(limit: 2)) {
            try await outbox.enqueue(small, kind: "k")
        }
        #expect(outbox.pendingCount == 2)
        await outbox.close()
        let streamed = try Outbox(
            directory: temporaryOutboxDirectory(), client: server.client(), rules: Outbox.Rules(), paused: true)
        await #expect(throws: OutboxError.self) {
            try await streamed.enqueue(
                NetworkRequest<FileUpload, VoidResponse>(
                    path: "/upload", method: .put, body: FileUpload(url: URL(fileURLWithPath: "/etc/hostname"))),
                kind: "k")
        }
        #expect(streamed.pendingCount == 0)
        try? FileManager.default.removeItem(at: streamed.directory)
        await streamed.close()
        let reopened = try Outbox(
            directory: directory, client: server.client(), rules: Outbox.Rules(), limits: limits, paused: true)
        #expect(reopened.pendingCount == 2)
        await reopened.close()
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Credentials never reach the disk: refused at enqueue, added by the interceptor at send time")
    func nothingSecretOnDisk() async throws {
        let token = "SECRET-TOKEN-\(UUID().uuidString)"
        let cookie = "COOKIE-\(UUID().uuidString)"
        let server = try LoopbackServer { request in
            .respond(
                status: 201, headers: [ServerHeader(name: "Set-Cookie", value: "session=\(cookie)")],
                body: Data(#"{"id":1,"title":"t"}"#.utf8))
        }
        let configuration = server.configuration(sensitiveHeaders: ["X-Api-Key"])
        configuration.interceptors = [
            RequestChange { request in
                request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
                request.setValue("session=\(cookie)", forHTTPHeaderField: "Cookie")
            }
        ]
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(
            directory: directory, client: NetworkClient(configuration: configuration),
            rules: Outbox.Rules(configuration))
        for name in ["Authorization", "proxy-authorization", "COOKIE", "x-api-key"] {
            await #expect(throws: OutboxError.secretHeader(name: name)) {
                try await outbox.enqueue(
                    NetworkRequest<VoidRequest, Post>(path: "/p", method: .post, additionalHeaders: [name: token]),
                    kind: "k")
            }
        }
        // No handler: the results wait on disk, response headers included.
        for _ in 0..<5 {
            try await outbox.enqueue(
                NetworkRequest<NewPost, Post>(path: "/p", method: .post, body: NewPost(title: "x")), kind: "k")
        }
        #expect(await server.waitUntil(timeout: .seconds(20)) { $0.requestCount == 5 })
        #expect(server.recordedRequests.allSatisfy { $0.header("Authorization") == "Bearer \(token)" })
        await outbox.close()
        let bytes = everyByte(under: directory)
        #expect(bytes.count > 0)
        #expect(bytes.range(of: Data(token.utf8)) == nil)
        #expect(bytes.range(of: Data(cookie.utf8)) == nil)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A truncated entry is quarantined and reported; every intact entry is still delivered")
    func quarantineTruncated() async throws {
        let server = try echoServer()
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules(), paused: true)
        for index in 0..<3 {
            try await first.enqueue(
                NetworkRequest<Data, VoidResponse>(path: "/\(index)", method: .post, body: Data(count: 500)),
                kind: "k")
        }
        await first.close()
        // Cut the last entry in half, as a crash in the middle of its write would.
        let journal = directory.appendingPathComponent("journal")
        let segment = try #require(
            try FileManager.default.contentsOfDirectory(atPath: journal.path).sorted().first {
                FileManager.default.contents(atPath: journal.appendingPathComponent($0).path)?.isEmpty == false
            })
        let segmentURL = journal.appendingPathComponent(segment)
        let data = try Data(contentsOf: segmentURL)
        try data.prefix(data.count - 300).write(to: segmentURL)
        // (A file that cannot be read is not damage: OutboxHostileTests.unreadableSegmentIsNotQuarantined.)

        let second = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules(), paused: true)
        let events = second.events()
        var reports: [(String, Int)] = []
        for await event in events {
            if case .quarantined(let file, _, let recovered) = event { reports.append((file, recovered)) }
            if reports.count == 1 { break }
        }
        #expect(reports.map(\.0) == [segment])
        #expect(reports.first { $0.0 == segment }?.1 == 2)
        #expect(second.pendingCount == 2)
        second.onResult(kind: "k", as: VoidResponse.self) { _, _ in }
        second.resume()
        #expect(await eventually { second.pendingCount == 0 })
        #expect(server.recordedRequests.map(\.path) == ["/0", "/1"])
        let quarantine = try FileManager.default.contentsOfDirectory(
            atPath: directory.appendingPathComponent("quarantine").path)
        #expect(quarantine.count == 1)
        await second.close()
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Garbage after the last record and a damaged record in the middle: intact entries before and after survive")
    func quarantineGarbage() async throws {
        let server = try echoServer()
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules(), paused: true)
        for index in 0..<3 {
            try await first.enqueue(
                NetworkRequest<Data, VoidResponse>(path: "/\(index)", method: .post, body: Data(count: 200)),
                kind: "k")
        }
        await first.close()
        let journal = directory.appendingPathComponent("journal")
        let segment = try #require(
            try FileManager.default.contentsOfDirectory(atPath: journal.path).sorted().first {
                FileManager.default.contents(atPath: journal.appendingPathComponent($0).path)?.isEmpty == false
            })
        let segmentURL = journal.appendingPathComponent(segment)
        var data = try Data(contentsOf: segmentURL)
        let recordSize = data.count / 3
        data[recordSize + recordSize / 2] ^= 0xFF  // Flip a byte inside the second record.
        data.append(Data("garbage that is not a record".utf8))
        try data.write(to: segmentURL)

        let second = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules(), paused: true)
        #expect(second.pendingCount == 2)
        second.onResult(kind: "k", as: VoidResponse.self) { _, _ in }
        second.resume()
        #expect(await eventually { second.pendingCount == 0 })
        #expect(server.recordedRequests.map(\.path) == ["/0", "/2"])
        await second.close()
        // Repaired: a third opening finds nothing damaged.
        let third = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules(), paused: true)
        #expect(third.pendingCount == 0)
        await third.close()
        let quarantine = try FileManager.default.contentsOfDirectory(
            atPath: directory.appendingPathComponent("quarantine").path)
        #expect(quarantine.count == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Old journal segments are deleted, and a live entry in the oldest is copied forward")
    func compaction() async throws {
        let server = try LoopbackServer { request in request.path == "/stuck" ? status(404) : .echo }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(
            directory: directory, client: server.client(), environment: RetryEnvironment.live, segmentSize: 4_096)
        outbox.onResult(kind: "k", as: VoidResponse.self) { _, _ in }
        // No handler for "stuck": its result stays live while the journal rolls over many segments.
        try await outbox.enqueue(NetworkRequest<VoidRequest, VoidResponse>(path: "/stuck", method: .post), kind: "s")
        for _ in 0..<40 {
            try await outbox.enqueue(
                NetworkRequest<Data, VoidResponse>(path: "/x", method: .post, body: Data(count: 1_000)), kind: "k")
        }
        #expect(await eventually(timeout: .seconds(30)) { outbox.pendingCount == 1 })
        // One more batch lets the writer compact after the last done records.
        try await outbox.enqueue(NetworkRequest<VoidRequest, VoidResponse>(path: "/x", method: .post), kind: "k")
        #expect(await eventually(timeout: .seconds(30)) { outbox.pendingCount == 1 })
        await outbox.close()
        let segments = try FileManager.default.contentsOfDirectory(
            atPath: directory.appendingPathComponent("journal").path
        ).filter { $0.hasSuffix(".log") }
        #expect(segments.count <= 4)
        let reopened = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules(), paused: true)
        #expect(reopened.pendingCount == 1)
        let stuck = Locked<Int?>(nil)
        reopened.onResult(kind: "s", as: VoidResponse.self) { _, result in
            if case .failure(.unacceptableStatusCode(let status, _, _)) = result { stuck.withLock { $0 = status } }
        }
        #expect(await eventually { reopened.pendingCount == 0 })
        #expect(stuck.withLock { $0 } == 404)
        await reopened.close()
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Reopened with more live entries than two segments hold: compaction ends, enqueues and sends go on")
    func compactionWithMuchLiveData() async throws {
        let server = try LoopbackServer { _ in .echo }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func request(_ index: Int) -> NetworkRequest<Data, VoidResponse> {
            NetworkRequest(path: "/\(index)", method: .post, body: Data(count: 1_000))
        }
        // Paused: every entry stays live. One big segment, then split into ten segments of four entries each, more
        // than the 4 KB segment size below: what runs killed before they could send leave.
        let first = try Outbox(
            directory: directory, client: server.client(), paused: true, environment: RetryEnvironment.live,
            segmentSize: 1 << 20)
        for index in 0..<40 { try await first.enqueue(request(index), kind: "k", orderingKey: "one") }
        await first.close()
        let journal = directory.appendingPathComponent("journal")
        let files = try FileManager.default.contentsOfDirectory(atPath: journal.path).filter { $0.hasSuffix(".log") }
        var records: [Data] = []
        for file in files {
            let data = try Data(contentsOf: journal.appendingPathComponent(file))
            records += JournalFormat.parse(data).records.map { data[$0.1] }
            try FileManager.default.removeItem(at: journal.appendingPathComponent(file))
        }
        #expect(records.count == 40)
        for segment in 0..<10 {
            let data = records[(segment * 4)..<(segment * 4 + 4)].reduce(Data(), +)
            #expect(data.count > 4_096)
            try data.write(to: journal.appendingPathComponent(String(format: "journal-%012d.log", segment + 1)))
        }

        let outbox = try Outbox(
            directory: directory, client: server.client(), paused: true, environment: RetryEnvironment.live,
            segmentSize: 4_096)
        outbox.onResult(kind: "k", as: VoidResponse.self) { _, _ in }
        // Before the fix, the writer's first batch started a compaction that copied the live records forward for
        // ever, rolling over a new segment each time: this enqueue never returned.
        let acknowledged = Locked(false)
        Task {
            try await outbox.enqueue(request(40), kind: "k", orderingKey: "one")
            acknowledged.withLock { $0 = true }
        }
        let returned = await eventually(timeout: .seconds(20)) { acknowledged.withLock { $0 } }
        #expect(returned, "the enqueue after reopening never returned")
        guard returned else { return }  // close() would wait for the stuck writer thread for ever.
        outbox.resume()
        #expect(await eventually(timeout: .seconds(30)) { outbox.pendingCount == 0 })
        #expect(server.recordedRequests.map(\.path) == (0...40).map { "/\($0)" })
        await outbox.close()
        let segments = try FileManager.default.contentsOfDirectory(
            atPath: directory.appendingPathComponent("journal").path
        ).filter { $0.hasSuffix(".log") }
        #expect(segments.count <= 4)
    }
}
