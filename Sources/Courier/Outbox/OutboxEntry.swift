import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One request kept by an ``Outbox``, as its result handler and the event stream see it.
public struct OutboxEntry: Sendable, Hashable {
    /// The entry's identifier: its ticket's (``ticket``), returned by ``Outbox/enqueue(_:kind:orderingKey:)``.
    public let id: UUID
    /// The kind given at enqueue: it selects the result handler (``Outbox/onResult(kind:as:decoder:handler:)``).
    public let kind: String
    /// The ordering key given at enqueue; `nil` is the one global order.
    public let orderingKey: String?
    /// The `Idempotency-Key` header value sent on every attempt of this entry.
    public let idempotencyKey: String
    /// When the entry was enqueued.
    public let enqueuedAt: Date
}

/// The request an ``Outbox`` sends for an entry, as stored: what the `rewrite` hook (``Outbox/Rewrite``) may change before each send.
///
/// The body is already encoded (JSON, `Data` or form), so no Swift type is needed to send it after a restart.
public struct OutboxRequest: Sendable, Hashable {
    /// The entry this request belongs to.
    public let entry: OutboxEntry
    /// The HTTP method.
    public let method: HTTPMethod
    /// The path appended to the base URL, as in ``NetworkRequest/path``.
    public var path: String?
    /// The query items, in order.
    public var queryItems: [URLQueryItem]?
    /// The header fields sent with the request (`Content-Type` included); the `Idempotency-Key` is added after the
    /// rewrite and credentials by the wrapped client. Secret headers added here are refused at send time too.
    public var headers: [String: String]
    /// The encoded body bytes; `nil` for none. Form items are kept in ``formItems`` instead.
    public var body: Data?
    /// The items of a form-encoded body, encoded by the client at send time.
    public var formItems: [URLFormItem]?
    /// The base URL that replaces the client's for this request; `nil` for the client's.
    public let baseURL: URL?
    /// The idle timeout in seconds, as in ``NetworkRequest/timeoutInterval``.
    public let timeoutInterval: TimeInterval?
    /// The limit on the whole request in seconds, as in ``NetworkRequest/totalTimeout``.
    public let totalTimeout: TimeInterval?
}

/// The persisted form of an entry: everything needed to send it after a restart.
struct StoredEntry: Codable, Sendable {
    var id: UUID
    var sequence: UInt64
    var kind: String
    var orderingKey: String?
    var idempotencyKey: String
    var enqueuedAt: Date
    var method: String
    var path: String?
    var queryItems: [StoredItem]?
    var formItems: [StoredItem]?
    var headers: [String: String]
    var body: Data?
    var baseURL: URL?
    var timeoutInterval: TimeInterval?
    var totalTimeout: TimeInterval?
    var maximumResponseSize: Int?
    var acceptableStatusCodes: [Int]?

    struct StoredItem: Codable, Sendable, Hashable {
        var name: String
        var value: String?
    }

    var entry: OutboxEntry {
        OutboxEntry(
            id: id, kind: kind, orderingKey: orderingKey, idempotencyKey: idempotencyKey, enqueuedAt: enqueuedAt)
    }

    var request: OutboxRequest {
        OutboxRequest(
            entry: entry, method: HTTPMethod(rawValue: method) ?? .post, path: path,
            queryItems: queryItems?.map { URLQueryItem(name: $0.name, value: $0.value) }, headers: headers,
            body: body, formItems: formItems?.map { URLFormItem(name: $0.name, value: $0.value) }, baseURL: baseURL,
            timeoutInterval: timeoutInterval, totalTimeout: totalTimeout)
    }

    /// The request to send: the (rewritten) stored request with the idempotency key, `Data` in and out.
    func networkRequest(_ request: OutboxRequest) -> NetworkRequest<Data, Data> {
        var headers = request.headers
        if !headers.keys.contains(where: { $0.caseInsensitiveCompare(Outbox.idempotencyHeader) == .orderedSame }) {
            headers[Outbox.idempotencyHeader] = idempotencyKey
        }
        return NetworkRequest<Data, Data>(
            path: request.path, method: request.method, queryItems: request.queryItems, formItems: request.formItems,
            body: request.body, baseURL: request.baseURL, additionalHeaders: headers,
            timeoutInterval: request.timeoutInterval, totalTimeout: request.totalTimeout,
            maximumResponseSize: maximumResponseSize, acceptableStatusCodes: acceptableStatusCodes.map(Set.init),
            // The outbox retries its entries itself: a RetryingClient in the stack must not multiply attempts.
            options: RequestOptions(allowsRetry: false))
    }
}

