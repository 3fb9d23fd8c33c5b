import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension OutboxStateMachine {
    /// Where an entry is.
    enum Phase: Sendable {
        /// In its key's queue, not being sent (also while its key is held for it, before its first attempt).
        case queued
        /// An attempt is in flight.
        case sending
        /// Waiting between two attempts.
        case retrying
        /// Its result is with the handler of `generation`, before being stored: the entry stays on the disk until the
        /// handler returns.
        case handing(StoredResult, generation: Int)
        /// Its result is being written to the store.
        case storingResult(StoredResult)
        /// Its result is in the store, waiting for a handler of its kind.
        case stored(StoredResult)
        /// Its stored result is with the handler of `generation`.
        case delivering(StoredResult, generation: Int)
        /// The handler returned: the entry's completion is being written. `stored` is its result when that was in
        /// the store (else the entry is still in its queue).
        case completing(stored: StoredResult?)

        /// The result in the store, if there is one.
        var storedResult: StoredResult? {
            switch self {
            case .stored(let result), .delivering(let result, _), .completing(let result?): result
            default: nil
            }
        }
    }

    /// One entry the outbox keeps.
    struct Record: Sendable {
        var entry: StoredEntry
        /// The bytes of its stored request.
        var size: Int
        var phase = Phase.queued
        /// The attempts made in this process.
        var attempts = 0
        /// A monotonic reading and the entry's age at that reading, taken at the first failure that asks.
        var ageBase: (uptime: TimeInterval, age: TimeInterval)?
        /// When the next attempt is due, while waiting for it; for ``Outbox/pending()``.
        var nextAttempt: Date?
        /// The last attempt's error, safe to show; for ``Outbox/pending()``.
        var lastError: String?
        /// The generation of the handler that threw on this entry's result: a newer one gets it.
        var failedGeneration: Int?

        var key: String { OutboxStateMachine.queueName(entry.orderingKey) }

        /// Whether the entry is still in its key's queue (its result is not in the store): what ``pending()`` lists.
        var isQueued: Bool {
            switch phase {
            case .queued, .sending, .retrying, .handing, .storingResult, .completing(stored: nil): true
            case .stored, .delivering, .completing: false
            }
        }

        /// The bytes this record counts for: its request, and its result's body once stored.
        var bytes: Int { size + (phase.storedResult?.body?.count ?? 0) }
    }
}
