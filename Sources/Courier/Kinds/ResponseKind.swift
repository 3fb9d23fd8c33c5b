import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Each kind of response owns its rules here, in one conformance: which statuses it accepts, how a body becomes its
// value, whether it is a file or a stream, the `Accept` it asks for, and what `StubNetworkClient` answers from a canned
// body. Streams (`ServerSentEvents`, `JSONLines`, `ByteStream`) add theirs in `StreamResponseKind`. `NetworkClient`, the outbox's
// results and the stub ask `ResponseKinds` and nothing else. A response type that conforms to nothing is JSON.

/// The statuses that count as success when neither the request nor the configuration names any: `200..<300`. The one
/// place of that rule; ``NetworkConfiguration/defaultAcceptableStatusCodes`` is the same statuses as a set.
let defaultAcceptableStatusCodes = 200..<300

/// The `Accept` header field of a request whose response kind names none.
let defaultAccept = "application/json"

/// The rules of one kind of response.
protocol ResponseKind: Sendable {
    /// The value of a body whose status was accepted.
    static func decoded(from data: Data, decoder: JSONDecoder) throws(NetworkClientError) -> Self
    /// Whether the body goes to a file rather than memory; `false` by default.
    static var isFile: Bool { get }
    /// The `Accept` header field a request sends for this kind unless it names its own; `application/json` by
    /// default.
    static var accept: String { get }
    /// This kind's stream rules when it is a stream; `nil` by default. (A second cast would cost a conformance
    /// lookup on every call.)
    static var streamKind: (any StreamResponseKind.Type)? { get }
    /// What ``StubNetworkClient`` answers for a canned body of an accepted status; ``decoded(from:decoder:)`` by
    /// default.
    static func stubbed(body: Data, decoder: JSONDecoder, destination: URL?) throws -> Self
    /// Where the body goes when it is not held in memory, for one exchange of `request` (which the sink may add to),
    /// a hop of the call that began with `first`; `nil`, memory, by default.
    static func sink(
        request: inout URLRequest, first: URLRequest, destination: URL?, acceptable: Set<Int>?, scope: UInt64
    ) -> (any ResponseBodySink)?
}

extension ResponseKind {
    static var isFile: Bool { false }

    static var accept: String { defaultAccept }

    static var streamKind: (any StreamResponseKind.Type)? { nil }

    static func sink(
        request: inout URLRequest, first: URLRequest, destination: URL?, acceptable: Set<Int>?, scope: UInt64
    ) -> (any ResponseBodySink)? {
        nil
    }

    static func stubbed(body: Data, decoder: JSONDecoder, destination: URL?) throws -> Self {
        try decoded(from: body, decoder: decoder)
    }
}

/// ``VoidResponse``: the body is ignored, so an empty one (a `204`) is a success.
extension VoidResponse: ResponseKind {
    static func decoded(from data: Data, decoder: JSONDecoder) throws(NetworkClientError) -> VoidResponse {
        VoidResponse()
    }
}

/// `Data`: the body itself.
extension Data: ResponseKind {
    static func decoded(from data: Data, decoder: JSONDecoder) throws(NetworkClientError) -> Data { data }
}

/// `String`: the body as UTF-8 text.
extension String: ResponseKind {
    static func decoded(from data: Data, decoder: JSONDecoder) throws(NetworkClientError) -> String {
        guard let text = String(data: data, encoding: .utf8) else {
            let context = DecodingError.Context(codingPath: [], debugDescription: "The body is not valid UTF-8.")
            throw .decodingFailed(underlying: DecodingError.dataCorrupted(context), data: data)
        }
        return text
    }
}

/// ``DownloadedFile``: the body is streamed to a file by the transfer; the stub writes a canned body to one.
extension DownloadedFile: ResponseKind {
    static var isFile: Bool { true }

    /// A ``DownloadSink``: the body goes to a file, and resumes what an earlier run of the call kept.
    static func sink(
        request: inout URLRequest, first: URLRequest, destination: URL?, acceptable: Set<Int>?, scope: UInt64
    ) -> (any ResponseBodySink)? {
        DownloadSink.make(
            for: &request, first: first,
            target: DownloadTarget(destination: destination, acceptableStatusCodes: acceptable), scope: scope)
    }

