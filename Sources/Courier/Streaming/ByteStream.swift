import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response body read as raw `Data` chunks in arrival order: for formats Courier does not parse (audio, a
/// proprietary framing, a file piped elsewhere).
///
/// ```swift
/// let request = NetworkRequest<VoidRequest, ByteStream>(path: "/raw", method: .get)
/// for try await chunk in try await client.run(request).value {
///     consume(chunk)
/// }
/// ```
///
/// ``NetworkClientProtocol/run(_:)`` returns as soon as the response head arrived with an acceptable status (any
/// `Content-Type`); another status throws ``NetworkClientError/unacceptableStatusCode(statusCode:response:data:)``
/// with its body. The request asks for `Accept: */*` unless it names its own. Chunks are as the transport received
/// them (after decompression), never empty. The sequence is read once; breaking out of the loop, cancelling the
/// reading task or dropping the sequence stops the transfer. See <doc:Streaming>.
public struct ByteStream: AsyncSequence, Sendable, Decodable {
    private let content: StreamContent<Data>

    /// A stream that yields `chunks` (empty ones left out), then ends: for a test double.
    /// - Parameter chunks: The chunks, in order.
    public init(replaying chunks: [Data]) {
        content = .canned(chunks.filter { !$0.isEmpty })
    }

    init(reading source: StreamSource) {
        content = .live(source)
    }

    /// A stream is never decoded from a `Decoder`: this initializer always throws `DecodingError.dataCorrupted`.
    /// - Throws: `DecodingError.dataCorrupted`, always.
    public init(from decoder: any Decoder) throws {
        throw StreamContent<Data>.notDecodable(Self.self)
    }

    /// Makes the one iterator of this stream: a second one ends at once with
    /// ``NetworkClientError/invalidRequest(reason:)``.
    public func makeAsyncIterator() -> StreamIterator<Data> {
        switch content {
        case .canned(let chunks):
            return StreamIterator(canned: chunks)
        case .live(let source):
            return StreamIterator(source: source, parser: ChunkParser(), kind: "ByteStream")
        }
    }
}

extension ByteStream: StreamResponseKind {
    static var accept: String { "*/*" }

    var source: StreamSource? { content.source }
}

/// Every piece as it is.
struct ChunkParser: StreamItemParser {
    mutating func parse(_ bytes: Data, into items: inout [Data]) throws {
        if !bytes.isEmpty { items.append(bytes) }
    }

    mutating func connectionEnded(cleanly: Bool, into items: inout [Data]) throws {}
}
