import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What an ``Outbox`` does, as a value: each event (an entry was enqueued, its attempt is due, it was sent, an
/// attempt failed, a handler returned, a write to the store finished, an entry was cancelled, the outbox closed) is a
/// transition that returns what to do, and the outbox does it outside its lock: write to its store, send through its
/// client, call a handler, emit an event. No I/O, no clock and no task here: the time is an input of the transitions
/// that need it, and every transition is tested directly, without a disk or a socket.
///
/// Each entry has a ``Phase``. Entries of one ordering key wait in that key's queue, in enqueue order; the key is
/// *held* by the entry that is being sent, retried, handed to its handler or stored, and no other entry of the key
/// goes until that one is done. A min-heap of the keys whose head may go (``ReadyKeys``) lets the scheduler start at
/// most ``Outbox/Limits/maximumConcurrentSends`` keys, oldest head first, with work in proportion to the sends it
/// starts.
///
/// `Handler` is what the outbox calls with a result: the machine keeps the one registered for each kind and hands it
/// back in ``Action/callHandler(_:_:_:generation:)``, without calling it.
struct OutboxStateMachine<Handler: Sendable>: Sendable {
    /// A reading of the clocks: the wall clock, and seconds on a monotonic one (which setting the wall clock does not
    /// move), for ``Outbox/Limits/maximumAge``.
    struct Moment: Sendable {
        var now: Date
        var uptime: TimeInterval
    }

    let limits: Outbox.Limits
    /// How many results ``ticket(_:)`` still finds after their entry finished.
    let rememberedResults: Int

    private(set) var records: [UUID: Record] = [:]
    /// The entries whose result is in the store, waiting for a handler (phase ``Phase/stored(_:)``): what
    /// registering a handler and dropping old results look at, without going through every entry.
    private var waitingForHandler: Set<UUID> = []
    /// The queued entries of each key, in sequence order.
    private var queues: [String: [UUID]] = [:]
    /// The keys held, by the entry holding each.
    private var holders: [String: UUID] = [:]
    /// Keys that may be ready to send, by the sequence of their head when added; checked when taken out (a key whose
    /// head changed or that is held is skipped). Every change that can make a key ready adds it.
    private var ready = ReadyKeys()
    /// The keys the scheduler has taken out of `ready`, for tests.
    private(set) var pumpWork = 0
    private var handlers: [String: (generation: Int, run: Handler)] = [:]
    private var handlerGeneration = 0
    /// Entries being written at enqueue: they count against the limits already.
    private var reservedEntries = 0
    /// The sequence numbers of entries being written, by queue: a queue's head waits for lower ones.
    private var enqueuing: [String: Set<UInt64>] = [:]
    private(set) var bytes = 0
    private var nextSequence: UInt64 = 1
    private(set) var paused: Bool
    private(set) var closed = false
    /// The last `rememberedResults` results of this process; `recentOrder` is oldest first.
    private var recentResults: [UUID: TicketOutcome] = [:]
    private var recentOrder: [UUID] = []

    init(limits: Outbox.Limits, paused: Bool, rememberedResults: Int = Outbox.rememberedResults) {
        self.limits = limits
        self.paused = paused
        self.rememberedResults = rememberedResults
    }

    /// The queue of an ordering key: `nil` is the one global order.
    static func queueName(_ orderingKey: String?) -> String {
        orderingKey.map { "k:" + $0 } ?? "global"
    }

    /// The entries enqueued and not yet finished, those being written at enqueue included.
    var pendingCount: Int { records.count + reservedEntries }

    // MARK: Recovery

    /// The store held these entries when the outbox opened, each with the size of its stored request and its
    /// result if one was stored: queue them, and start what can go.
    mutating func recovered(_ entries: [(entry: StoredEntry, size: Int, result: StoredResult?)]) -> [Action] {
        for (entry, size, result) in entries {
            nextSequence = max(nextSequence, entry.sequence + 1)
            var record = Record(entry: entry, size: size)
            if let result { record.phase = .stored(result) }
            save(record)
            bytes += record.bytes
            if result == nil { queues[record.key, default: []].append(entry.id) }
        }
        for key in queues.keys {
            queues[key]?.sort { records[$0]!.entry.sequence < records[$1]!.entry.sequence }
            markReady(key)
        }
        return pump()
    }

    // MARK: Enqueue

    /// The sequence number of a new entry.
    /// - Throws: ``OutboxError/closed``.
    mutating func takeSequence() throws(OutboxError) -> UInt64 {
        guard !closed else { throw .closed }
        defer { nextSequence += 1 }
        return nextSequence
    }

    /// Makes room for `entry`, whose stored request takes `size` bytes, before it is written; no later entry of its
    /// key goes before it is written (``enqueued(_:size:)``) or fails to be (``enqueueFailed(_:size:)``).
    /// - Throws: ``OutboxError/tooManyEntries(limit:)`` or ``OutboxError/tooManyBytes(limit:)``; nothing changes then.
    mutating func reserve(_ entry: StoredEntry, size: Int) throws(OutboxError) {
        guard pendingCount < limits.maximumEntries else { throw .tooManyEntries(limit: limits.maximumEntries) }
        guard bytes + size <= limits.maximumBytes else { throw .tooManyBytes(limit: limits.maximumBytes) }
        reservedEntries += 1
        bytes += size
        enqueuing[Self.queueName(entry.orderingKey), default: []].insert(entry.sequence)
    }

    /// The reserved `entry` is in the store: queue it in sequence order (durable writes of one key may finish out of
    /// order).
    mutating func enqueued(_ entry: StoredEntry, size: Int) -> [Action] {
        let key = Self.queueName(entry.orderingKey)
        reservedEntries -= 1
        endEnqueuing(entry.sequence, of: key)
        save(Record(entry: entry, size: size))
        var ids = queues[key] ?? []
        let position =
            ids.lastIndex { records[$0].map { $0.entry.sequence < entry.sequence } ?? true }.map { $0 + 1 } ?? 0
        ids.insert(entry.id, at: position)
        queues[key] = ids
        markReady(key)
        return pump()
    }

    /// The reserved `entry` could not be written: give its room back.
    mutating func enqueueFailed(_ entry: StoredEntry, size: Int) -> [Action] {
        let key = Self.queueName(entry.orderingKey)
        reservedEntries -= 1
        bytes -= size
        endEnqueuing(entry.sequence, of: key)
        markReady(key)
        return pump()
    }

    private mutating func endEnqueuing(_ sequence: UInt64, of key: String) {
        enqueuing[key]?.remove(sequence)
        if enqueuing[key]?.isEmpty == true { enqueuing[key] = nil }
    }

    // MARK: Sending

    /// The entry's next attempt is due (its first, or after a wait): send it, unless the outbox was paused or closed
    /// meanwhile (then the entry waits in its queue and its key is free).
    mutating func due(_ id: UUID) -> [Action] {
        guard var record = records[id], holders[record.key] == id else { return [] }
        switch record.phase {
        case .queued, .retrying: break
        default: return []
        }
        record.nextAttempt = nil
        guard !closed, !paused else {
            record.phase = .queued
            save(record)
            return release(record.key)
        }
        record.attempts += 1
        record.phase = .sending
        save(record)
        return [.send(record.entry, attempt: record.attempts)]
    }

    /// The attempt got the entry's definitive result (a response, or a failure that is not retried): give it to the
    /// ticket's callers, and to the kind's handler if one is registered, else store it.
    mutating func sent(_ id: UUID, _ result: StoredResult) -> [Action] {
        guard var record = records[id], case .sending = record.phase else { return [] }
        record.nextAttempt = nil
        record.lastError = nil
        let outcome = TicketOutcome(result: result, acceptable: record.entry.acceptable)
        remember(id, outcome)
        var actions: [Action] = [.resolveTickets(id, outcome)]
        let info = record.entry.entry
        if let status = result.statusCode { actions.append(.emit(.sent(info, statusCode: status))) }
        if let failure = result.error(acceptable: record.entry.acceptable) {
            actions.append(.emit(.failed(info, failure)))
        }
        // A handler that is already registered gets the result first: the entry stays in the store until it returns,
        // so a crash meanwhile sends the entry again (same idempotency key) rather than losing its result.
        if let handler = handlers[record.entry.kind] {
            record.phase = .handing(result, generation: handler.generation)
            actions.append(.callHandler(handler.run, record.entry, result, generation: handler.generation))
        } else {
            record.phase = .storingResult(result)
            actions.append(.storeResult(id, result))
        }
        save(record)
        return actions
    }

    /// The attempt failed with `error` (its result, were it final, is `result`); `delay` is the wait before the next
    /// attempt by the retry policy, `nil` when the failure is not retried. An entry that would pass
    /// ``Outbox/Limits/maximumAge`` before its next attempt fails with its last error.
    mutating func failed(
        _ id: UUID, _ result: StoredResult, error: NetworkClientError, retryingAfter delay: TimeInterval?,
        at moment: Moment
    ) -> [Action] {
        guard var record = records[id], case .sending = record.phase else { return [] }
        guard let delay else { return sent(id, result) }
        if let maximumAge = limits.maximumAge, age(of: &record, at: moment) + delay > maximumAge {
            save(record)
            return sent(id, result)
        }
        record.phase = .retrying
        record.nextAttempt = moment.now.addingTimeInterval(delay)
        record.lastError = error.description
        save(record)
        return [
            .emit(.retrying(record.entry.entry, attempt: record.attempts, delay: delay, error: error)),
            .wait(id, delay),
        ]
    }

    /// The entry's send or wait was cancelled (the outbox is closing): it stays queued, and its key is free.
    mutating func abandoned(_ id: UUID) -> [Action] {
        guard var record = records[id], holders[record.key] == id else { return [] }
        switch record.phase {
        case .queued, .sending, .retrying:
            record.phase = .queued
            save(record)
            return release(record.key)
        default:
            return []
        }
    }

    /// How long ago the entry was enqueued, in seconds.
    ///
    /// The wall clock is read once per entry and process, with an enqueue time in the future counted as now (an entry
    /// enqueued while the clock was a year ahead never aged); from then on age grows by the monotonic clock, so moving
    /// the wall clock neither stops nor speeds it.
    private func age(of record: inout Record, at moment: Moment) -> TimeInterval {
        let base = record.ageBase ?? (moment.uptime, max(0, moment.now.timeIntervalSince(record.entry.enqueuedAt)))
        record.ageBase = base
        return base.age + max(0, moment.uptime - base.uptime)
    }

    // MARK: Results

    /// The handler of `generation` returned, or threw: the entry is done once that is stored; a result the handler
    /// threw on is stored (if it was not yet) for a newer handler.
    mutating func handlerReturned(_ id: UUID, generation: Int, threw: Bool) -> [Action] {
        guard var record = records[id] else { return [] }
        let result: StoredResult
        let inStore: Bool
        switch record.phase {
        case .handing(let handed, generation): (result, inStore) = (handed, false)
        case .delivering(let delivered, generation): (result, inStore) = (delivered, true)
        default: return []
        }
        guard threw else {
            record.phase = .completing(stored: inStore ? result : nil)
            save(record)
            return [.complete(id)]
        }
        record.failedGeneration = generation
        record.phase = inStore ? .stored(result) : .storingResult(result)
        save(record)
        let failed = Action.emit(.handlerFailed(record.entry.entry))
        return inStore ? [failed] + releaseIfHeld(by: record) : [failed, .storeResult(id, result)]
    }

    /// The entry's result was written to the store (`stored`), or could not be: then the entry stays queued, to be
    /// sent again. A stored result goes to its handler if one is registered; results that waited longer than
    /// ``Outbox/Limits/resultRetention`` for one are dropped.
    mutating func resultStored(_ id: UUID, _ stored: Bool, at now: Date) -> [Action] {
        guard var record = records[id], case .storingResult(let result) = record.phase else { return [] }
        guard stored else {
            // Closed, or the disk failed: the entry stays queued and is sent again at the next opening.
            record.phase = .queued
            save(record)
            return release(record.key)
        }
        removeFromQueue(record)
        record.phase = .stored(result)
        bytes += result.body?.count ?? 0
        save(record)
        var actions = startDelivery(id)
        if actions.isEmpty { actions = releaseIfHeld(by: record) }
        return actions + discardExpiredResults(at: now)
    }

    /// The entry's completion is in the store (or could not be written: it is done in this run either way).
    mutating func completed(_ id: UUID) -> [Action] {
        guard let record = records[id], case .completing = record.phase else { return [] }
        forget(record)
        var actions: [Action] = [.emit(.handled(record.entry.entry))]
        if pendingCount == 0 { actions.append(.emit(.drained)) }
        return actions + releaseIfHeld(by: record)
    }

    /// Registers `handler` for results of `kind`, replacing any earlier one; the stored results of that kind are
    /// offered to it, in enqueue order.
    mutating func register(kind: String, _ handler: Handler) -> [Action] {
        handlerGeneration += 1
        handlers[kind] = (handlerGeneration, handler)
        let waiting = waitingForHandler.compactMap { records[$0] }.filter { $0.entry.kind == kind }
        guard !waiting.isEmpty else { return [] }
        return [.deliver(waiting.sorted { $0.entry.sequence < $1.entry.sequence }.map(\.entry.id))]
    }

    /// Offers the entry's stored result to the handler of its kind, unless none is registered, it is already with
    /// one, or this handler threw on it.
    mutating func deliver(_ id: UUID) -> [Action] {
        startDelivery(id)
    }

    private mutating func startDelivery(_ id: UUID) -> [Action] {
        guard var record = records[id], case .stored(let result) = record.phase,
            let handler = handlers[record.entry.kind], record.failedGeneration != handler.generation
        else { return [] }
        record.phase = .delivering(result, generation: handler.generation)
        save(record)
        return [.callHandler(handler.run, record.entry, result, generation: handler.generation)]
    }

    /// Drops the stored results that waited longer than ``Outbox/Limits/resultRetention`` for a handler of their
    /// kind.
    private mutating func discardExpiredResults(at now: Date) -> [Action] {
        let expired = waitingForHandler.compactMap { records[$0] }.filter { record in
            guard case .stored(let result) = record.phase else { return false }
            return handlers[record.entry.kind] == nil && now.timeIntervalSince(result.storedAt) > limits.resultRetention
        }
        var actions: [Action] = []
        for record in expired {
            forget(record)
            actions += [.discard(record.entry.id), .emit(.resultDiscarded(record.entry.entry))]
        }
        return actions
    }

    /// Keeps `record` as it now is.
    private mutating func save(_ record: Record) {
        records[record.entry.id] = record
        if case .stored = record.phase {
            waitingForHandler.insert(record.entry.id)
        } else {
            waitingForHandler.remove(record.entry.id)
        }
    }

    /// Forgets `record`: done, cancelled or dropped.
    private mutating func forget(_ record: Record) {
        records[record.entry.id] = nil
        waitingForHandler.remove(record.entry.id)
        bytes -= record.bytes
        removeFromQueue(record)
    }

    // MARK: Tickets

    /// Remembers the result of the entry `id` for ``ticket(_:)``, dropping the oldest beyond ``rememberedResults``.
    private mutating func remember(_ id: UUID, _ outcome: TicketOutcome) {
        if recentResults.updateValue(outcome, forKey: id) == nil { recentOrder.append(id) }
        if recentOrder.count > rememberedResults { recentResults[recentOrder.removeFirst()] = nil }
    }

    /// What is known of the entry `id`: its result (of this process, or in the store), or that it is still to come.
    func ticket(_ id: UUID) -> TicketState {
        if let recent = recentResults[id] { return .result(recent) }
        guard let record = records[id] else { return .unknown }
        if let result = record.phase.storedResult {
            return .result(TicketOutcome(result: result, acceptable: record.entry.acceptable))
        }
        return closed ? .closed : .waiting
    }

    /// Removes the entry `id` if it has not been sent yet; `nil` when it is in flight, finished or unknown.
    mutating func cancel(_ id: UUID) -> [Action]? {
        guard let record = records[id], case .queued = record.phase, holders[record.key] != id else { return nil }
        forget(record)
        markReady(record.key)
        return [.failTickets(id, .entryCancelled)] + pump()
    }

    /// After a cancellation was stored: whether everything is done.
    func drainedIfEmpty() -> [Action] {
        pendingCount == 0 ? [.emit(.drained)] : []
    }

    /// The entries waiting to be sent or being sent, in enqueue order.
    func pending() -> [OutboxPendingEntry] {
        records.values.filter(\.isQueued).sorted { $0.entry.sequence < $1.entry.sequence }.map { record in
            OutboxPendingEntry(
                ticket: OutboxTicket(id: record.entry.id), kind: record.entry.kind,
                orderingKey: record.entry.orderingKey, attempts: record.attempts, nextAttempt: record.nextAttempt,
                lastError: record.lastError, created: record.entry.enqueuedAt,
                inFlight: holders[record.key] == record.entry.id)
        }
    }

    // MARK: Pause and close

    /// Stops starting sends; those in flight finish.
    mutating func pause() {
        paused = true
    }

    /// Starts sending again.
    mutating func resume() -> [Action] {
        paused = false
        return pump()
    }

    /// Starts nothing more; transitions still record what ends.
    mutating func close() {
        closed = true
    }

    /// The results with a handler that are not in the store yet: what ``Outbox/close(timeout:)`` stores when a
    /// handler outlives it.
    var unstoredResults: [(id: UUID, result: StoredResult)] {
        records.values.compactMap { record in
            guard case .handing(let result, _) = record.phase else { return nil }
            return (record.entry.id, result)
        }
    }

    // MARK: Scheduling

    /// Starts a sender for every key whose head can go, up to the concurrency bound, oldest head first.
    ///
    /// Takes keys out of `ready` (a heap) instead of filtering and sorting every queue: with 10,000 distinct keys that
    /// made each pump sort them all (25 entries drained per second with a core busy).
    private mutating func pump() -> [Action] {
        guard !paused, !closed else { return [] }
        var started: [Action] = []
        while holders.count < limits.maximumConcurrentSends, let (sequence, key) = ready.popMin() {
            pumpWork += 1
            guard holders[key] == nil, let head = queues[key]?.first, records[head]?.entry.sequence == sequence
            else { continue }  // Stale: the key is held, empty, or was added again with its new head.
            // An earlier entry of this key that is still being written goes first; its enqueue adds the key again.
            if enqueuing[key]?.contains(where: { $0 < sequence }) == true { continue }
            holders[key] = head
            started.append(.startSending(head))
        }
        return started
    }

    /// Adds `key` to the ready heap if its queue has a head.
    private mutating func markReady(_ key: String) {
        guard let head = queues[key]?.first, let sequence = records[head]?.entry.sequence else { return }
        ready.insert(sequence, key)
    }

    /// Frees `key` for its next entry.
    private mutating func release(_ key: String) -> [Action] {
        holders[key] = nil
        markReady(key)
        return pump()
    }

    /// Frees the key `record` holds, if it holds one.
    private mutating func releaseIfHeld(by record: Record) -> [Action] {
        guard holders[record.key] == record.entry.id else { return [] }
        return release(record.key)
    }

    private mutating func removeFromQueue(_ record: Record) {
        let key = record.key
        queues[key]?.removeAll { $0 == record.entry.id }
        if queues[key]?.isEmpty == true { queues[key] = nil }
    }
}
