import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A client that answers every request at once, by path, with no socket: `answer` gives the status and headers.
private final class ScriptedClient: NetworkClientProtocol {
    private let answer: @Sendable (String) async throws -> (status: Int, headers: [String: String])
    private let log = Locked<[String]>([])

    init(_ answer: @escaping @Sendable (String) async throws -> (status: Int, headers: [String: String])) {
        self.answer = answer
    }

    /// The paths requested, in order.
    var paths: [String] { log.withLock { $0 } }

    func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        // The outbox sends only its entries, `Data` in and out.
        guard ResponseModel.self == Data.self else { throw OutboxError.sendFailed("not an outbox entry") }
        // Suspends once, as a real client does: on virtual time a retry loop would otherwise never let other tasks run.
        await Task.yield()
        let path = networkRequest.path ?? ""
        log.withLock { $0.append(path) }
        let (status, headers) = try await answer(path)
        let response = HTTPURLResponse(
            url: URL(string: "http://outbox.test\(path)")!, statusCode: status, httpVersion: "HTTP/1.1",
            headerFields: headers)!
        guard (200..<300).contains(status) else {
            throw NetworkClientError.unacceptableStatusCode(statusCode: status, response: response, data: Data())
        }
        guard let value = Data() as? ResponseModel else { throw OutboxError.sendFailed("not an outbox entry") }
        return NetworkResponse(value: value, response: response, data: Data())
    }
}

private func post(_ path: String, bytes: Int = 0) -> NetworkRequest<Data, VoidResponse> {
    NetworkRequest(path: path, method: .post, body: Data(count: bytes))
}

/// The `.log` files of the outbox's journal, by name.
private func segmentNames(_ directory: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("journal").path)
        .filter { $0.hasSuffix(".log") }.sorted()
}

private func quarantineExists(_ directory: URL) -> Bool {
    FileManager.default.fileExists(atPath: directory.appendingPathComponent("quarantine").path)
}