    static func decoded(from data: Data, decoder: JSONDecoder) throws(NetworkClientError) -> DownloadedFile {
        throw .invalidRequest(reason: "a DownloadedFile is written by the transfer, not decoded from memory")
    }

    /// Writes `body` where the request's ``NetworkRequest/downloadDestination`` says (replacing a file there), or to a
    /// new file under the temporary directory.
    static func stubbed(body: Data, decoder: JSONDecoder, destination: URL?) throws -> DownloadedFile {
        let url =
            destination
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("courier-stub-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try body.write(to: url, options: .atomic)
        } catch {
            throw NetworkClientError.fileAccessFailed(url: url, reason: "the stub could not write the file: \(error)")
        }
        return DownloadedFile(url: url, byteCount: Int64(body.count))
    }
}

/// The one lookup of a response's kind.
enum ResponseKinds {
    /// What a response type is, looked up once per call and handed along: each dynamic cast to a protocol is a
    /// conformance lookup, and a call asked several times.
    struct Facts: Sendable {
        /// The type's rules, or `nil` for JSON.
        let kind: (any ResponseKind.Type)?
        /// The type's rules as a stream, or `nil`.
        let stream: (any StreamResponseKind.Type)?

        /// The `Accept` header field a request for the type sends.
        var accept: String { kind?.accept ?? defaultAccept }
    }

    /// What `type` is.
    static func facts<ResponseModel>(_ type: ResponseModel.Type) -> Facts {
        let kind = type as? any ResponseKind.Type
        return Facts(kind: kind, stream: kind?.streamKind)
    }

    /// Whether `status` counts as success: in `acceptable` when given, else in ``defaultAcceptableStatusCodes``.
    static func accepts(_ status: Int, _ acceptable: Set<Int>?) -> Bool {
        acceptable?.contains(status) ?? defaultAcceptableStatusCodes.contains(status)
    }

    /// Whether `type`'s body goes to a file.
    static func isFile<ResponseModel>(_ type: ResponseModel.Type) -> Bool {
        (type as? any ResponseKind.Type)?.isFile ?? false
    }

    /// The rules of `type` when it is a stream (``ServerSentEvents``, ``JSONLines``, ``ByteStream``); `nil` otherwise.
    static func stream<ResponseModel>(_ type: ResponseModel.Type) -> (any StreamResponseKind.Type)? {
        (type as? any ResponseKind.Type)?.streamKind
    }

    /// Whether `type` is a stream: never shared, cached or stored in an outbox.
    static func isStream<ResponseModel>(_ type: ResponseModel.Type) -> Bool {
        stream(type) != nil
    }

    /// The `Accept` header field of a request for `type`.
    static func accept<ResponseModel>(_ type: ResponseModel.Type) -> String {
        (type as? any ResponseKind.Type)?.accept ?? defaultAccept
    }

    /// The value of an accepted body: the kind's rule, or JSON with `decoder`.
    static func decode<ResponseModel: Decodable>(
        _ type: ResponseModel.Type, from data: Data, with decoder: JSONDecoder
    ) throws(NetworkClientError) -> ResponseModel {
        try decode(type, kind: type as? any ResponseKind.Type, from: data, with: decoder)
    }

    /// ``decode(_:from:with:)`` with `type`'s rules already looked up (``Facts/kind``).
    static func decode<ResponseModel: Decodable>(
        _ type: ResponseModel.Type, kind: (any ResponseKind.Type)?, from data: Data, with decoder: JSONDecoder
    ) throws(NetworkClientError) -> ResponseModel {
        if let kind {
            return try kind.decoded(from: data, decoder: decoder) as! ResponseModel
        }
        do {
            return try decoder.decode(type, from: data)
        } catch {
            throw .decodingFailed(underlying: error, data: data)
        }
    }

    /// A configuration was released: what the kinds kept for it (a download's partial bytes) is deleted.
    static func configurationReleased(_ scope: UInt64) {
        DownloadSink.configurationReleased(scope)
    }

    /// What ``StubNetworkClient`` answers for a canned body of an accepted status.
    static func stubbed<ResponseModel: Decodable>(
        _ type: ResponseModel.Type, body: Data, decoder: JSONDecoder, destination: URL?
    ) throws -> ResponseModel {
        if let kind = type as? any ResponseKind.Type {
            return try kind.stubbed(body: body, decoder: decoder, destination: destination) as! ResponseModel
        }
        return try decode(type, from: body, with: decoder)
    }
}
