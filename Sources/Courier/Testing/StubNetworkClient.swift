import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A test double of ``NetworkClientProtocol`` that answers with canned values, bodies or errors, records every
/// request it receives, and never touches the network.
///
/// Give an SDK this client instead of a ``NetworkClient``, stub the calls the code under test makes, run the code,
/// then check ``requests``:
///
/// ```swift
/// let client = StubNetworkClient()
/// client.stub(.get, "/posts/bookmarks", returning: PostsResponse(items: []))
/// client.stub(.post, "/micropub", statusCode: 202, headers: ["Location": "/posts/7"])
/// client.stub(.get, "/posts/99", statusCode: 404, body: #"{"code":"not_found"}"#)
/// client.stub(.delete, "/posts/1", throwing: URLError(.notConnectedToInternet))
///
/// let posts = try await client.run(PostsAPIFactory.makeBookmarksRequest()).value
/// #expect(client.requests.map(\.description) == ["GET /posts/bookmarks"])
/// ```
///
/// - A stub matches by method and path (compared after dropping one leading `/`, so `"posts"` and `"/posts"` are the
///   same), or by a closure that sees the whole ``Request``. The most recently added matching stub answers, so a test
///   can override a default stubbed in `setUp`. Stubs answer any number of times.
/// - It serves ``Pages`` like any request: a response's URL is the request's, query included, as a server's would be,
///   and a next page sent to a whole URL (a `Link`, ``NetworkRequest/replacingURL(with:)``) is recorded with that URL's
///   path and query, so `stub(.get, "/items", …)` serves `https://stub.invalid/items?page=2`. Secrets stay off another
///   origin as ``NetworkClient`` keeps them: an ``AuthenticatingClient``'s credential, and for such a next page the
///   `Authorization`, `Cookie` and `Proxy-Authorization` fields.
/// - Canned bodies behave like the server's: the status is checked against the request's (or the stub client's)
///   acceptable status codes, so a 404 throws ``NetworkClientError/unacceptableStatusCode(statusCode:response:data:)``
///   with the body, and a 2xx body is decoded the way ``NetworkClient`` decodes it (``VoidResponse`` accepts an empty
///   body, `Data` is raw, `String` is UTF-8, anything else JSON with the request's or the stub's decoder).
/// - For a ``DownloadedFile`` response, stub a value: `returning: DownloadedFile(url: fileURL, byteCount: 42)`.
/// - When no stub matches, ``run(_:)`` throws ``StubNetworkClientError/noMatchingStub(request:stubs:)``, whose
///   description names the request and lists the stubs: the test fails with a readable message rather than hanging
///   or crashing.
///
/// It is safe to use from any task; stubs added while requests run apply to the next request.
public final class StubNetworkClient: NetworkClientProtocol {
    /// What the stub client saw of one request: everything that identifies it, with the body already encoded.
    public struct Request: Sendable, CustomStringConvertible {
        /// The HTTP method.
        public let method: HTTPMethod
        /// The request's path as given (`nil` when the request has none). For a request whose whole URL is its base URL
        /// (a page's `Link`, ``NetworkRequest/replacingURL(with:)``), the path of that URL, relative to the stub's
        /// ``StubNetworkClient/baseURL`` when it is under it: the path a stub matches.
        public let path: String?
        /// The request's query items, in order (for a whole URL, its query first); empty when it has none.
        public let queryItems: [URLQueryItem]
        /// The request's form items, in order; empty when it has none.
        public let formItems: [URLFormItem]
        /// The request's additional headers; empty when it has none.
        public let headers: [String: String]
        /// The body: JSON from the request's encoder (else the stub client's), `Data` as is, `nil` for ``VoidRequest``
        /// or no body.
        public let body: Data?
        /// The body as the request holds it, before encoding: a model, a ``FileUpload``, a ``MultipartFormData``;
        /// `nil` when the request has none.
        public let bodyValue: (any Sendable)?
        /// The request's own base URL, if it overrides the configuration's: for a whole URL under the stub's base URL,
        /// `nil`; on another origin, that origin.
        public let baseURL: URL?
        /// The name of the request's response type, e.g. `"PostsResponse"`.
        public let responseType: String

        /// The value of the query item `name` (the first one), or `nil` when there is none or it has no value.
        public func query(_ name: String) -> String? {
            queryItems.first { $0.name == name }?.value ?? nil
        }

