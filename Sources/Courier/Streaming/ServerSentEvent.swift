/// One event of a `text/event-stream` (server-sent events), as the WHATWG HTML standard's event stream
/// interpretation dispatches it: the fields of one block of lines that ended with a blank line.
///
/// A block without any `data` field dispatches no event (it may still set the last event ID), so ``data`` is
/// the only member a server must send. `retry` fields and comments are not events.
public struct ServerSentEvent: Sendable, Hashable {
    /// The event type: the block's `event` field, or "message" when it named none (or an empty one).
    public var event: String
    /// The `data` fields of the block joined with LF ("\n"), without a trailing LF. Bytes that are not valid
    /// UTF-8 were replaced with U+FFFD.
    public var data: String
    /// The last event ID in effect when the event was dispatched: the value of the latest `id` field of this block,
    /// or of an earlier one (it persists across events and reconnections); `nil` when it is empty, that is, before
    /// any `id` field or after an empty `id` field reset it.
    public var id: String?

    /// An event of type `event` carrying `data`.
    ///
    /// - Parameters:
    ///   - event: The event type; defaults to "message", the type of events whose block names none.
    ///   - data: The event's data: the block's `data` fields joined with LF.
    ///   - id: The last event ID when the event was dispatched; defaults to `nil` (no ID).
    public init(event: String = "message", data: String, id: String? = nil) {
        self.event = event
        self.data = data
        self.id = id
    }
}
