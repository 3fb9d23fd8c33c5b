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