        /// The value of the form item `name` (the first one), or `nil`.
        public func form(_ name: String) -> String? {
            formItems.first { $0.name == name }?.value ?? nil
        }

        /// The header `name`, compared case-insensitively, or `nil`.
        public func header(_ name: String) -> String? {
            headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
        }

        /// Decodes the body as JSON into `type`.
        /// - Throws: `DecodingError` when the body is not `type`'s JSON, or when there is no body.
        public func decodedBody<Body: Decodable>(as type: Body.Type, decoder: JSONDecoder = JSONDecoder()) throws
            -> Body
        {
            guard let body else {
                throw DecodingError.valueNotFound(
                    type, DecodingError.Context(codingPath: [], debugDescription: "The request has no body."))
            }
            return try decoder.decode(type, from: body)
        }

        /// `METHOD path?query`, for example `GET /posts/timeline?count=20`: the query as a test would write it,
        /// not percent-encoded.
        public var description: String {
            var text = "\(method.rawValue) \(path ?? "")"
            if !queryItems.isEmpty {
                text +=
                    "?"
                    + queryItems.map { item in item.value.map { "\(item.name)=\($0)" } ?? item.name }
                    .joined(separator: "&")
            }
            return text
        }
    }

    /// What a stub answers with: what ``stub(label:where:answer:)``'s closure returns. The other `stub` methods
    /// make these answers: `returning:` a ``value(_:statusCode:)``, `body:` and `data:` a
    /// ``body(_:statusCode:headers:)``, `throwing:` an ``error(_:)``.
    public enum Answer: Sendable {
        /// This value, as if decoded from a response of `statusCode` (`200` in the `stub` methods), with no header
        /// fields; it must be of the request's `ResponseModel` type. The status is not checked against the
        /// acceptable ones.
        case value(any Sendable, statusCode: Int)
        /// These bytes as the response body, with this status and these header fields, handled as ``NetworkClient``
        /// handles a server's: a status outside the acceptable ones throws
        /// ``NetworkClientError/unacceptableStatusCode(statusCode:response:data:)`` with the body; an acceptable one is
        /// decoded into the request's `ResponseModel`. The fields are the response's
        /// (``NetworkResponse/header(_:)``).
        case body(Data, statusCode: Int, headers: [String: String])
        /// This error, thrown as is.
        case error(any Error)

        /// A response of `statusCode` whose body is `text` in UTF-8, usually JSON.
        /// - Parameters:
        ///   - text: The body.
        ///   - statusCode: The status; `200` by default.
        ///   - headers: The response header fields; none by default.
        /// - Returns: A ``body(_:statusCode:headers:)`` answer.
        public static func json(_ text: String, statusCode: Int = 200, headers: [String: String] = [:]) -> Answer {
            .body(Data(text.utf8), statusCode: statusCode, headers: headers)
        }
    }

    private struct Stub: Sendable {
        let label: String
        let matches: @Sendable (Request) -> Bool
        let answer: @Sendable (Request) -> Answer
    }

    private struct State: Sendable {
        var stubs: [Stub] = []
        var requests: [Request] = []
    }

    private let state = Locked(State())
    /// The base URL of the responses' `HTTPURLResponse`s.
    public let baseURL: URL
    /// Decodes canned bodies for requests that have no decoder of their own.
    public let decoder: JSONDecoder
    /// Encodes the bodies of requests that have no encoder of their own, for ``Request/body``.
    public let encoder: JSONEncoder
    /// The statuses that count as success for canned bodies when the request sets none;
    /// ``NetworkConfiguration/defaultAcceptableStatusCodes`` (`200..<300`) by default.
    public let acceptableStatusCodes: Set<Int>

    /// Creates a stub client with no stubs.
    /// - Parameters:
    ///   - baseURL: The URL the responses claim to come from; `https://stub.invalid` by default.
    ///   - decoder: The decoder for canned bodies; a plain `JSONDecoder()` by default. Pass your configuration's
    ///     `defaultDecoder` to decode exactly as your real client does.
    ///   - encoder: The encoder for recorded request bodies; a plain `JSONEncoder()` by default.
    ///   - acceptableStatusCodes: The statuses of canned bodies that count as success;
    ///     ``NetworkConfiguration/defaultAcceptableStatusCodes`` (`200..<300`) by default.
    public init(
        baseURL: URL = URL(string: "https://stub.invalid")!,
        decoder: JSONDecoder = JSONDecoder(),
        encoder: JSONEncoder = JSONEncoder(),
        acceptableStatusCodes: Set<Int> = NetworkConfiguration.defaultAcceptableStatusCodes
    ) {
        self.baseURL = baseURL
        self.decoder = decoder
        self.encoder = encoder
        self.acceptableStatusCodes = acceptableStatusCodes
    }

