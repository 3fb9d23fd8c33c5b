import Courier
import Foundation
import HTTPTypes
import OpenAPIRuntime

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A swift-openapi-generator `ClientTransport` that runs each operation through a ``NetworkClientProtocol``: a
/// ``NetworkClient`` and whatever decorators wrap it (retries, a credential with single-flight renewal, logging,
/// deduplication), or a ``StubNetworkClient`` in tests.
///
/// ```swift
/// let courier = NetworkClient(configuration: configuration).authenticated(by: tokens).retrying()
/// let api = Client(serverURL: try Servers.Server1.url(), transport: CourierClientTransport(client: courier))
/// ```
///
/// Each operation becomes one ``NetworkRequest`` of `Data` to `Data`: the generated client's URL (base URL, path and
/// query, encoded as the generator wrote them), method, header fields and body. Every status comes back to the
/// generated client as a response, so its documented `4xx` and `5xx` cases work; a status Courier's configuration
/// does not accept still passes through the decorators as a failure first (a `503` is retried, a `401` renews the
/// credential) before it is handed over.
///
/// A response body is streamed (``ResponseBodies/streamed``, the default): the operation runs as a `ByteStream`
/// request, so the generated client gets the response at its head and its `HTTPBody` yields the body's chunks as they
/// arrive; iterating it drives the transfer (a reader that stops reading holds the server back, one that stops
/// iterating or is cancelled ends it). ``ResponseBodies/buffered`` reads each body whole first, as before. A request
/// body is collected in memory (up to ``maximumRequestBodySize``) before it is sent.
public struct CourierClientTransport: ClientTransport {
    /// The client that runs the operations.
    public let client: any NetworkClientProtocol
    /// The largest request body collected, in bytes; ``defaultMaximumRequestBodySize`` (100 MiB) by default.
    public let maximumRequestBodySize: Int
    /// The request options of every operation (a tag, sharing, retry, the credential); `RequestOptions()` by default.
    public let options: RequestOptions
    /// How response bodies reach the generated client; ``ResponseBodies/streamed`` by default.
    public let responseBodies: ResponseBodies
    /// The largest streamed body of a JSON response (`application/json`, `…+json`), which the generated client
    /// collects whole before it decodes it; ``defaultMaximumJSONBodySize`` (100 MiB) by default. A larger one fails
    /// with ``CourierClientTransportError/jsonBodyTooLarge(limit:)`` and the transfer stops: at the head when its
    /// `Content-Length` says so (nothing of the body is read), else from the body's iteration once it passes the
    /// limit. Other streamed bodies (events, JSON lines, binary) are the reader's to bound.
    public let maximumJSONBodySize: Int

    /// How a response body reaches the generated client.
    public enum ResponseBodies: Sendable, Hashable {
        /// As it arrives (the default): each operation runs as a `NetworkRequest<Data, ByteStream>`, the response is
        /// handed over at its head, and its `HTTPBody` (iterated once) yields the chunks as the transport receives
        /// them, its length the `Content-Length` when the server sent one and no `Content-Encoding`. Reading drives
        /// the transfer: a reader that falls behind holds the server back (``NetworkConfiguration/streamBufferCapacity``), one that
        /// stops iterating, drops the body or is cancelled ends it. A stream's rules apply to a successful status:
        /// ``NetworkConfiguration/maximumResponseSize`` does not bound its body, it is never shared by
        /// ``DeduplicatingClient`` nor cached, and a logging decorator logs it when it opens and when it ends.
        case streamed
        /// Whole: each operation runs as a `NetworkRequest<Data, Data>`, and the body is read under Courier's size
        /// limit before the generated client sees it; identical concurrent requests can be shared
        /// (``DeduplicatingClient``) and cached responses answered.
        case buffered
    }

    /// The default largest request body: 100 MiB, as Courier's default response size limit.
    public static let defaultMaximumRequestBodySize = 100 * 1024 * 1024

    /// The default largest streamed JSON response body: 100 MiB, as Courier's default response size limit.
    public static let defaultMaximumJSONBodySize = 100 * 1024 * 1024