/// Issue 21's outbox findings (hostile round three), one test each.
@Suite("Outbox, hostile round three")
struct OutboxHostileTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("An enqueue that fails after a partial write leaves the journal as it was: nothing acknowledged is lost")
    func failedPartialWrite() async throws {
        let client = ScriptedClient { path in (path == "/stuck" ? 404 : 200, [:]) }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(directory: directory, client: client, environment: .live, segmentSize: 4_096)
        outbox.onResult(kind: "k", as: VoidResponse.self) { _, _ in }
        // As on a nearly full disk: 100 bytes of the record reach the file, then ENOSPC.
        outbox.journalForTesting.failNextWrite(afterBytes: 100)
        await #expect(throws: OutboxError.self) { try await outbox.enqueue(post("/failed", bytes: 1_000), kind: "k") }
        // Acknowledged next; no handler for "s", so its result stays live while the journal rolls over and compacts.
        let kept = try await outbox.enqueue(post("/stuck"), kind: "s")
        for _ in 0..<40 { try await outbox.enqueue(post("/x", bytes: 1_000), kind: "k") }
        #expect(await eventually(timeout: .seconds(30)) { outbox.pendingCount == 1 })
        try await outbox.enqueue(post("/x"), kind: "k")
        #expect(await eventually(timeout: .seconds(30)) { outbox.pendingCount == 1 })
        await outbox.close()

        let reopened = try Outbox(directory: directory, client: client, rules: Outbox.Rules(), paused: true)
        let events = reopened.events()
        #expect(reopened.pendingCount == 1)
        let handled = Locked<[UUID]>([])
        reopened.onResult(kind: "s", as: VoidResponse.self) { entry, _ in handled.withLock { $0.append(entry.id) } }
        #expect(await eventually { reopened.pendingCount == 0 })
        await reopened.close()
        #expect(handled.withLock { $0 } == [kept.id])
        #expect(!client.paths.contains("/failed"))
        var quarantined: [String] = []
        for await event in events { if case .quarantined(let file, _, _) = event { quarantined.append(file) } }
        #expect(quarantined == [])
        #expect(!quarantineExists(directory))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "Segment numbers past Int32.max go on counting; a segment under the old wrapped name is read, not overwritten")
    func segmentNumbersPastInt32() async throws {
        let client = ScriptedClient { _ in (200, [:]) }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let journal = directory.appendingPathComponent("journal")
        let first = try Outbox(directory: directory, client: client, rules: Outbox.Rules(), paused: true)
        for index in 0..<5 { try await first.enqueue(post("/\(index)"), kind: "k") }
        await first.close()
        // Every record into one segment numbered Int32.max.
        var records = Data()
        for name in try segmentNames(directory) {
            records.append(try Data(contentsOf: journal.appendingPathComponent(name)))
            try FileManager.default.removeItem(at: journal.appendingPathComponent(name))
        }
        try records.write(to: journal.appendingPathComponent("journal-002147483647.log"))

        let second = try Outbox(directory: directory, client: client, rules: Outbox.Rules(), paused: true)
        #expect(second.pendingCount == 5)
        for index in 5..<8 { try await second.enqueue(post("/\(index)"), kind: "k") }
        await second.close()
        #expect(try segmentNames(directory).contains("journal-002147483648.log"))
        #expect(try segmentNames(directory).allSatisfy { !$0.contains("--") })

        let third = try Outbox(directory: directory, client: client, rules: Outbox.Rules(), paused: true)
        #expect(third.pendingCount == 8)
        await third.close()
        // What a version with the 32-bit format left: the segment after Int32.max under a wrapped name.
        try FileManager.default.moveItem(
            at: journal.appendingPathComponent("journal-002147483648.log"),
            to: journal.appendingPathComponent("journal--02147483648.log"))
        let fourth = try Outbox(directory: directory, client: client, rules: Outbox.Rules(), paused: true)
        #expect(fourth.pendingCount == 8)
        fourth.onResult(kind: "k", as: VoidResponse.self) { _, _ in }
        fourth.resume()
        #expect(await eventually { fourth.pendingCount == 0 })
        await fourth.close()
        #expect(Set(client.paths) == Set((0..<8).map { "/\($0)" }))
        #expect(try segmentNames(directory).allSatisfy { !$0.contains("--") })
        #expect(!quarantineExists(directory))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A segment that cannot be read now fails the opening with storageFailed, stays in place, and comes back")
    func unreadableSegmentIsNotQuarantined() async throws {
        let client = ScriptedClient { _ in (200, [:]) }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let journal = directory.appendingPathComponent("journal")
        let first = try Outbox(directory: directory, client: client, rules: Outbox.Rules(), paused: true)
        for index in 0..<3 { try await first.enqueue(post("/\(index)"), kind: "k") }
        await first.close()
        let segment = try #require(
            try segmentNames(directory).first {
                (try? Data(contentsOf: journal.appendingPathComponent($0)).isEmpty) == false
            })
        let path = journal.appendingPathComponent(segment)
        let aside = directory.appendingPathComponent("aside")
        // The tests run as root, for whom chmod 000 does not deny reading: a directory in the file's place makes the
        // read fail (EISDIR) the way EACCES or EIO would.
        try FileManager.default.moveItem(at: path, to: aside)
        try FileManager.default.createDirectory(at: path, withIntermediateDirectories: false)
        #expect(throws: OutboxError.storageFailed(operation: "read", path: path.path, code: EISDIR)) {
            try Outbox(directory: directory, client: client, rules: Outbox.Rules(), paused: true)
        }
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: path.path, isDirectory: &isDirectory) && isDirectory.boolValue)
        #expect(!quarantineExists(directory))

        try FileManager.default.removeItem(at: path)
        try FileManager.default.moveItem(at: aside, to: path)
        let reopened = try Outbox(directory: directory, client: client, rules: Outbox.Rules(), paused: true)
        #expect(reopened.pendingCount == 3)
        await reopened.close()
        #expect(!quarantineExists(directory))
    }
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("One entry stuck behind 503s does not pin the journal: its size stays bounded while traffic goes on")
    func stuckEntryDoesNotPinTheJournal() async throws {
        let client = ScriptedClient { path in (path == "/stuck" ? 503 : 200, [:]) }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Every backoff lasts until the outbox is closed: the stuck entry stays live throughout.
        let environment = RetryEnvironment(
            sleep: { _ in try await Task.sleep(for: .seconds(3_600)) }, now: { Date() }, random: { $0.upperBound })
        let segmentSize = 16 * 1024
        // Enqueued, then a restart: the stuck entry is alone in a small segment, the oldest, more than half live.
        let first = try Outbox(
            directory: directory, client: client, paused: true, environment: environment, segmentSize: segmentSize)
        let stuck = try await first.enqueue(post("/stuck", bytes: 4_000), kind: "s", orderingKey: "stuck")
        await first.close()
        let outbox = try Outbox(
            directory: directory, client: client, environment: environment, segmentSize: segmentSize)
        outbox.onResult(kind: "k", as: VoidResponse.self) { _, _ in }
        var largest = 0
        for round in 0..<30 {
            for index in 0..<10 {
                try await outbox.enqueue(post("/\(round)/\(index)", bytes: 4_000), kind: "k", orderingKey: "\(index)")
            }
            #expect(await eventually(timeout: .seconds(30)) { outbox.pendingCount == 1 })
            largest = max(largest, everyByte(under: directory.appendingPathComponent("journal")).count)
        }
        await outbox.close()
        // 3 MB went through; what stays is the stuck entry and a few segments' worth of recent records.
        #expect(largest <= 8 * segmentSize, "the journal grew to \(largest) bytes")
        let reopened = try Outbox(directory: directory, client: client, rules: Outbox.Rules(), paused: true)
        #expect(reopened.pendingCount == 1)
        await reopened.close()
        #expect(client.paths.contains("/stuck"))
        _ = stuck
    }
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Retry-After: 0 or a date in the past still waits the backoff, and an unread events stream stays bounded")
    func noRetryStorm() async throws {
        let client = ScriptedClient { path in
            let retryAfter = path == "/zero" ? "0" : "Sun, 06 Nov 1994 08:49:37 GMT"
            return (503, ["Retry-After": retryAfter])
        }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let time = VirtualTime(longestWaits: true)
        let outbox = try Outbox(
            directory: directory, client: client, retryPolicy: RetryPolicy(baseDelay: 1, maxDelay: 30), paused: true,
            environment: time.environment)
        let unread = outbox.events()
        let events = outbox.events()
        try await outbox.enqueue(post("/zero"), kind: "k", orderingKey: "zero")
        try await outbox.enqueue(post("/past"), kind: "k", orderingKey: "past")
        outbox.resume()
        let delays = Locked<[String: [TimeInterval]]>([:])
        let enough = await firstEvent(events) { event in
            guard case .retrying(let entry, _, let delay, _) = event else { return false }
            return delays.withLock {
                $0[entry.orderingKey ?? "", default: []].append(delay)
                return $0.values.map(\.count).reduce(0, +) >= 2 * (Outbox.maximumBufferedEvents + 100)
            }
        }
        #expect(enough != nil)
        await outbox.close()
        // The policy's backoff ceilings (longest waits drawn): 1, 2, 4, 8, 16 s, then 30 s for ever.
        let expected: [TimeInterval] = [1, 2, 4, 8, 16] + Array(repeating: 30, count: 20)
        #expect(delays.withLock { Array($0["zero", default: []].prefix(25)) } == expected)
        #expect(delays.withLock { Array($0["past", default: []].prefix(25)) } == expected)
        // The stream nobody read holds the newest events only, not the whole storm.
        var buffered: [OutboxEvent] = []
        for await event in unread { buffered.append(event) }
        #expect(buffered.count == Outbox.maximumBufferedEvents)
        #expect(buffered.allSatisfy { if case .retrying = $0 { true } else { false } })
        // The newest are kept: the last event buffered is the entry's latest attempt, at least the last one the
        // reader saw for that entry.
        if case .retrying(let entry, let attempt, _, _) = buffered.last {
            let key = entry.orderingKey ?? ""
            #expect(attempt >= delays.withLock { $0[key, default: []].count })
        }
    }
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("2,000 entries with distinct ordering keys: the pump's work grows with the sends, not with keys × sends")
    func schedulingIsNotQuadraticInKeys() async throws {
        let client = ScriptedClient { _ in (200, [:]) }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(directory: directory, client: client, paused: true, environment: .live)
        outbox.onResult(kind: "k", as: VoidResponse.self) { _, _ in }
        let count = 2_000
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                group.addTask { _ = try await outbox.enqueue(post("/\(index)"), kind: "k", orderingKey: "\(index)") }
            }
            try await group.waitForAll()
        }
        outbox.resume()
        #expect(await eventually(timeout: .seconds(60)) { outbox.pendingCount == 0 })
        await outbox.close()
        #expect(client.paths.count == count)
        // Each send adds its key at most twice (enqueue, end of send) and the pump takes each out once: about 2 per
        // entry. Filtering and sorting every queue at each pump was about count² / 2 (2,000,000 here).
        #expect(outbox.pumpWorkForTesting <= 4 * count, "the pump examined \(outbox.pumpWorkForTesting) keys")
    }
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("close() returns within its timeout while a result handler hangs; the result is kept and handled next time")
    func closeWithHungHandler() async throws {
        let client = ScriptedClient { _ in (200, [:]) }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(directory: directory, client: client, environment: .live)
        // A handler that ignores cancellation and never returns until the test lets it.
        let hung = Locked<CheckedContinuation<Void, Never>?>(nil)
        defer { hung.withLock { $0?.resume() } }
        outbox.onResult(kind: "k", as: VoidResponse.self) { _, _ in
            await withCheckedContinuation { continuation in hung.withLock { $0 = continuation } }
        }
        let id = try await outbox.enqueue(post("/once"), kind: "k")
        #expect(await eventually { hung.withLock { $0 != nil } })
        let closed = Locked(false)
        Task {
            await outbox.close(timeout: 0.5)
            closed.withLock { $0 = true }
        }
        let returned = await eventually(timeout: promptly) { closed.withLock { $0 } }
        #expect(returned, "close() waited for the hung handler")
        guard returned else { return }

        let reopened = try Outbox(directory: directory, client: client, rules: Outbox.Rules(), paused: true)
        #expect(reopened.pendingCount == 1)
        let handled = Locked<[UUID]>([])
        reopened.onResult(kind: "k", as: VoidResponse.self) { entry, result in
            if case .success = result { handled.withLock { $0.append(entry.id) } }
        }
        #expect(await eventually { reopened.pendingCount == 0 })
        await reopened.close()
        #expect(handled.withLock { $0 } == [id.id])
        // The result was kept: the entry was not sent a second time.
        #expect(client.paths == ["/once"])
    }
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("maximumAge fires for an entry enqueued while the wall clock was a year ahead, once the clock is set right")
    func maximumAgeWithClockAhead() async throws {
        let client = ScriptedClient { _ in (503, [:]) }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let yearAhead = Locked(true)
        let elapsed = Locked<TimeInterval>(0)
        // Virtual time: sleeps advance both clocks; the wall clock reads a year ahead until it is set right.
        let environment = RetryEnvironment(
            sleep: { seconds in
                elapsed.withLock { $0 += seconds }
                try Task.checkCancellation()
            },
            now: {
                start.addingTimeInterval(elapsed.withLock { $0 } + (yearAhead.withLock { $0 } ? 365 * 86_400 : 0))
            },
            random: { $0.upperBound },
            uptime: { elapsed.withLock { $0 } })
        let outbox = try Outbox(
            directory: directory, client: client, retryPolicy: RetryPolicy(baseDelay: 1, maxDelay: 30),
            limits: Outbox.Limits(maximumAge: 60), paused: true, environment: environment)
        let outcome = Locked<Int?>(nil)
        outbox.onResult(kind: "k", as: VoidResponse.self) { _, result in
            if case .failure(.unacceptableStatusCode(let status, _, _)) = result { outcome.withLock { $0 = status } }
        }
        try await outbox.enqueue(post("/never"), kind: "k")
        yearAhead.withLock { $0 = false }
        outbox.resume()
        // Virtual time proves the rule (the checks below); the wall-clock wait only bounds a hang. Broken, the entry
        // would be retried on virtual time at full speed, far past 60 s and 10 sends. It is not `promptly`: the whole
        // suite stalls for several seconds at times (synchronous reads and process launches of other suites hold
        // the cooperative threads), and this test's six attempts were caught in it.
        let failed = await eventually(timeout: .seconds(30)) { outcome.withLock { $0 } != nil }
        await outbox.close()
        #expect(failed, "the entry was still retried after \(elapsed.withLock { $0 }) s of virtual time")
        #expect(outcome.withLock { $0 } == 503)
        // Given up within the maximum age, not a year later.
        #expect(elapsed.withLock { $0 } <= 60)
        #expect(client.paths.count < 10)
    }
}
