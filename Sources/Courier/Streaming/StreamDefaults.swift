import Foundation

// The limits of a streamed response (ServerSentEvents, JSONLines, ByteStream), each a documented constant beside the
// configuration's other limits (maximumRedirects, defaultMaximumResponseSize, maximumTimeout). See Streaming.md.
extension NetworkConfiguration {
    /// The longest line or event a streamed response (``ServerSentEvents``, ``JSONLines``) accepts when the request
    /// names no limit (``NetworkRequest/maximumStreamItemSize``): 1 MiB. A longer one, or a server that never sends a line end, ends the
    /// sequence with ``NetworkClientError/responseTooLarge(limit:)`` with only this much held.
    ///
    /// The whole-response ``NetworkConfiguration/maximumResponseSize`` does not apply to a stream, which may run for
    /// days; it still bounds the body of an error status.
    public static let defaultMaximumStreamItemSize = 1 << 20

    /// The bytes received and not yet read that hold the transfer back: 1 MiB. A transport that can pause reading (one
    /// that calls ``HTTPExchange/readyForMore()``, such as ``InMemoryTransport`` or the AsyncHTTPClient transport) stops
    /// at this bound, so the server feels the backpressure on its own connection.
    public static let streamBufferCapacity = 1 << 20

    /// How long a transport that cannot pause reading (Courier's `URLSession` delegate) is held, at a time, while the
    /// buffer is full and the reader reads: 100 ms. Only while no other call of Courier's is in flight: on Linux every
    /// session in the process shares the thread that a hold blocks (one that starts lets the hold go at once). A
    /// reader that takes nothing for a whole hold is taken to be busy elsewhere, and the transport goes on without it
    /// until it reads again (see ``maximumStreamBacklog``).
    public static let maximumStreamHold: TimeInterval = 0.1

    /// How far past ``streamBufferCapacity`` a reader may fall behind a transport that cannot pause and is not held
    /// (beside other calls, or after the reader stalled): 16 MiB. Past it the sequence ends with
    /// ``StreamError/readerFellBehind(limit:)`` (whose limit is the sum of the capacity and the backlog) and
    /// the transfer stops: memory stays bounded whatever the reader does. When the transport runs alone it is held
    /// once more there, for ``maximumStreamStall``, before that.
    public static let maximumStreamBacklog = 16 << 20

    /// How long a reader that stopped reading, a whole ``maximumStreamBacklog`` behind, has to read again before its
    /// stream ends: 1 s. A reader starved of the processor for a moment goes on; one that waits for something that needs the
    /// transport's thread (on Linux, another `URLSession` transfer of the process) ends its stream instead of waiting
    /// for ever.
    public static let maximumStreamStall: TimeInterval = 1
}

/// How a streamed response went, for the log entry at its end (``StreamLogPhase/ended(items:reconnections:endedByReader:)``).
struct StreamSummary: Sendable, Hashable {
    /// The items the reader took: events, lines or chunks.
    var items: Int
    /// The body bytes received, over every connection.
    var bytes: Int64
    /// The connections opened again after the first (``StreamReconnection``).
    var reconnections: Int = 0
    /// Seconds from the call to the end of the sequence.
    var duration: TimeInterval
    /// Whether the reader stopped before the end: it broke out of its loop, dropped the sequence or was cancelled.
    var endedByReader: Bool = false
}
