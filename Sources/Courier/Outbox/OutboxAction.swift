import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension OutboxStateMachine {
    /// What the outbox does for a transition, in order, outside its lock. The ones that say what to report next are
    /// followed by that transition once they are done.
    enum Action: Sendable {
        /// Start this entry's sender in a task of its own: its first attempt is due (``due(_:)``).
        case startSending(UUID)
        /// Send this attempt through the client (after the rewrite hook); report ``sent(_:_:)``,
        /// ``failed(_:_:error:retryingAfter:at:)`` or, when cancelled, ``abandoned(_:)``.
        case send(StoredEntry, attempt: Int)
        /// Wait this long, then report ``due(_:)`` (or ``abandoned(_:)`` when cancelled).
        case wait(UUID, TimeInterval)
        /// Call the handler with the entry's result; report ``handlerReturned(_:generation:threw:)``.
        case callHandler(Handler, StoredEntry, StoredResult, generation: Int)
        /// In a task of its own, offer these stored results to their handler, one after the other (``deliver(_:)``).
        case deliver([UUID])
        /// Store the entry's result, flushed, until its handler runs; report ``resultStored(_:_:at:)``.
        case storeResult(UUID, StoredResult)
        /// Store that the entry is done, flushed; report ``completed(_:)``.
        case complete(UUID)
        /// Store that the entry is done, without waiting for the flush.
        case discard(UUID)
        /// Emit this event on every stream.
        case emit(OutboxEvent)
        /// Give this outcome to the callers waiting for the entry's ticket.
        case resolveTickets(UUID, TicketOutcome)
        /// Fail the callers waiting for the entry's ticket with this error.
        case failTickets(UUID, OutboxError)
    }
}
