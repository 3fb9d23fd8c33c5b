import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The outbox as a value: every transition of ``OutboxStateMachine``, without a disk, a socket or a clock. Entries
/// are named by their path; actions are compared as short descriptions written out by hand.
@Suite("Outbox state machine")
struct OutboxStateMachineTests {
    /// The handlers are names: the machine hands them back, never calls them.
    typealias Machine = OutboxStateMachine<String>

    static let start = Date(timeIntervalSince1970: 1_700_000_000)

    /// Builds entries and describes actions by entry name.
    final class World {
        var machine: Machine
        private var names: [UUID: String] = [:]
        private var entries: [String: StoredEntry] = [:]
        private var sequence: UInt64 = 0

        init(limits: Outbox.Limits = Outbox.Limits(), paused: Bool = false, remembered: Int = 1_000) {
            machine = Machine(limits: limits, paused: paused, rememberedResults: remembered)
        }

        /// A stored entry named `name` (its path), not yet known to the machine.
        func entry(
            _ name: String, key: String? = nil, kind: String = "k", enqueuedAt: Date = OutboxStateMachineTests.start
        ) -> StoredEntry {
            sequence += 1
            let entry = StoredEntry(
                id: UUID(), sequence: sequence, kind: kind, orderingKey: key, idempotencyKey: name,
                enqueuedAt: enqueuedAt, method: "POST", path: name, headers: [:])
            names[entry.id] = name
            entries[name] = entry
            return entry
        }

        /// Enqueues a new entry named `name`: reserved, then written.
        @discardableResult
        func enqueue(_ name: String, key: String? = nil, kind: String = "k", size: Int = 100) throws -> [String] {
            let stored = entry(name, key: key, kind: kind)
            try machine.reserve(stored, size: size)
            return describe(machine.enqueued(stored, size: size))
        }

        func id(_ name: String) -> UUID { entries[name]!.id }

        func describe(_ actions: [Machine.Action]) -> [String] {
            actions.map { action in
                switch action {
                case .startSending(let id): "start \(names[id]!)"
                case .send(let entry, let attempt): "send \(names[entry.id]!) #\(attempt)"
                case .wait(let id, let delay): "wait \(names[id]!) \(delay)"
                case .callHandler(let handler, let entry, _, let generation):
                    "call \(handler)/\(generation) \(names[entry.id]!)"
                case .deliver(let ids): "deliver \(ids.map { names[$0]! }.joined(separator: ","))"
                case .storeResult(let id, _): "store \(names[id]!)"
                case .complete(let id): "complete \(names[id]!)"
                case .discard(let id): "discard \(names[id]!)"
                case .emit(let event): "emit " + describe(event)
                case .resolveTickets(let id, _): "resolve \(names[id]!)"
                case .failTickets(let id, let error):
                    "fail \(names[id]!) \(error == .entryCancelled ? "entryCancelled" : "other")"
                }
            }
        }

        private func describe(_ event: OutboxEvent) -> String {
            switch event {
            case .sent(let entry, let status): "sent \(names[entry.id]!) \(status)"
            case .retrying(let entry, let attempt, let delay, _): "retrying \(names[entry.id]!) #\(attempt) \(delay)"
            case .failed(let entry, _): "failed \(names[entry.id]!)"
            case .handled(let entry): "handled \(names[entry.id]!)"
            case .handlerFailed(let entry): "handlerFailed \(names[entry.id]!)"
            case .quarantined(let file, _, _): "quarantined \(file)"
            case .resultDiscarded(let entry): "discarded \(names[entry.id]!)"
            case .drained: "drained"
            }
        }