    /// A transport that runs every operation through `client`.
    ///
    /// - Parameters:
    ///   - client: The client, usually a ``NetworkClient`` in decorators.
    ///   - maximumRequestBodySize: The largest request body collected; 100 MiB by default.
    ///   - options: The ``RequestOptions`` of every operation; `RequestOptions()` by default. The operation's ID is
    ///     the tag when `options` has none.
    ///   - responseBodies: How response bodies reach the generated client; ``ResponseBodies/streamed`` (as they
    ///     arrive) by default.
    ///   - maximumJSONBodySize: The largest streamed JSON response body; 100 MiB by default.
    public init(
        client: any NetworkClientProtocol,
        maximumRequestBodySize: Int = CourierClientTransport.defaultMaximumRequestBodySize,
        options: RequestOptions = RequestOptions(),
        responseBodies: ResponseBodies = .streamed,
        maximumJSONBodySize: Int = CourierClientTransport.defaultMaximumJSONBodySize
    ) {
        self.client = client
        self.maximumRequestBodySize = maximumRequestBodySize
        self.options = options
        self.responseBodies = responseBodies
        self.maximumJSONBodySize = maximumJSONBodySize
    }

    /// Sends `request` through ``client`` and returns the response, whatever its status: at its head, with a body
    /// that streams, or once the body was read whole (``responseBodies``).
    ///
    /// - Throws: ``CourierClientTransportError`` when the request cannot be expressed (an HTTP method Courier does
    ///   not send, a URL that cannot be built), or what ``client`` throws when no response arrived
    ///   (``NetworkClientError/transportFailed(_:)``, `CancellationError`, …); the generated client wraps it in its
    ///   `ClientError`. A streamed body that fails after the head throws from its iteration (the connection dropped:
    ///   ``NetworkClientError/transportFailed(_:)``; a JSON body over ``maximumJSONBodySize``:
    ///   ``CourierClientTransportError/jsonBodyTooLarge(limit:)``). A status Courier does not accept whose body is
    ///   larger than Courier's size limit throws ``NetworkClientError/responseTooLarge(limit:)``.
    public func send(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard let method = Courier.HTTPMethod(rawValue: request.method.rawValue) else {
            throw CourierClientTransportError.unsupportedMethod(request.method.rawValue)
        }
        let url = try Self.url(base: baseURL, path: request.path ?? "")
        var headers: [String: String] = [:]
        for field in request.headerFields where !Self.framingFields.contains(field.name) {
            let name = field.name.canonicalName
            headers[name] = headers[name].map { "\($0), \(field.value)" } ?? field.value
        }
        let bytes: Data? =
            if let body { try await Data(collecting: body, upTo: maximumRequestBodySize) } else { nil }
        var options = options
        if options.tag == nil { options.tag = operationID }
        do {
            switch responseBodies {
            case .streamed:
                let response = try await client.run(
                    NetworkRequest<Data, ByteStream>(
                        method: method, body: bytes, baseURL: url, additionalHeaders: headers.isEmpty ? nil : headers,
                        options: options))
                let head = try Self.head(of: response)
                let length = Self.length(of: head, method: method)
                let isJSON = Self.isJSON(head)
                // A JSON body that says it is larger than the limit is refused before it is read; dropping the
                // stream closes its connection.
                if isJSON, case .known(let declared) = length, declared > Int64(maximumJSONBodySize) {
                    throw CourierClientTransportError.jsonBodyTooLarge(limit: maximumJSONBodySize)
                }
                // Iterated once: the HTTPBody's iterator is the stream's, so reading it drives the transfer. A JSON
                // body, which the generated client collects whole, is held to a limit as it arrives.
                let body =
                    isJSON
                    ? HTTPBody(
                        BoundedChunks(base: response.value, limit: maximumJSONBodySize), length: length,
                        iterationBehavior: .single)
                    : HTTPBody(response.value, length: length, iterationBehavior: .single)
                return (Self.response(head), body)
            case .buffered:
                let response = try await client.run(
                    NetworkRequest<Data, Data>(
                        method: method, body: bytes, baseURL: url, additionalHeaders: headers.isEmpty ? nil : headers,
                        options: options))
                return (Self.response(try Self.head(of: response)), HTTPBody(response.value))
            }
        } catch NetworkClientError.unacceptableStatusCode(_, let head, let data) {
            // A status the configuration does not accept: the decorators have seen it as a failure; the generated
            // client gets it as the response it documents, with its body (read whole under Courier's size limit).
            let body = data ?? Data()
            // Courier keeps a streamed call's error body up to its size limit and stops there: one that declared more
            // was cut at the limit, and is not handed over as if whole.
            if case .known(let declared) = Self.length(of: head, method: method), declared > Int64(body.count) {
                throw NetworkClientError.responseTooLarge(limit: body.count)
            }
            return (Self.response(head), HTTPBody(body))
        }
    }

