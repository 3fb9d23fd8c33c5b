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
    /// ``NetworkClientError/responseTooLarge(limit:)`` (whose limit is the sum of the capacity and the backlog) and
    /// the transfer stops: memory stays bounded whatever the reader does. When the transport runs alone it is held
    /// once more there, for ``maximumStreamStall``, before that.
    public static let maximumStreamBacklog = 16 << 20

    /// How long a reader that stopped reading, a whole ``maximumStreamBacklog`` behind, has to read again before its
    /// stream ends: 1 s. A reader starved of the processor for a moment goes on; one that waits for something that needs the
    /// transport's thread (on Linux, another `URLSession` transfer of the process) ends its stream instead of waiting
    /// for ever.
    public static let maximumStreamStall: TimeInterval = 1
}

/// When a ``ServerSentEvents`` stream that ends or drops is opened again: the `EventSource` behaviour, opt-in, for
/// `GET` requests only.
///
/// ```swift
/// let feed = NetworkRequest<VoidRequest, ServerSentEvents>(
///     path: "/feed", method: .get, reconnection: StreamReconnection(maxAttempts: 5, initialDelay: 1))
/// ```
///
/// When the connection drops or the server ends the body, Courier waits for the server's last `retry` (else
/// `initialDelay`, with jitter), sends the request again with `Last-Event-ID`, and the sequence goes on with the
/// events after the last one it yielded: no gap, no repeat, as far as the server honours `Last-Event-ID`. Each
/// connection that fails to open, or opens and dispatches no event, doubles the wait (up to ``maximumDelay``); after
/// `maxAttempts` of them in a row the sequence ends with the last error. An HTTP `204`, a status outside the acceptable
/// ones or a `Content-Type` other than `text/event-stream` ends the sequence at once (with the error, but a `204`).
///
/// A request other than `GET` (a chat completion sent with `POST`) is never sent again: its sequence ends with the
/// connection.
public struct StreamReconnection: Sendable, Hashable {
    /// The connections in a row that may fail to open or dispatch no event before the sequence ends; at least 1.
    public var maxAttempts: Int
    /// The wait before the first reconnection when the server sent no `retry`, in seconds; the wait is jittered
    /// between half and all of it, and doubles after each connection that failed.
    public var initialDelay: TimeInterval

    /// The longest wait between two connections: 60 s, whatever the server's `retry` or the doubling say.
    public static let maximumDelay: TimeInterval = 60

    /// Creates a reconnection policy.
    /// - Parameters:
    ///   - maxAttempts: The failed connections in a row that end the sequence; values below 1 count as 1.
    ///   - initialDelay: The wait, in seconds, when the server sent no `retry`; negative or NaN values count as 0.
    public init(maxAttempts: Int, initialDelay: TimeInterval) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialDelay = initialDelay > 0 ? min(initialDelay, Self.maximumDelay) : 0
    }
}

/// How a streamed response went, for the log entry at its end (``LogEntry/stream``) and for your own measuring.
public struct StreamSummary: Sendable, Hashable {
    /// The items the reader took: events, lines or chunks.
    public var items: Int
    /// The body bytes received, over every connection.
    public var bytes: Int64
    /// The connections opened again after the first (``StreamReconnection``).
    public var reconnections: Int
    /// Seconds from the call to the end of the sequence.
    public var duration: TimeInterval
    /// Whether the reader stopped before the end: it broke out of its loop, dropped the sequence or was cancelled.
    public var endedByReader: Bool

    /// Creates a summary.
    /// - Parameters:
    ///   - items: The items read.
    ///   - bytes: The body bytes received.
    ///   - reconnections: The connections opened after the first; `0` by default.
    ///   - duration: Seconds from the call to the end.
    ///   - endedByReader: Whether the reader stopped first; `false` by default.
    public init(items: Int, bytes: Int64, reconnections: Int = 0, duration: TimeInterval, endedByReader: Bool = false) {
        self.items = items
        self.bytes = bytes
        self.reconnections = reconnections
        self.duration = duration
        self.endedByReader = endedByReader
    }
}