        // The transitions, by name.
        func due(_ name: String) -> [String] { describe(machine.due(id(name))) }
        func sent(_ name: String, status: Int = 201, at date: Date = OutboxStateMachineTests.start) -> [String] {
            describe(machine.sent(id(name), .response(status, at: date)))
        }
        func failed(_ name: String, status: Int = 503, retryingAfter delay: TimeInterval?, uptime: TimeInterval = 0)
            -> [String]
        {
            let result = StoredResult.response(status, at: OutboxStateMachineTests.start.addingTimeInterval(uptime))
            let error = NetworkClientError.transportFailed(URLError(.timedOut))
            let moment = Machine.Moment(now: OutboxStateMachineTests.start.addingTimeInterval(uptime), uptime: uptime)
            return describe(machine.failed(id(name), result, error: error, retryingAfter: delay, at: moment))
        }
        func handled(_ name: String, generation: Int, threw: Bool = false) -> [String] {
            describe(machine.handlerReturned(id(name), generation: generation, threw: threw))
        }
        func stored(_ name: String, _ ok: Bool = true, at date: Date = OutboxStateMachineTests.start) -> [String] {
            describe(machine.resultStored(id(name), ok, at: date))
        }
        func completed(_ name: String) -> [String] { describe(machine.completed(id(name))) }
        func register(_ handler: String, kind: String = "k") -> [String] {
            describe(machine.register(kind: kind, handler))
        }
        func deliver(_ name: String) -> [String] { describe(machine.deliver(id(name))) }
        func cancel(_ name: String) -> [String]? { machine.cancel(id(name)).map(describe) }
        func ticket(_ name: String) -> String {
            switch machine.ticket(id(name)) {
            case .result(let outcome): "result \(outcome.result.statusCode ?? 0)"
            case .waiting: "waiting"
            case .unknown: "unknown"
            case .closed: "closed"
            }
        }
    }

    // MARK: Sending

    @Test("An entry goes out, its result goes to the kind's handler, and it is done once its completion is stored")
    func sendAndHandle() throws {
        let world = World()
        #expect(world.register("h") == [])
        #expect(try world.enqueue("A") == ["start A"])
        #expect(world.machine.pendingCount == 1)
        #expect(world.due("A") == ["send A #1"])
        #expect(world.sent("A") == ["resolve A", "emit sent A 201", "call h/1 A"])
        #expect(world.handled("A", generation: 1) == ["complete A"])
        #expect(world.machine.pendingCount == 1, "done only once the completion is stored")
        #expect(world.completed("A") == ["emit handled A", "emit drained"])
        #expect(world.machine.pendingCount == 0)
        #expect(world.machine.bytes == 0)
    }

    @Test("One key sends one entry at a time in enqueue order; keys go side by side up to the bound, oldest first")
    func orderAndConcurrency() throws {
        let world = World(limits: Outbox.Limits(maximumConcurrentSends: 2))
        _ = world.register("h")
        #expect(try world.enqueue("A1", key: "a") == ["start A1"])
        #expect(try world.enqueue("A2", key: "a") == [], "A1 holds key a")
        #expect(try world.enqueue("B1", key: "b") == ["start B1"])
        #expect(try world.enqueue("C1", key: "c") == [], "two keys send already")
        #expect(world.machine.pending().map(\.inFlight) == [true, false, true, false])
        _ = world.due("A1")
        _ = world.sent("A1")
        _ = world.handled("A1", generation: 1)
        #expect(world.completed("A1") == ["emit handled A1", "start A2"], "A2 (sequence 2) before C1 (sequence 4)")
    }

    @Test("A later entry of a key waits while an earlier one is still being written, and goes once it is")
    func writesFinishingOutOfOrder() throws {
        let world = World()
        let first = world.entry("A1", key: "a")
        let second = world.entry("A2", key: "a")
        try world.machine.reserve(first, size: 10)
        try world.machine.reserve(second, size: 10)
        #expect(world.describe(world.machine.enqueued(second, size: 10)) == [])
        #expect(world.describe(world.machine.enqueued(first, size: 10)) == ["start A1"])
        #expect(world.machine.pending().map(\.ticket.id) == [first.id, second.id])
    }

    @Test("A failed write gives its room back and lets the later entries of its key go")
    func failedWrite() throws {
        let world = World(limits: Outbox.Limits(maximumEntries: 2))
        let first = world.entry("A1", key: "a")
        try world.machine.reserve(first, size: 10)
        #expect(try world.enqueue("A2", key: "a") == [], "waits for A1's write")
        #expect(world.machine.pendingCount == 2)
        #expect(world.describe(world.machine.enqueueFailed(first, size: 10)) == ["start A2"])
        #expect(world.machine.pendingCount == 1)
        #expect(world.machine.bytes == 100)
    }

