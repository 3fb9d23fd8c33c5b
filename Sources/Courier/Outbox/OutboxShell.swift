import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The shell around ``OutboxStateMachine``: it runs the machine's transitions under the outbox's lock and performs
// their actions outside it, writing to the journal, sending through the client, calling handlers, waiting, emitting
// events and answering the callers of tickets. The machine decides; nothing here decides what happens next.
extension Outbox {
    /// The machine, and what the shell keeps beside it: its tasks, the event streams and the ticket callers waiting.
    struct Shell: Sendable {
        var machine: Machine
        var tasks: [UUID: Task<Void, Never>] = [:]
        var streams: [UUID: AsyncStream<OutboxEvent>.Continuation] = [:]
        /// The damaged files found at opening, for the first ``events()`` stream.
        var startupEvents: [OutboxEvent] = []
        /// The callers of ``result(of:as:decoder:)`` waiting for an entry's result, by entry and caller.
        var ticketWaiters: [UUID: [UInt64: CheckedContinuation<TicketOutcome, any Error>]] = [:]
        var nextTicketWaiter: UInt64 = 0
    }

    /// Runs `transition` on the machine, under the lock.
    func step<Result>(_ transition: (inout Machine) -> Result) -> Result {
        state.withLock { transition(&$0.machine) }
    }

    /// Runs `body` in a task the outbox tracks, so that ``close(timeout:)`` can cancel and await it.
    func spawn(_ body: @escaping @Sendable (Outbox) async -> Void) {
        let id = UUID()
        state.withLock { shell in
            guard !shell.machine.closed else { return }
            shell.tasks[id] = Task {
                await body(self)
                self.state.withLock { _ = $0.tasks.removeValue(forKey: id) }
            }
        }
    }

    /// Performs `actions` for a caller that does not wait for them: those that take time run in a task of their own.
    func launch(_ actions: [Machine.Action]) {
        var later: [Machine.Action] = []
        for action in actions {
            switch action {
            case .send, .wait, .callHandler, .storeResult, .complete: later.append(action)
            default: performAtOnce(action)
            }
        }
        guard !later.isEmpty else { return }
        spawn { [later] outbox in await outbox.perform(later) }
    }

    /// Performs `actions` in order, and after each the actions of the transition it reports, before the next.
    func perform(_ actions: [Machine.Action]) async {
        var pending = Array(actions.reversed())
        while let action = pending.popLast() {
            let next = await perform(action)
            pending.append(contentsOf: next.reversed())
        }
    }

    /// Performs `action`, and returns the actions of the transition it reports.
    private func perform(_ action: Machine.Action) async -> [Machine.Action] {
        switch action {
        case .send(let entry, let attempt):
            return await send(entry, attempt: attempt)
        case .wait(let id, let delay):
            do {
                try await environment.sleep(delay)
            } catch {
                return step { $0.abandoned(id) }
            }
            return step { $0.due(id) }
        case .callHandler(let handler, let entry, let result, let generation):
            var threw = false
            do {
                try await handler(entry.entry, result, entry.acceptable)
            } catch {
                threw = true
            }
            return step { $0.handlerReturned(entry.id, generation: generation, threw: threw) }
        case .storeResult(let id, let result):
            let stored = (try? await journal.append(.result(id: id, result), durable: true)) != nil
            let now = environment.now()
            return step { $0.resultStored(id, stored, at: now) }
        case .complete(let id):
            // Durable before the next entry of the key goes: after a crash, only entries being sent or handled at
            // that instant are sent again.
            try? await journal.append(.done(id: id), durable: true)
            return step { $0.completed(id) }
        default:
            performAtOnce(action)
            return []
        }
    }