    // MARK: Stubbing

    /// Answers requests with `method` and `path` with `value`, as a `200` (or `statusCode`) response.
    ///
    /// `value` must have the request's `ResponseModel` type; if not, the request throws
    /// ``StubNetworkClientError/typeMismatch(request:expected:actual:)``.
    /// - Parameters:
    ///   - method: The method to match.
    ///   - path: The path to match; a leading `/` does not matter.
    ///   - value: The decoded value to return.
    ///   - statusCode: The status of the response; `200` by default. It is not checked.
    public func stub(_ method: HTTPMethod, _ path: String, returning value: some Sendable, statusCode: Int = 200) {
        add(Self.label(method, path), Self.matching(method, path)) { _ in .value(value, statusCode: statusCode) }
    }

    /// Answers requests with `method` and `path` with a response of `statusCode`, `headers` and `body`, handled as a
    /// server's response: a status outside the acceptable ones throws
    /// ``NetworkClientError/unacceptableStatusCode(statusCode:response:data:)`` with the body, and an acceptable one is
    /// decoded into the request's `ResponseModel`. The header fields are the response's: ``NetworkResponse/header(_:)``
    /// reads them, and `Content-Type: text/event-stream` lets a ``ServerSentEvents`` request parse the body.
    ///
    /// ```swift
    /// client.stub(.get, "/posts/7", statusCode: 200, body: #"{"id":7}"#, headers: ["ETag": "\"v2\""])
    /// client.stub(.get, "/posts/8", statusCode: 404, body: #"{"code":"not_found"}"#)
    /// ```
    /// - Parameters:
    ///   - method: The method to match.
    ///   - path: The path to match; a leading `/` does not matter.
    ///   - statusCode: The response status; `200` by default.
    ///   - body: The body as UTF-8 text, usually JSON; empty by default.
    ///   - headers: The response header fields; none by default.
    public func stub(
        _ method: HTTPMethod, _ path: String, statusCode: Int = 200, body: String = "",
        headers: [String: String] = [:]
    ) {
        stub(method, path, statusCode: statusCode, data: Data(body.utf8), headers: headers)
    }

    /// Answers requests with `method` and `path` with a response of `statusCode`, `headers` and the raw `data` as its
    /// body; see ``stub(_:_:statusCode:body:headers:)``.
    /// - Parameters:
    ///   - method: The method to match.
    ///   - path: The path to match; a leading `/` does not matter.
    ///   - statusCode: The response status; `200` by default.
    ///   - data: The body bytes.
    ///   - headers: The response header fields; none by default.
    public func stub(
        _ method: HTTPMethod, _ path: String, statusCode: Int = 200, data: Data, headers: [String: String] = [:]
    ) {
        add(Self.label(method, path), Self.matching(method, path)) { _ in
            .body(data, statusCode: statusCode, headers: headers)
        }
    }

    /// Answers requests with `method` and `path` by throwing `error`, for example a
    /// ``NetworkClientError/transportFailed(_:)`` or a `CancellationError`.
    /// - Parameters:
    ///   - method: The method to match.
    ///   - path: The path to match; a leading `/` does not matter.
    ///   - error: The error to throw.
    public func stub(_ method: HTTPMethod, _ path: String, throwing error: any Error) {
        add(Self.label(method, path), Self.matching(method, path)) { _ in .error(error) }
    }

    /// Answers every request for which `matches` returns `true` with what `answer` returns for it.
    ///
    /// ```swift
    /// client.stub(
    ///     label: "any post", where: { $0.method == .get && $0.path?.hasPrefix("/posts/") == true },
    ///     answer: { _ in .json(#"{"id":1}"#) })
    /// ```
    /// - Parameters:
    ///   - label: How ``StubNetworkClientError/noMatchingStub(request:stubs:)`` lists this stub; `"closure"` by
    ///     default.
    ///   - matches: Decides whether this stub answers a request.
    ///   - answer: The answer for a matching request.
    public func stub(
        label: String = "closure", where matches: @escaping @Sendable (Request) -> Bool,
        answer: @escaping @Sendable (Request) -> Answer
    ) {
        add(label, matches, answer)
    }

