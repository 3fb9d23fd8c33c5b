import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The rules of a response kind that is a stream, in one conformance: `run` returns at the head, and the value reads
/// the body as it arrives. Each kind says what it asks for (`Accept`), which heads it can read, whether it reconnects,
/// how its bytes become items, and what the stub answers for a canned body. `NetworkClient`, the decorators, the outbox
/// and the stub ask ``ResponseKinds`` and nothing else.
protocol StreamResponseKind: ResponseKind {
    /// Whether a stream of this kind may be opened again when it ends or drops (``StreamReconnection``).
    static var reconnects: Bool { get }
    /// Why an acceptable `head` cannot be read as this kind (a wrong `Content-Type`); `nil` when it can.
    static func refusal(of head: HTTPURLResponse) -> NetworkClientError?
    /// The value that reads `source`.
    init(reading source: StreamSource)
    /// What the value reads; `nil` for a canned value (``ServerSentEvents/init(replaying:)``).
    var source: StreamSource? { get }
}

extension StreamResponseKind {
    static var streamKind: (any StreamResponseKind.Type)? { Self.self }

    static var reconnects: Bool { false }

    static func refusal(of head: HTTPURLResponse) -> NetworkClientError? { nil }

    /// A stream is never held whole in memory.
    static func decoded(from data: Data, decoder: JSONDecoder) throws(NetworkClientError) -> Self {
        throw .invalidRequest(reason: "a \(Self.self) stream is read as it arrives, not decoded from memory")
    }

    /// A ``StreamSink`` over a new ``StreamChannel``, for each exchange of the call.
    static func sink(
        request: inout URLRequest, first: URLRequest, destination: URL?, acceptable: Set<Int>?, scope: UInt64
    ) -> (any ResponseBodySink)? {
        StreamSink(channel: StreamChannel(), acceptable: acceptable, refusal: refusal(of:))
    }

    /// The canned body read as this kind's server would send it: through the same parser.
    static func stubbed(body: Data, decoder: JSONDecoder, destination: URL?) throws -> Self {
        Self(
            reading: StreamSource(
                connection: .replaying([body]), maximumItemSize: NetworkConfiguration.defaultMaximumStreamItemSize,
                decoder: decoder,
                began: DispatchTime.now().uptimeNanoseconds))
    }
}

extension ResponseKinds {
    /// What a log entry shows for the body of `type` when it is a stream that opened; `nil` for other kinds.
    static func logPlaceholder<ResponseModel>(of type: ResponseModel.Type) -> String? {
        stream(type).map { "<\($0) stream, read as it arrives>" }
    }

    /// The source a stream value reads, when `value` is a live stream: for a decorator that reports its end.
    static func streamSource(of value: some Sendable) -> StreamSource? {
        (value as? any StreamResponseKind)?.source
    }
}

/// Whether `head`'s `Content-Type` is `mediaType` (its type and subtype compared case-insensitively, parameters
/// ignored).
func hasMediaType(_ head: HTTPURLResponse, _ mediaType: String) -> Bool {
    guard let contentType = head.value(forHTTPHeaderField: "Content-Type") else { return false }
    let essence = contentType.split(separator: ";", maxSplits: 1).first ?? ""
    return essence.trimmingCharacters(in: .whitespaces).lowercased() == mediaType
}
