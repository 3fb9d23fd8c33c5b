import Foundation

/// Why a streamed response (``ServerSentEvents``, ``JSONLines``, ``ByteStream``) ended with an error of its own: a
/// limit of the stream rather than of the response, or a reconnection policy that gave up. Thrown by the sequence's
/// iteration, after the items that arrived before it.
public enum StreamError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The reader fell `limit` bytes behind a transport that could not be held back (``NetworkConfiguration/streamBufferCapacity``
    /// plus ``NetworkConfiguration/maximumStreamBacklog``): the transfer was stopped, so that memory stays bounded.
    case readerFellBehind(limit: Int)
    /// `attempts` connections in a row failed (``StreamReconnection/maxAttempts``) and the last one ended without an
    /// error of its own: none dispatched an event, or each ended so soon that the server would have the stream
    /// reconnect more often than once per ``StreamReconnection/minimumDelay``. The stream stopped reconnecting.
    case gaveUpReconnecting(attempts: Int)

    /// A description safe to log.
    public var description: String {
        switch self {
        case .readerFellBehind(let limit):
            return
                "The reader fell more than \(limit) bytes behind a transport that could not be held back "
                + "(NetworkConfiguration.streamBufferCapacity + NetworkConfiguration.maximumStreamBacklog); the transfer was stopped."
        case .gaveUpReconnecting(let attempts):
            return
                "The stream stopped reconnecting after \(attempts) failed connections in a row "
                + "(StreamReconnection.maxAttempts): none dispatched an event, or each ended sooner than the server "
                + "may have it reconnect (StreamReconnection.minimumDelay)."
        }
    }
}

extension StreamError: LocalizedError {
    /// The same text as ``description``.
    public var errorDescription: String? { description }
}