    /// Removes every stub and every recorded request.
    public func reset() {
        state.withLock { $0 = State() }
    }

    // MARK: Recorded requests

    /// Every request ``run(_:)`` received, in the order received, including those no stub matched.
    public var requests: [Request] {
        state.withLock { $0.requests }
    }

    /// The recorded requests with `method` and `path` (a leading `/` does not matter).
    /// - Parameters:
    ///   - method: The method to look for.
    ///   - path: The path to look for.
    /// - Returns: The matching requests, in the order received.
    public func requests(_ method: HTTPMethod, _ path: String) -> [Request] {
        let matches = Self.matching(method, path)
        return requests.filter(matches)
    }

    // MARK: Running

    /// Records `networkRequest`, then answers it with the most recently added stub that matches.
    ///
    /// - Throws: ``StubNetworkClientError/noMatchingStub(request:stubs:)`` when no stub matches;
    ///   ``StubNetworkClientError/typeMismatch(request:expected:actual:)`` when a stubbed value is not of the
    ///   request's `ResponseModel` type; ``NetworkClientError/unacceptableStatusCode(statusCode:response:data:)`` or
    ///   ``NetworkClientError/decodingFailed(underlying:data:)`` for canned bodies, as the real client would;
    ///   ``NetworkClientError/encodingFailed(underlying:)`` when the request body cannot be encoded; a stubbed error;
    ///   `CancellationError` when the calling task is cancelled.
    public func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        try Task.checkCancellation()
        let (scoped, credentialWithheld) = keepingSecrets(networkRequest)
        let request = try record(scoped)
        if networkRequest.wantsSendReport {
            networkRequest.report(
                SendReport(
                    request: nil, headers: request.headers, body: request.body,
                    configuredSensitiveHeaders: Redaction.alwaysSensitiveHeaders,
                    credentialHeaders: networkRequest.credentialScope?.headerNames ?? [],
                    base: BaseURL(request.baseURL ?? baseURL), credentialWithheld: credentialWithheld))
        }
        // Matchers are the caller's code: they run outside the lock, so that one may read `requests`.
        let stubs = state.withLock { state -> [Stub] in
            state.requests.append(request)
            return state.stubs
        }
        let stub = stubs.last { $0.matches(request) }
        guard let stub else {
            throw StubNetworkClientError.noMatchingStub(request: request.description, stubs: stubs.map(\.label))
        }
        switch stub.answer(request) {
        case .error(let error):
            throw error
        case .value(let value, let statusCode):
            guard let typed = value as? ResponseModel else {
                throw StubNetworkClientError.typeMismatch(
                    request: request.description, expected: String(reflecting: ResponseModel.self),
                    actual: String(reflecting: type(of: value)))
            }
            let data = (value as? any Encodable).flatMap { try? encoder.encode($0) } ?? Data()
            return NetworkResponse(value: typed, response: response(for: request, statusCode, [:]), data: data)
        case .body(let data, let statusCode, let headers):
            let httpResponse = response(for: request, statusCode, headers)
            let accepted = networkRequest.acceptableStatusCodes ?? acceptableStatusCodes
            guard ResponseKinds.accepts(statusCode, accepted) else {
                throw NetworkClientError.unacceptableStatusCode(
                    statusCode: statusCode, response: httpResponse, data: data)
            }
            let value = try ResponseKinds.stubbed(
                ResponseModel.self, body: data, decoder: networkRequest.decoder ?? decoder,
                destination: networkRequest.downloadDestination)
            if let onProgress = networkRequest.onProgress {
                // As a transfer reports: what was sent, then the whole body received.
                let sent = Int64(request.body?.count ?? 0)
                let received = Int64(data.count)
                onProgress(
                    TransferProgress(
                        bytesSent: sent, totalBytesExpectedToSend: sent, bytesReceived: received,
                        totalBytesExpectedToReceive: received))
            }
            let isFile = ResponseKinds.isFile(ResponseModel.self)
            return NetworkResponse(value: value, response: httpResponse, data: isFile ? Data() : data)
        }
    }

    // MARK: Private

    /// `request` as ``NetworkClient`` sends it: without an ``AuthenticatingClient``'s credential when it goes to
    /// another origin than ``baseURL``'s or those the authenticating client names, and, when it continues another
    /// request on another origin (``NetworkRequest/replacingURL(with:)``), without the header fields Courier always
    /// treats as secrets (the stub's sensitive headers), by the rule of a cross-origin redirect. Returns whether the
    /// credential was withheld.
    private func keepingSecrets<RequestModel, ResponseModel>(
        _ request: NetworkRequest<RequestModel, ResponseModel>
    ) -> (NetworkRequest<RequestModel, ResponseModel>, withheld: Bool) {
        var request = request
        let scope = request.credentialScope
        var withheld = false
        if let scope, !scope.allows(Origin.of(request.baseURL ?? baseURL), configured: Origin.of(baseURL)) {
            request.additionalHeaders = request.additionalHeaders?.filter { !scope.covers($0.key) }
            withheld = true
        }
        if let replaced = request.replacedFrom, let headers = request.additionalHeaders {
            let removed = Redirects.withheldHeaders(
                among: headers.keys,
                sensitiveHeaders: Redaction.alwaysSensitiveHeaders.subtracting(scope?.headerNames ?? []),
                from: replaced.resolved(configured: Origin.of(baseURL)), to: request.baseURL ?? baseURL)
            for name in removed { request.additionalHeaders?[name] = nil }
        }
        return (request, withheld)
    }

    private func add(
        _ label: String, _ matches: @escaping @Sendable (Request) -> Bool,
        _ answer: @escaping @Sendable (Request) -> Answer
    ) {
        state.withLock { $0.stubs.append(Stub(label: label, matches: matches, answer: answer)) }
    }

    private func record<RequestModel, ResponseModel>(
        _ request: NetworkRequest<RequestModel, ResponseModel>
    ) throws -> Request {
        let body = try BodyKinds.kind(of: request)?.bytesInMemory(with: request.encoder ?? encoder)
        let place = StubPlace(of: request, under: baseURL)
        return Request(
            method: request.method, path: place.path, queryItems: place.queryItems,
            formItems: request.formItems ?? [], headers: request.additionalHeaders ?? [:], body: body,
            bodyValue: request.body, baseURL: place.baseURL, responseType: String(reflecting: ResponseModel.self))
    }

    /// A response from the URL the request went to, as ``NetworkClient`` would have built it: the base URL, the path
    /// and the query.
    private func response(for request: Request?, _ statusCode: Int, _ headers: [String: String]) -> HTTPURLResponse {
        let url =
            request.flatMap {
                try? BaseURL($0.baseURL ?? baseURL).appending(
                    path: $0.path, queryItems: $0.queryItems.isEmpty ? nil : $0.queryItems)
            } ?? baseURL
        return HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: "HTTP/1.1", headerFields: headers)
            ?? HTTPURLResponse(url: baseURL, statusCode: statusCode, httpVersion: "HTTP/1.1", headerFields: [:])!
    }

    private static func normalized(_ path: String) -> Substring {
        path.hasPrefix("/") ? path.dropFirst() : Substring(path)
    }

    private static func label(_ method: HTTPMethod, _ path: String) -> String {
        "\(method.rawValue) /\(normalized(path))"
    }

    private static func matching(_ method: HTTPMethod, _ path: String) -> @Sendable (Request) -> Bool {
        let path = String(normalized(path))
        return { request in request.method == method && normalized(request.path ?? "") == path }
    }
}

/// Why a ``StubNetworkClient`` could not answer a request.
public enum StubNetworkClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No stub matches the request. `request` is `METHOD path?query`; `stubs` lists the stubs there are.
    case noMatchingStub(request: String, stubs: [String])
    /// A stub returned a value of type `actual` to a request whose response type is `expected`.
    case typeMismatch(request: String, expected: String, actual: String)

    /// Names the request and what went wrong, for a test failure message.
    public var description: String {
        switch self {
        case .noMatchingStub(let request, let stubs):
            let known = stubs.isEmpty ? "there are no stubs" : "the stubs are: " + stubs.joined(separator: ", ")
            return "StubNetworkClient: no stub matches \(request); \(known)."
        case .typeMismatch(let request, let expected, let actual):
            return
                "StubNetworkClient: the stub for \(request) returned a \(actual), but the request expects a \(expected)."
        }
    }
}

extension StubNetworkClientError: LocalizedError {
    /// The same text as ``description``.
    public var errorDescription: String? { description }
}
