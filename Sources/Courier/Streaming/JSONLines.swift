import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A newline-delimited JSON response (`application/x-ndjson`, JSON Lines), read one value per line as the lines
/// arrive.
///
/// ```swift
/// struct LogLine: Decodable, Sendable { let level: String; let message: String }
///
/// let export = NetworkRequest<VoidRequest, JSONLines<LogLine>>(path: "/logs/export", method: .get)
/// for try await line in try await client.run(export).value {
///     print(line.level, line.message)
/// }
/// ```
///
/// ``NetworkClientProtocol/run(_:)`` returns as soon as the response head arrived with an acceptable status (any
/// `Content-Type`); another status throws ``NetworkClientError/unacceptableStatusCode(statusCode:response:data:)``
/// with its body. The request asks for `Accept: application/x-ndjson, application/jsonl, application/json;q=0.9`
/// unless it names its own.
///
/// Each non-blank line (ended by LF or CRLF; the last one may have no line end) is decoded as one `Element` with the
/// request's decoder, or the configuration's. A line that does not decode ends the sequence with
/// ``NetworkClientError/decodingFailed(underlying:data:)`` carrying that line, after the lines before it; a line longer
/// than ``NetworkRequest/maximumStreamItemSize`` (``NetworkConfiguration/defaultMaximumStreamItemSize``, 1 MiB) ends it with
/// ``NetworkClientError/responseTooLarge(limit:)``. The sequence is read once; breaking out of the loop, cancelling
/// the reading task or dropping the sequence stops the transfer. See <doc:Streaming>.
public struct JSONLines<Element: Decodable & Sendable>: AsyncSequence, Sendable, Decodable {
    private let content: StreamContent<Element>

    /// A stream that yields `elements`, then ends: for a test double.
    /// - Parameter elements: The values, in order.
    public init(replaying elements: [Element]) {
        content = .canned(elements)
    }

    init(reading source: StreamSource) {
        content = .live(source)
    }

    /// A stream is never decoded from a `Decoder`: this initializer always throws `DecodingError.dataCorrupted`.
    /// - Throws: `DecodingError.dataCorrupted`, always.
    public init(from decoder: any Decoder) throws {
        throw StreamContent<Element>.notDecodable(Self.self)
    }

    /// Makes the one iterator of this stream: a second one ends at once with
    /// ``NetworkClientError/invalidRequest(reason:)``.
    public func makeAsyncIterator() -> StreamIterator<Element> {
        switch content {
        case .canned(let elements):
            return StreamIterator(canned: elements)
        case .live(let source):
            return StreamIterator(
                source: source, parser: LinesParser(maximumItemSize: source.maximumItemSize, decoder: source.decoder),
                kind: "JSONLines")
        }
    }
}

extension JSONLines: StreamResponseKind {
    static var accept: String { "application/x-ndjson, application/jsonl, application/json;q=0.9" }

    var source: StreamSource? { content.source }
}

/// Lines, each decoded as one `Element`.
struct LinesParser<Element: Decodable & Sendable>: StreamItemParser {
    private var splitter: LineSplitter
    private let decoder: JSONDecoder
    /// The lines of the current piece, kept between calls for their storage.
    private var lines: [Data] = []

    init(maximumItemSize: Int, decoder: JSONDecoder) {
        splitter = LineSplitter(maximumLineSize: maximumItemSize)
        self.decoder = decoder
    }

    mutating func parse(_ bytes: Data, into items: inout [Element]) throws {
        lines.removeAll(keepingCapacity: true)
        var failure: NetworkClientError?
        do {
            try splitter.split(bytes, into: &lines)
        } catch {
            failure = error
        }
        // The lines before one that breaks a rule are the reader's first.
        for line in lines { items.append(try decode(line)) }
        if let failure { throw failure }
    }

    mutating func connectionEnded(cleanly: Bool, into items: inout [Element]) throws {
        guard cleanly else { return }
        if let line = splitter.finish() { items.append(try decode(line)) }
    }

    private func decode(_ line: Data) throws(NetworkClientError) -> Element {
        do {
            return try decoder.decode(Element.self, from: line)
        } catch {
            throw .decodingFailed(underlying: error, data: line)
        }
    }
}
