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
/// Bodies are held in memory, both ways: a request body is collected (up to ``maximumRequestBodySize``) before it is
/// sent, and a response body is read whole, under Courier's size limit, before the generated client sees it.
public struct CourierClientTransport: ClientTransport {
    /// The client that runs the operations.
    public let client: any NetworkClientProtocol
    /// The largest request body collected, in bytes; ``defaultMaximumRequestBodySize`` (100 MiB) by default.
    public let maximumRequestBodySize: Int
    /// The request options of every operation (a tag, sharing, retry, the credential); `RequestOptions()` by default.
    public let options: RequestOptions

    /// The default largest request body: 100 MiB, as Courier's default response size limit.
    public static let defaultMaximumRequestBodySize = 100 * 1024 * 1024

    /// A transport that runs every operation through `client`.
    ///
    /// - Parameters:
    ///   - client: The client, usually a ``NetworkClient`` in decorators.
    ///   - maximumRequestBodySize: The largest request body collected; 100 MiB by default.
    ///   - options: The ``RequestOptions`` of every operation; `RequestOptions()` by default. The operation's ID is
    ///     the tag when `options` has none.
    public init(
        client: any NetworkClientProtocol,
        maximumRequestBodySize: Int = CourierClientTransport.defaultMaximumRequestBodySize,
        options: RequestOptions = RequestOptions()
    ) {
        self.client = client
        self.maximumRequestBodySize = maximumRequestBodySize
        self.options = options
    }

    /// Sends `request` through ``client`` and returns the response, whatever its status.
    ///
    /// - Throws: ``CourierClientTransportError`` when the request cannot be expressed (an HTTP method Courier does
    ///   not send, a URL that cannot be built), or what ``client`` throws when no response arrived
    ///   (``NetworkClientError/transportFailed(_:)``, `CancellationError`, …); the generated client wraps it in its
    ///   `ClientError`.
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
        let networkRequest = NetworkRequest<Data, Data>(
            method: method, body: bytes, baseURL: url, additionalHeaders: headers.isEmpty ? nil : headers,
            options: options)
        do {
            let response = try await client.run(networkRequest)
            guard let head = response.response as? HTTPURLResponse else {
                throw NetworkClientError.invalidResponse(response.response)
            }
            return (Self.response(head), HTTPBody(response.value))
        } catch NetworkClientError.unacceptableStatusCode(_, let head, let data) {
            // A status the configuration does not accept: the decorators have seen it as a failure; the generated
            // client gets it as the response it documents.
            return (Self.response(head), HTTPBody(data ?? Data()))
        }
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

/// Why ``CourierClientTransport`` could not send an operation.
public enum CourierClientTransportError: Error, Sendable, Equatable {
    /// The HTTP method is not one Courier sends (``Courier/HTTPMethod``).
    case unsupportedMethod(String)
    /// The base URL and the generated path do not make a URL.
    case invalidURL
}
