import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `text/event-stream` response, read as its events arrive: the response type of a server-sent events endpoint.
///
/// ```swift
/// let request = NetworkRequest<VoidRequest, ServerSentEvents>(path: "/events", method: .get)
/// for try await event in try await client.run(request).value {
///     print(event.event, event.data)
/// }
/// ```
///
/// ``NetworkClientProtocol/run(_:)`` returns as soon as the response head arrived with an acceptable status and a
/// `Content-Type` of `text/event-stream` (a `204` opens an empty stream); another status throws
/// ``NetworkClientError/unacceptableStatusCode(statusCode:response:data:)`` with its body, another content type
/// ``NetworkClientError/invalidResponse(_:)``, so that `retrying()` and `authenticated(by:)` act on the opening.
/// The request asks for `Accept: text/event-stream` unless it names its own.
///
/// The body is parsed as the WHATWG HTML standard's event stream interpretation says: UTF-8 with an optional BOM;
/// CRLF, LF and CR line endings; comments; `event`, `data` (lines joined with LF), `id` (ignored when it contains
/// NUL, and, unlike the standard, any other control character but tab, which `Last-Event-ID` could not carry; it
/// persists as the last event ID) and `retry`; a block without data dispatches nothing, and a last block
/// without its blank line is discarded. A line or an event longer than the request's
/// ``NetworkRequest/maximumStreamItemSize`` (``NetworkConfiguration/defaultMaximumStreamItemSize``, 1 MiB) ends the sequence with
/// ``NetworkClientError/responseTooLarge(limit:)``.
///
/// The sequence is read once. Breaking out of the loop, cancelling the reading task or dropping the sequence stops the
/// transfer and closes the connection. A `GET` with a ``StreamReconnection`` is opened again, with `Last-Event-ID`,
/// when it ends or drops. See <doc:Streaming>.
public struct ServerSentEvents: AsyncSequence, Sendable, Decodable {
    private let content: StreamContent<ServerSentEvent>

    /// A stream that yields `events`, then ends: for a test double (``StubNetworkClient/stub(_:_:returning:statusCode:)``).
    /// - Parameter events: The events, in order.
    public init(replaying events: [ServerSentEvent]) {
        content = .canned(events)
    }

    init(reading source: StreamSource) {
        content = .live(source)
    }

    /// A stream is never decoded from a `Decoder`: this initializer always throws `DecodingError.dataCorrupted`.
    /// - Throws: `DecodingError.dataCorrupted`, always.
    public init(from decoder: any Decoder) throws {
        throw StreamContent<ServerSentEvent>.notDecodable(Self.self)
    }

    /// Makes the one iterator of this stream: a second one ends at once with
    /// ``NetworkClientError/invalidRequest(reason:)``.
    public func makeAsyncIterator() -> StreamIterator<ServerSentEvent> {
        switch content {
        case .canned(let events):
            return StreamIterator(canned: events)
        case .live(let source):
            return StreamIterator(
                source: source, parser: EventParser(maximumItemSize: source.maximumItemSize), kind: "ServerSentEvents")
        }
    }
}

extension ServerSentEvents: StreamResponseKind {
    static var accept: String { "text/event-stream" }
    static var reconnects: Bool { true }

    /// Only `text/event-stream` is an event stream; a `204` opens an empty one.
    static func refusal(of head: HTTPURLResponse) -> NetworkClientError? {
        head.statusCode == 204 || hasMediaType(head, "text/event-stream") ? nil : .invalidResponse(head)
    }

    var source: StreamSource? { content.source }
}

/// The ``EventStreamParser`` as a stream kind's parser.
struct EventParser: StreamItemParser {
    private var parser: EventStreamParser

    init(maximumItemSize: Int) {
        parser = EventStreamParser(maximumItemSize: maximumItemSize)
    }

    mutating func parse(_ bytes: Data, into items: inout [ServerSentEvent]) throws {
        try parser.parse(bytes, into: &items)
    }

    mutating func connectionEnded(cleanly: Bool, into items: inout [ServerSentEvent]) throws {
        parser.connectionEnded()
    }

    var resumption: StreamResumption {
        StreamResumption(
            lastEventID: parser.lastEventID, retry: parser.retry, dispatched: parser.dispatchedSinceConnectionStart)
    }
}

/// What a stream value reads: a live source, or canned items (a test double's).
enum StreamContent<Item: Sendable>: Sendable {
    case live(StreamSource)
    case canned([Item])

    var source: StreamSource? {
        if case .live(let source) = self { return source }
        return nil
    }

    /// The error of `init(from:)`: a stream is never decoded.
    static func notDecodable(_ type: Any.Type) -> DecodingError {
        DecodingError.dataCorrupted(
            DecodingError.Context(
                codingPath: [], debugDescription: "A \(type) is read from a response as it arrives, never decoded."))
    }
}