    @Test("Limits: an entry past maximumEntries or maximumBytes is refused and changes nothing")
    func limits() throws {
        let world = World(limits: Outbox.Limits(maximumEntries: 2, maximumBytes: 250))
        try world.enqueue("A", size: 100)
        #expect(throws: OutboxError.tooManyBytes(limit: 250)) { try world.enqueue("B", size: 151) }
        try world.enqueue("C", size: 150)
        #expect(throws: OutboxError.tooManyEntries(limit: 2)) { try world.enqueue("D", size: 1) }
        #expect(world.machine.pendingCount == 2)
        #expect(world.machine.bytes == 250)
        world.machine.close()
        #expect(throws: OutboxError.closed) { try world.machine.takeSequence() }
    }

    // MARK: Retries

    @Test("A retried failure waits, then is due again; pending() shows the attempts, the next one and the last error")
    func retry() throws {
        let world = World()
        _ = try world.enqueue("A")
        _ = world.due("A")
        #expect(world.failed("A", retryingAfter: 2) == ["emit retrying A #1 2.0", "wait A 2.0"])
        let waiting = try #require(world.machine.pending().first)
        #expect(waiting.attempts == 1)
        #expect(waiting.nextAttempt == Self.start.addingTimeInterval(2))
        #expect(waiting.lastError == NetworkClientError.transportFailed(URLError(.timedOut)).description)
        #expect(waiting.inFlight)
        #expect(world.cancel("A") == nil, "an entry between attempts is in flight")
        #expect(world.due("A") == ["send A #2"])
        #expect(world.machine.pending().first?.nextAttempt == nil)
        #expect(world.sent("A") == ["resolve A", "emit sent A 201", "store A"])
        #expect(world.machine.pending().first?.lastError == nil)
    }