    private static func head<Value>(of response: NetworkResponse<Value>) throws -> HTTPURLResponse {
        guard let head = response.response as? HTTPURLResponse else {
            throw NetworkClientError.invalidResponse(response.response)
        }
        return head
    }

    /// The length of a streamed body: none for `HEAD`, `204` and `304`; else the `Content-Length` when the server
    /// sent one and the body was not compressed (a transport hands over the decompressed bytes); else unknown.
    static func length(of head: HTTPURLResponse, method: Courier.HTTPMethod) -> HTTPBody.Length {
        if method == .head || head.statusCode == 204 || head.statusCode == 304 { return .known(0) }
        let encoding = head.value(forHTTPHeaderField: "Content-Encoding")?.trimmingCharacters(in: .whitespaces) ?? ""
        guard encoding.isEmpty || encoding.lowercased() == "identity",
            let text = head.value(forHTTPHeaderField: "Content-Length"),
            let length = Int64(text.trimmingCharacters(in: .whitespaces)), length >= 0
        else { return .unknown }
        return .known(length)
    }

    /// Whether `head`'s `Content-Type` is JSON (`application/json` or a `+json` type), which the generated client
    /// collects whole.
    static func isJSON(_ head: HTTPURLResponse) -> Bool {
        guard let contentType = head.value(forHTTPHeaderField: "Content-Type") else { return false }
        let essence = (contentType.split(separator: ";").first ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        return essence == "application/json" || essence.hasSuffix("+json")
    }

    /// Framing is Courier's (it sends the body's `Content-Length`).
    static let framingFields: Set<HTTPField.Name> = [.contentLength, .transferEncoding, .connection]

    /// The base URL followed by the generated path and query, as the generator encoded them.
    static func url(base: URL, path: String) throws(CourierClientTransportError) -> URL {
        var text = base.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        guard let url = URL(string: text + (path.hasPrefix("/") || path.isEmpty ? path : "/" + path)) else {
            throw .invalidURL
        }
        return url
    }

    static func response(_ head: HTTPURLResponse) -> HTTPResponse {
        var fields = HTTPFields()
        for (name, value) in head.allHeaderFields {
            guard let text = name as? String, let name = HTTPField.Name(text), let value = value as? String else {
                continue
            }
            fields.append(HTTPField(name: name, value: value))
        }
        return HTTPResponse(status: HTTPResponse.Status(code: head.statusCode), headerFields: fields)
    }
}

/// Why ``CourierClientTransport`` could not send an operation, or read its response.
public enum CourierClientTransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP method is not one Courier sends (``Courier/HTTPMethod``).
    case unsupportedMethod(String)
    /// The base URL and the generated path do not make a URL.
    case invalidURL
    /// A streamed JSON body is larger than `limit` bytes, the transport's
    /// ``CourierClientTransport/maximumJSONBodySize``: its `Content-Length` said so (nothing was read), or it passed
    /// the limit as it arrived. The transfer was stopped.
    case jsonBodyTooLarge(limit: Int)

    /// A description safe to log.
    public var description: String {
        switch self {
        case .unsupportedMethod(let method):
            return "The HTTP method \(String(reflecting: String(method.prefix(40)))) is not one Courier sends."
        case .invalidURL:
            return "The server URL and the operation's path do not make a URL."
        case .jsonBodyTooLarge(let limit):
            return
                "The JSON response body is larger than the limit of \(limit) bytes "
                + "(CourierClientTransport.maximumJSONBodySize); the transfer was stopped."
        }
    }
}

/// A body's chunks, ended with ``CourierClientTransportError/jsonBodyTooLarge(limit:)`` once they pass `limit` bytes
/// (the stream is dropped, which stops its transfer).
struct BoundedChunks: AsyncSequence, Sendable {
    typealias Element = Data

    let base: ByteStream
    let limit: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: ByteStream.AsyncIterator?
        let limit: Int
        var total = 0

        mutating func next() async throws -> Data? {
            guard let chunk = try await base?.next() else { return nil }
            total += chunk.count
            guard total <= limit else {
                base = nil
                throw CourierClientTransportError.jsonBodyTooLarge(limit: limit)
            }
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), limit: limit)
    }
}