    /// Performs an action that takes no time (or starts a task of its own).
    private func performAtOnce(_ action: Machine.Action) {
        switch action {
        case .startSending(let id):
            spawn { outbox in await outbox.perform(outbox.step { $0.due(id) }) }
        case .deliver(let ids):
            spawn { outbox in
                for id in ids { await outbox.perform(outbox.step { $0.deliver(id) }) }
            }
        case .discard(let id):
            try? journal.appendWithoutWaiting(.done(id: id))
        case .emit(let event):
            emit(event)
        case .resolveTickets(let id, let outcome):
            for waiter in takeTicketWaiters(id) { waiter.resume(returning: outcome) }
        case .failTickets(let id, let error):
            for waiter in takeTicketWaiters(id) { waiter.resume(throwing: error) }
        case .send, .wait, .callHandler, .storeResult, .complete:
            launch([action])
        }
    }

    private func takeTicketWaiters(_ id: UUID) -> [CheckedContinuation<TicketOutcome, any Error>] {
        state.withLock { $0.ticketWaiters.removeValue(forKey: id).map { Array($0.values) } ?? [] }
    }

    /// The keys the scheduler has examined since opening, for tests: about one per send, not one per key per send.
    var pumpWorkForTesting: Int { step { $0.pumpWork } }

    /// How the outbox applies its ``retryPolicy``: unlike ``RetryingClient``, a failed interceptor or rewrite (often
    /// a token refresh while offline) is retried, and the policy's backoff is the least wait, however short or long a
    /// `Retry-After` asks for (above ``RetryPolicy/maxDelay`` too: nobody is waiting).
    static let retryLayer = RetryPolicy.Layer(retriesInterceptorFailures: true, backoffIsTheLeastWait: true)

    /// Sends one attempt of `entry`, and reports how it went.
    private func send(_ entry: StoredEntry, attempt: Int) async -> [Machine.Action] {
        do {
            var request = entry.request
            if let rewrite {
                do {
                    request = try await rewrite(request)
                } catch is CancellationError {
                    return step { $0.abandoned(entry.id) }
                } catch {
                    throw NetworkClientError.interceptorFailed(underlying: error)
                }
            }
            let response = try await client.run(entry.networkRequest(request))
            let result = StoredResult.success(response, isSecretHeader: isSecretResponseHeader, now: environment.now())
            return step { $0.sent(entry.id, result) }
        } catch let failure {
            if failure is CancellationError || Task.isCancelled { return step { $0.abandoned(entry.id) } }
            let delay = await retryPolicy.delay(
                after: failure, attempt: attempt, layer: Self.retryLayer, environment: environment)
            let result = StoredResult.failure(failure, isSecretHeader: isSecretResponseHeader, now: environment.now())
            let error =
                failure as? NetworkClientError
                ?? .interceptorFailed(underlying: OutboxError.sendFailed(String(describing: type(of: failure))))
            let now = environment.now()
            let moment = Machine.Moment(now: now, uptime: environment.uptime?() ?? now.timeIntervalSinceReferenceDate)
            return step { $0.failed(entry.id, result, error: error, retryingAfter: delay, at: moment) }
        }
    }

    /// Whether a response header is left out of a stored result: a secret by the rules and ``secrets``.
    private func isSecretResponseHeader(_ name: String) -> Bool {
        secrets.isSecretHeader(name, sensitiveHeaders: sensitiveHeaders)
    }

    /// Waits until every task in `tasks` has ended or `seconds` have passed; `true` if they all ended.
    static func waitForAll(_ tasks: [Task<Void, Never>], atMost seconds: TimeInterval) async -> Bool {
        let waiter = Task { for task in tasks { await task.value } }
        let outcome = Locked<CheckedContinuation<Bool, Never>?>(nil)
        let timer = Locked<Task<Void, Never>?>(nil)
        return await withCheckedContinuation { continuation in
            outcome.withLock { $0 = continuation }
            let finish: @Sendable (Bool) -> Void = { ended in
                outcome.withLock { pending in
                    pending?.resume(returning: ended)
                    pending = nil
                }
            }
            timer.withLock { timer in
                timer = Task {
                    let nanoseconds = UInt64(min(max(0, seconds.isFinite ? seconds : 0), 1e6) * 1e9)
                    try? await Task.sleep(nanoseconds: nanoseconds)
                    finish(false)
                }
            }
            Task {
                await waiter.value
                timer.withLock { $0?.cancel() }
                finish(true)
            }
        }
    }
}