    @Test("A failure that is not retried is the entry's result: the handler gets it and the key moves on")
    func permanentFailure() throws {
        let world = World()
        _ = world.register("h")
        _ = try world.enqueue("A", key: "a")
        _ = try world.enqueue("B", key: "a")
        _ = world.due("A")
        #expect(
            world.failed("A", status: 404, retryingAfter: nil) == [
                "resolve A", "emit sent A 404", "emit failed A", "call h/1 A",
            ])
        _ = world.handled("A", generation: 1)
        #expect(world.completed("A") == ["emit handled A", "start B"])
    }

    @Test("maximumAge: a retry that would start past it fails the entry, on the monotonic clock, from enqueue")
    func maximumAge() throws {
        let world = World(limits: Outbox.Limits(maximumAge: 60))
        _ = try world.enqueue("A")
        _ = world.due("A")
        #expect(world.failed("A", retryingAfter: 30) == ["emit retrying A #1 30.0", "wait A 30.0"])
        _ = world.due("A")
        #expect(world.failed("A", retryingAfter: 29, uptime: 31) == ["emit retrying A #2 29.0", "wait A 29.0"])
        _ = world.due("A")
        #expect(
            world.failed("A", retryingAfter: 30, uptime: 31) == [
                "resolve A", "emit sent A 503", "emit failed A", "store A",
            ], "31 s old, and 30 s more would pass 60")
    }

    @Test("maximumAge: an entry enqueued while the wall clock was ahead counts as enqueued now, not a year ago")
    func maximumAgeWithClockAhead() throws {
        let world = World(limits: Outbox.Limits(maximumAge: 60))
        let ahead = world.entry("A", enqueuedAt: Self.start.addingTimeInterval(365 * 86_400))
        try world.machine.reserve(ahead, size: 1)
        _ = world.machine.enqueued(ahead, size: 1)
        _ = world.due("A")
        #expect(world.failed("A", retryingAfter: 59) == ["emit retrying A #1 59.0", "wait A 59.0"])
        _ = world.due("A")
        #expect(
            world.failed("A", retryingAfter: 2, uptime: 59) == [
                "resolve A", "emit sent A 503", "emit failed A", "store A",
            ])
    }

    // MARK: Results

    @Test("With no handler, the result is stored and leaves the queue; a handler registered later gets it")
    func storedThenDelivered() throws {
        let world = World()
        _ = try world.enqueue("A", key: "a")
        _ = try world.enqueue("B", key: "a")
        _ = world.due("A")
        #expect(world.sent("A") == ["resolve A", "emit sent A 201", "store A"])
        #expect(world.machine.pending().count == 2, "listed until stored")
        #expect(world.stored("A") == ["start B"])
        #expect(world.machine.pending().count == 1)
        #expect(world.machine.pendingCount == 2)
        #expect(world.ticket("A") == "result 201")
        #expect(world.register("h") == ["deliver A"])
        #expect(world.deliver("A") == ["call h/1 A"])
        #expect(world.deliver("A") == [], "already with the handler")
        #expect(world.handled("A", generation: 1) == ["complete A"])
        #expect(world.completed("A") == ["emit handled A"], "B is still pending")
    }

    @Test("A stored result's handler holds the key it was sent on until it returns")
    func storedResultHoldsItsKey() throws {
        let world = World()
        _ = try world.enqueue("A", key: "a")
        _ = try world.enqueue("B", key: "a")
        _ = world.due("A")
        _ = world.sent("A")
        _ = world.register("h")
        #expect(world.stored("A") == ["call h/1 A"])
        #expect(world.handled("A", generation: 1) == ["complete A"])
        #expect(world.completed("A") == ["emit handled A", "start B"])
    }

    @Test("A handler that throws: the result is stored for a newer handler, never offered again to the same one")
    func throwingHandler() throws {
        let world = World()
        _ = world.register("first")
        _ = try world.enqueue("A")
        _ = world.due("A")
        #expect(world.sent("A") == ["resolve A", "emit sent A 201", "call first/1 A"])
        #expect(world.handled("A", generation: 1, threw: true) == ["emit handlerFailed A", "store A"])
        #expect(world.stored("A") == [], "not offered again to the handler that threw")
        #expect(world.deliver("A") == [])
        #expect(world.register("second") == ["deliver A"])
        #expect(world.deliver("A") == ["call second/2 A"])
        #expect(world.handled("A", generation: 2, threw: true) == ["emit handlerFailed A"])
        #expect(world.machine.pendingCount == 1)
    }

    @Test("A result that cannot be stored leaves the entry queued, to be sent again")
    func resultNotStored() throws {
        let world = World()
        _ = try world.enqueue("A")
        _ = world.due("A")
        _ = world.sent("A")
        #expect(world.stored("A", false) == ["start A"])
        #expect(world.due("A") == ["send A #2"])
    }

    @Test("A result that waited longer than resultRetention for a handler is dropped when the next one is stored")
    func resultRetention() throws {
        let world = World(limits: Outbox.Limits(resultRetention: 10))
        _ = try world.enqueue("old", kind: "nobody")
        _ = try world.enqueue("new", kind: "nobody")
        _ = world.due("old")
        _ = world.sent("old")
        _ = world.stored("old")
        _ = world.due("new")
        _ = world.sent("new", at: Self.start.addingTimeInterval(11))
        #expect(world.stored("new", at: Self.start.addingTimeInterval(11)) == ["discard old", "emit discarded old"])
        #expect(world.machine.pendingCount == 1)
        #expect(world.ticket("old") == "result 201", "still remembered for its ticket")
    }

    // MARK: Tickets and cancel

    @Test("A ticket waits for its entry, then has its result, remembered up to rememberedResults")
    func tickets() throws {
        let world = World(remembered: 1)
        _ = world.register("h")
        _ = try world.enqueue("A", key: "a")
        _ = try world.enqueue("B", key: "b")
        #expect(world.ticket("A") == "waiting")
        _ = world.due("A")
        _ = world.sent("A", status: 200)
        #expect(world.ticket("A") == "result 200")
        _ = world.handled("A", generation: 1)
        _ = world.completed("A")
        #expect(world.ticket("A") == "result 200", "remembered after it is done")
        _ = world.due("B")
        _ = world.sent("B")
        #expect(world.ticket("A") == "unknown", "only the last result is remembered")
        #expect(world.ticket("B") == "result 201")
    }

    @Test("cancel removes a queued entry and fails its ticket's callers; an entry in flight stays")
    func cancel() throws {
        let world = World()
        _ = try world.enqueue("A", key: "a")
        _ = try world.enqueue("B", key: "a")
        _ = try world.enqueue("C", key: "c")
        #expect(world.cancel("A") == nil, "A's sender has started")
        #expect(world.cancel("B") == ["fail B entryCancelled"])
        #expect(world.cancel("B") == nil)
        #expect(world.ticket("B") == "unknown")
        #expect(world.machine.pending().count == 2)
        #expect(world.describe(world.machine.drainedIfEmpty()) == [])
        #expect(world.machine.bytes == 200)
    }

    // MARK: Pause, close, recovery

    @Test("pause holds an entry's next attempt and frees its key; resume starts it again")
    func pauseAndResume() throws {
        let world = World()
        _ = try world.enqueue("A")
        world.machine.pause()
        #expect(try world.enqueue("B", key: "b") == [])
        #expect(world.due("A") == [])
        #expect(world.machine.pending().allSatisfy { !$0.inFlight })
        #expect(world.describe(world.machine.resume()) == ["start A", "start B"])
    }

    @Test(
        "After close nothing starts; a cancelled send leaves its entry queued; results with a handler are unstored"
    )
    func close() throws {
        let world = World()
        _ = world.register("h")
        _ = try world.enqueue("A", key: "a")
        _ = try world.enqueue("B", key: "b")
        _ = world.due("A")
        _ = world.sent("A")
        _ = world.due("B")
        world.machine.close()
        #expect(world.machine.unstoredResults.map(\.id) == [world.id("A")])
        #expect(world.describe(world.machine.abandoned(world.id("B"))) == [])
        #expect(world.ticket("B") == "closed")
        #expect(try world.enqueue("C", key: "c") == [], "a write that was under way is queued, not sent")
    }

    @Test("Recovered entries are queued in sequence order and results wait for their handler; sequences go on")
    func recovered() throws {
        let world = World()
        let first = world.entry("A1", key: "a")
        let second = world.entry("A2", key: "a")
        let done = world.entry("R", key: "a")
        let actions = world.machine.recovered([
            (second, 10, nil), (done, 10, .response(200, at: Self.start)), (first, 10, nil),
        ])
        #expect(world.describe(actions) == ["start A1"])
        #expect(world.machine.pending().map(\.ticket.id) == [first.id, second.id])
        #expect(world.machine.pendingCount == 3)
        #expect(world.machine.bytes == 30)
        #expect(try world.machine.takeSequence() == 4)
        #expect(world.register("h") == ["deliver R"])
    }

    @Test("2,000 keys: the scheduler's work grows with the sends, not with keys × sends")
    func schedulingWork() throws {
        let world = World(paused: true)
        _ = world.register("h")
        for index in 0..<2_000 { try world.enqueue("E\(index)", key: "\(index)") }
        var started = world.describe(world.machine.resume())
        #expect(started == ["start E0", "start E1", "start E2", "start E3"])
        var sends = 0
        while let next = started.popLast() {
            let name = String(next.dropFirst("start ".count))
            _ = world.due(name)
            _ = world.sent(name)
            _ = world.handled(name, generation: 1)
            started += world.completed(name).filter { $0.hasPrefix("start ") }
            sends += 1
        }
        #expect(sends == 2_000)
        #expect(world.machine.pendingCount == 0)
        // Each key is added once at enqueue and taken out once; filtering and sorting every queue at each start was
        // about keys² / 2.
        #expect(world.machine.pumpWork <= 2 * 2_000)
    }
}

extension StoredResult {
    /// A response with `status` and an empty body, stored at `date`.
    static func response(_ status: Int, at date: Date) -> StoredResult {
        StoredResult(statusCode: status, url: nil, headers: [:], body: Data(), failure: nil, storedAt: date)
    }
}
