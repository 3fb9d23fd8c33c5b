import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Each kind of request body owns its rules here, in one conformance: how `run` sends it and with which content type,
// whether and how the outbox stores it, how the logger shows it, what the stub records and what identifies it for
// deduplication. `NetworkClient`, `Outbox`, `LoggingClient`, `StubNetworkClient` and `DeduplicatingClient` ask
// `BodyKinds.kind(of:)` and nothing else. A body type that conforms to nothing is JSON.

/// Where the bytes of a body come from when it is sent.
enum EncodedBody {
    case data(Data)
    /// A caller's file, streamed.
    case file(URL)
    /// A temporary file Courier made (a large multipart form), streamed and then removed.
    case stagedFile(URL)
}

/// The rules of one kind of request body.
protocol RequestBodyKind: Sendable {
    /// The body as ``NetworkClientProtocol/run(_:)`` sends it, and its `Content-Type`.
    /// - Parameters:
    ///   - encoder: The request's encoder, or the configuration's.
    ///   - totalTimeout: The request's total timeout, which bounds reading files to stage a body; `nil` for none.
    func encodedForSending(
        with encoder: JSONEncoder, totalTimeout: TimeInterval?
    ) throws(NetworkClientError) -> (EncodedBody, contentType: String)
    /// The bytes the ``Outbox`` writes to its journal, and their `Content-Type`.
    /// - Throws: ``OutboxError/invalidRequest(reason:)`` when this kind cannot be stored.
    func storedForOutbox(with encoder: JSONEncoder) throws(OutboxError) -> (Data, contentType: String)
    /// What a log entry shows instead of the body's bytes; `nil` shows the bytes, redacted.
    var logPlaceholder: String? { get }
    /// The body's bytes when they are in memory: what ``StubNetworkClient`` records as
    /// ``StubNetworkClient/Request/body`` and ``LoggingClient`` shows when the sender reported nothing; `nil` for a
    /// body streamed from files.
    func bytesInMemory(with encoder: JSONEncoder) throws(NetworkClientError) -> Data?
    /// The bytes that make two requests' bodies the same for ``DeduplicatingClient``.
    /// - Parameter encoder: The request's encoder, or one with sorted keys.
    func identity(with encoder: JSONEncoder) throws(NetworkClientError) -> Data
}

extension RequestBodyKind {
    func storedForOutbox(with encoder: JSONEncoder) throws(OutboxError) -> (Data, contentType: String) {
        let encoded: (EncodedBody, contentType: String)
        do {
            encoded = try encodedForSending(with: encoder, totalTimeout: nil)
        } catch {
            throw .invalidRequest(reason: error.description)
        }
        guard case (.data(let data), let contentType) = encoded else {
            throw .invalidRequest(
                reason: "a \(Self.self) body is streamed from a file and cannot be stored; enqueue the bytes as Data")
        }
        return (data, contentType)
    }

    var logPlaceholder: String? { nil }

    func bytesInMemory(with encoder: JSONEncoder) throws(NetworkClientError) -> Data? {
        guard case (.data(let data), _) = try encodedForSending(with: encoder, totalTimeout: nil) else { return nil }
        return data
    }
}

/// Any `Encodable` model: JSON, `application/json`.
struct JSONBody: RequestBodyKind {
    let value: any Encodable & Sendable

    func encodedForSending(
        with encoder: JSONEncoder, totalTimeout: TimeInterval?
    ) throws(NetworkClientError) -> (EncodedBody, contentType: String) {
        (.data(try identity(with: encoder)), "application/json")
    }

    func identity(with encoder: JSONEncoder) throws(NetworkClientError) -> Data {
        do {
            return try encoder.encode(value)
        } catch {
            throw .encodingFailed(underlying: error)
        }
    }
}

/// `Data`: sent as is, `application/octet-stream`.
extension Data: RequestBodyKind {
    func encodedForSending(
        with encoder: JSONEncoder, totalTimeout: TimeInterval?
    ) throws(NetworkClientError) -> (EncodedBody, contentType: String) {
        (.data(self), "application/octet-stream")
    }

    func identity(with encoder: JSONEncoder) throws(NetworkClientError) -> Data { self }
}

/// A file: streamed from the disk, never stored by the outbox, never read for a log line, not recorded by the stub
/// (its ``StubNetworkClient/Request/bodyValue`` is the `FileUpload`).
extension FileUpload: RequestBodyKind {
    func encodedForSending(
        with encoder: JSONEncoder, totalTimeout: TimeInterval?
    ) throws(NetworkClientError) -> (EncodedBody, contentType: String) {
        _ = try RegularFile.size(of: url)
        return (.file(url), effectiveContentType)
    }

    var logPlaceholder: String? { "<FileUpload body, not shown>" }

    func bytesInMemory(with encoder: JSONEncoder) throws(NetworkClientError) -> Data? { nil }

    func identity(with encoder: JSONEncoder) throws(NetworkClientError) -> Data {
        try JSONBody(value: self).identity(with: encoder)
    }
}

/// A multipart form: in memory or staged in a temporary file; never stored by the outbox (its file parts may be gone
/// after a restart), never read for a log line, not recorded by the stub.
extension MultipartFormData: RequestBodyKind {
    func encodedForSending(
        with encoder: JSONEncoder, totalTimeout: TimeInterval?
    ) throws(NetworkClientError) -> (EncodedBody, contentType: String) {
        switch try encoded(totalTimeout: totalTimeout) {
        case .data(let data, let contentType): return (.data(data), contentType)
        case .file(let file, let contentType): return (.stagedFile(file), contentType)
        }
    }

    func storedForOutbox(with encoder: JSONEncoder) throws(OutboxError) -> (Data, contentType: String) {
        throw .invalidRequest(
            reason: "a MultipartFormData body is streamed from files and cannot be stored; enqueue the bytes as Data")
    }

    var logPlaceholder: String? { "<MultipartFormData body, not shown>" }

    func bytesInMemory(with encoder: JSONEncoder) throws(NetworkClientError) -> Data? { nil }

    func identity(with encoder: JSONEncoder) throws(NetworkClientError) -> Data {
        try JSONBody(value: self).identity(with: encoder)
    }
}

/// The one lookup of a body's kind.
enum BodyKinds {
    /// The kind of `request`'s body; `nil` when it sends none (no body, or ``VoidRequest``).
    static func kind<RequestModel, ResponseModel>(
        of request: NetworkRequest<RequestModel, ResponseModel>
    ) -> (any RequestBodyKind)? {
        // The stored body, not `body`: no cast back to `RequestModel`, no lookup of the request type's metadata.
        guard let body = request.storedBody, RequestModel.self != VoidRequest.self else { return nil }
        return body as? any RequestBodyKind ?? JSONBody(value: body)
    }
}
