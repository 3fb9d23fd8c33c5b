import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Names one entry of an ``Outbox``: returned by ``Outbox/enqueue(_:kind:orderingKey:)``, it asks for the entry's
/// result (``Outbox/result(of:as:decoder:)``) or cancels it (``Outbox/cancel(_:)``).
///
/// A ticket stays valid across restarts: it is the entry's ``OutboxEntry/id``, and ``Outbox/pending()`` lists the
/// tickets of the entries an earlier run left.
public struct OutboxTicket: Hashable, Sendable, CustomStringConvertible {
    /// The entry's identifier (``OutboxEntry/id``).
    public let id: UUID

    /// Creates a ticket for the entry with `id`, for example one kept from an earlier run.
    /// - Parameter id: The entry's identifier.
    public init(id: UUID) {
        self.id = id
    }

    /// The identifier's text.
    public var description: String { id.uuidString }
}

extension OutboxEntry {
    /// This entry's ticket.
    public var ticket: OutboxTicket { OutboxTicket(id: id) }
}

/// An entry waiting in an ``Outbox``, as ``Outbox/pending()`` lists it.
public struct OutboxPendingEntry: Sendable, Hashable {
    /// The entry's ticket.
    public let ticket: OutboxTicket
    /// The kind given at enqueue.
    public let kind: String
    /// The ordering key given at enqueue; `nil` is the one global order.
    public let orderingKey: String?
    /// The attempts made in this process (`0` before the first, also for an entry an earlier run left).
    public let attempts: Int
    /// When the next attempt is due, while the entry waits to be retried; `nil` otherwise.
    public let nextAttempt: Date?
    /// The last attempt's error, safe to log (``NetworkClientError``'s description); `nil` before a failure.
    public let lastError: String?
    /// When the entry was enqueued.
    public let created: Date
    /// Whether the entry is being sent (or waits between attempts): ``Outbox/cancel(_:)`` no longer removes it.
    public let inFlight: Bool
}

extension Outbox {
    /// The response of the entry `ticket` names, decoded as `type`, once it has its result: what the handler of its
    /// kind also receives (``onResult(kind:as:decoder:handler:)``), in this process.
    ///
    /// It waits while the entry is queued, sent or retried, and returns at once for a result this process already
    /// has (the last ``rememberedResults``, and every result still waiting on disk for a handler, also from an earlier
    /// run). After a restart, an entry finished by the earlier run is no longer known: the handlers remain the way to
    /// receive results across restarts.
    /// - Parameters:
    ///   - ticket: What ``enqueue(_:kind:orderingKey:)`` returned.
    ///   - type: The response type, decoded as a handler would.
    ///   - decoder: The decoder; `nil` (the default) uses the ``Outbox/Rules/decoder``.
    /// - Returns: The entry's response.
    /// - Throws: The entry's ``NetworkClientError`` (a permanent failure, a non-2xx status, a decoding failure);
    ///   ``OutboxError/unknownTicket`` when this outbox does not know the entry (never enqueued here, cancelled, or
    ///   its result already forgotten); ``OutboxError/entryCancelled`` when ``cancel(_:)`` removed it while this call
    ///   waited; ``OutboxError/closed`` when the outbox closes first; `CancellationError` when the caller is
    ///   cancelled (the entry goes on).
    public func result<Value: Decodable & Sendable>(
        of ticket: OutboxTicket, as type: Value.Type, decoder: JSONDecoder? = nil
    ) async throws -> NetworkResponse<Value> {
        let id = ticket.id
        let waiterID = state.withLock { shell -> UInt64 in
            shell.nextTicketWaiter += 1
            return shell.nextTicketWaiter
        }
        let outcome = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<TicketOutcome, any Error>) in
                let found = state.withLock { shell -> Result<TicketOutcome, any Error>? in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    switch shell.machine.ticket(id) {
                    case .result(let outcome): return .success(outcome)
                    case .unknown: return .failure(OutboxError.unknownTicket)
                    case .closed: return .failure(OutboxError.closed)
                    case .waiting:
                        shell.ticketWaiters[id, default: [:]][waiterID] = continuation
                        return nil
                    }
                }
                if let found { continuation.resume(with: found) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.ticketWaiters[id]?.removeValue(forKey: waiterID) }
            waiter?.resume(throwing: CancellationError())
        }
        let chosen = decoder ?? rules.decoder
        return try outcome.result.outcome(as: Value.self, decoder: chosen, acceptable: outcome.acceptable).get()
    }

    /// The entries waiting to be sent or being sent, in enqueue order: their ticket, kind, ordering key, attempts in
    /// this process, next attempt, last error and creation time. Results waiting for a handler are not listed.
    public func pending() -> [OutboxPendingEntry] {
        state.withLock { $0.machine.pending() }
    }

    /// Removes the entry `ticket` names if it has not been sent yet, and says whether it did. An entry being sent, or
    /// waiting between attempts, is in flight: it finishes, and this returns `false`; so does an entry that already
    /// finished or that this outbox does not know.
    ///
    /// The removal is on the disk when this returns `true`: the entry is not sent after a restart either. Callers
    /// waiting in ``result(of:as:decoder:)`` get ``OutboxError/entryCancelled``.
    /// - Parameter ticket: What ``enqueue(_:kind:orderingKey:)`` returned.
    /// - Returns: Whether the entry was removed.
    /// - Throws: ``OutboxError/storageFailed(operation:path:code:)`` or ``OutboxError/closed`` when the removal cannot
    ///   be written; the entry is then removed from this run only and is sent again at the next opening.
    @discardableResult
    public func cancel(_ ticket: OutboxTicket) async throws -> Bool {
        guard let actions = step({ $0.cancel(ticket.id) }) else { return false }
        launch(actions)
        try await journal.append(.done(id: ticket.id), durable: true)
        launch(step { $0.drainedIfEmpty() })
        return true
    }

    /// The callers waiting in ``result(of:as:decoder:)`` for `ticket` (for tests).
    func ticketWaiterCount(_ ticket: OutboxTicket) -> Int {
        state.withLock { $0.ticketWaiters[ticket.id]?.count ?? 0 }
    }
}

/// An entry's result and the statuses that count as success for it: what a ticket's caller receives.
struct TicketOutcome: Sendable {
    let result: StoredResult
    let acceptable: Set<Int>?
}

extension OutboxStateMachine {
    /// What ``ticket(_:)`` knows of an entry.
    enum TicketState: Sendable {
        /// Its result.
        case result(TicketOutcome)
        /// Still to be sent: wait.
        case waiting
        /// Not known here.
        case unknown
        /// Still to be sent, but the outbox is closed.
        case closed
    }
}