/// The persisted outcome of sending an entry, kept until its handler has run.
struct StoredResult: Codable, Sendable {
    /// The final HTTP status, when there was a response.
    var statusCode: Int?
    /// The response URL, redacted.
    var url: URL?
    /// The response header fields, without `Set-Cookie` and secret fields.
    var headers: [String: String]?
    /// The response body.
    var body: Data?
    /// Why the send failed without a status: a `URLError` code, or the error's safe description.
    var failure: Failure?
    /// When the result was stored.
    var storedAt: Date

    enum Failure: Codable, Sendable {
        case transport(code: Int)
        case invalidURL(String)
        case invalidHeader(name: String, reason: String)
        case invalidRequest(String)
        case responseTooLarge(limit: Int)
        case redirectRefused(String)
        case other(String)
    }

    static func success(_ response: NetworkResponse<Data>, isSecretHeader: (String) -> Bool, now: Date) -> StoredResult
    {
        let http = response.response as? HTTPURLResponse
        return StoredResult(
            statusCode: response.statusCode, url: http?.url.map(Redaction.redactedURL),
            headers: http.map { storedHeaders($0, isSecretHeader: isSecretHeader) }, body: response.data,
            failure: nil, storedAt: now)
    }

    static func failure(_ error: any Error, isSecretHeader: (String) -> Bool, now: Date) -> StoredResult {
        var result = StoredResult(storedAt: now)
        guard let error = error as? NetworkClientError else {
            result.failure = .other(String(describing: type(of: error)))
            return result
        }
        switch error {
        case .unacceptableStatusCode(let status, let response, let data):
            result.statusCode = status
            result.url = response.url.map(Redaction.redactedURL)
            result.headers = storedHeaders(response, isSecretHeader: isSecretHeader)
            result.body = data
        case .transportFailed(let urlError):
            result.failure = .transport(code: urlError.code.rawValue)
        case .invalidURL(let reason):
            result.failure = .invalidURL(reason)
        case .invalidHeader(let name, let reason):
            result.failure = .invalidHeader(name: name, reason: reason)
        case .invalidRequest(let reason):
            result.failure = .invalidRequest(reason)
        case .responseTooLarge(let limit):
            result.failure = .responseTooLarge(limit: limit)
        case .redirectRefused(let reason):
            result.failure = .redirectRefused(reason)
        default:
            // encodingFailed, interceptorFailed, invalidResponse, decodingFailed and any later case: the safe text.
            result.failure = .other(error.description)
        }
        return result
    }

    /// Response headers worth keeping: never `Set-Cookie` nor a secret (a configured name, or one the outbox's
    /// ``Outbox/secrets`` rules name, such as `X-Auth-Token`).
    private static func storedHeaders(
        _ response: HTTPURLResponse, isSecretHeader: (String) -> Bool
    ) -> [String: String] {
        var fields: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            guard let name = name as? String, let value = value as? String else { continue }
            let lowered = name.lowercased()
            if lowered == "set-cookie" || isSecretHeader(lowered) { continue }
            fields[name] = value
        }
        return fields
    }

    var isSuccess: Bool { failure == nil && statusCode.map { defaultAcceptableStatusCodes.contains($0) } == true }

    /// The response as the handler's type sees it, or the error, decoded with `decoder`.
    func outcome<Value: Decodable & Sendable>(
        as type: Value.Type, decoder: JSONDecoder, acceptable: Set<Int>?
    ) -> Result<NetworkResponse<Value>, NetworkClientError> {
        let response: HTTPURLResponse? = statusCode.flatMap {
            HTTPURLResponse(
                url: url ?? URL(string: "about:blank")!, statusCode: $0, httpVersion: "HTTP/1.1", headerFields: headers)
        }
        if let failure {
            return .failure(failure.error)
        }
        guard let response, let statusCode else { return .failure(.invalidRequest(reason: "no stored response")) }
        let data = body ?? Data()
        guard ResponseKinds.accepts(statusCode, acceptable) else {
            return .failure(.unacceptableStatusCode(statusCode: statusCode, response: response, data: data))
        }
        do {
            let value = try ResponseKinds.decode(Value.self, from: data, with: decoder)
            return .success(NetworkResponse(value: value, response: response, data: data))
        } catch {
            return .failure(error)
        }
    }
}

extension StoredResult.Failure {
    var error: NetworkClientError {
        switch self {
        case .transport(let code): return .transportFailed(URLError(URLError.Code(rawValue: code) ?? .unknown))
        case .invalidURL(let reason): return .invalidURL(reason: reason)
        case .invalidHeader(let name, let reason): return .invalidHeader(name: name, reason: reason)
        case .invalidRequest(let reason): return .invalidRequest(reason: reason)
        case .responseTooLarge(let limit): return .responseTooLarge(limit: limit)
        case .redirectRefused(let reason): return .redirectRefused(reason: reason)
        case .other(let description): return .interceptorFailed(underlying: OutboxError.sendFailed(description))
        }
    }
}
