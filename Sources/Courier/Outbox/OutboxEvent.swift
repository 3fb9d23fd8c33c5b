import Foundation

/// What an ``Outbox`` reports on ``Outbox/events()``.
public enum OutboxEvent: Sendable {
    /// The entry was sent and the server answered with `statusCode` (2xx, or a permanent failure status).
    case sent(OutboxEntry, statusCode: Int)
    /// Sending the entry failed for a passing reason; it is sent again after `delay` seconds. `attempt` is the
    /// number of the attempt that failed, from 1, counted since the outbox was opened.
    case retrying(OutboxEntry, attempt: Int, delay: TimeInterval, error: NetworkClientError)
    /// The entry failed for good (a permanent failure, or ``Outbox/Limits/maximumAge`` passed); its handler receives
    /// the error and the queue moves on.
    case failed(OutboxEntry, NetworkClientError)
    /// A result handler ran and returned without throwing: the entry is done and forgotten.
    case handled(OutboxEntry)
    /// A result handler threw: the result stays on disk and is delivered again when the outbox is next opened or a
    /// handler for its kind is registered again.
    case handlerFailed(OutboxEntry)
    /// A damaged file was moved to the `quarantine` folder of the outbox directory; `recoveredEntries` intact
    /// entries were kept from it.
    case quarantined(file: String, reason: String, recoveredEntries: Int)
    /// A result waited longer than ``Outbox/Limits/resultRetention`` for a handler and was dropped.
    case resultDiscarded(OutboxEntry)
    /// Everything enqueued has been sent and its result handled: ``Outbox/pendingCount`` is 0.
    case drained
}

extension Outbox {
    /// The most events one ``events()`` stream holds for its reader: `1_000`. When the reader is slower than the
    /// outbox (or never reads), the oldest unread events are dropped and the newest kept, so an unread stream costs
    /// bounded memory however long the outbox runs.
    public static let maximumBufferedEvents = 1_000

    /// A new stream of the outbox's events, from now on (damaged files found at opening are reported to the first
    /// stream). Each call returns its own stream; it ends when the outbox is closed.
    ///
    /// The stream buffers at most ``maximumBufferedEvents`` unread events: a reader that falls further behind loses
    /// the oldest ones (a retry storm or a long drain with nobody reading used to grow memory without bound).
    public func events() -> AsyncStream<OutboxEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: OutboxEvent.self, bufferingPolicy: .bufferingNewest(Self.maximumBufferedEvents))
        let id = UUID()
        let startup = state.withLock { shell -> [OutboxEvent]? in
            guard !shell.machine.closed else { return nil }
            shell.streams[id] = continuation
            defer { shell.startupEvents = [] }
            return shell.startupEvents
        }
        guard let startup else {
            continuation.finish()
            return stream
        }
        for event in startup { continuation.yield(event) }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    /// Hands `event` to every stream.
    func emit(_ event: OutboxEvent) {
        for stream in state.withLock({ Array($0.streams.values) }) { stream.yield(event) }
    }
}
