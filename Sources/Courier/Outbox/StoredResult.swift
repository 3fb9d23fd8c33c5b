import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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

extension StoredResult {
    /// The error the handler will see, if the result is a failure.
    func error(acceptable: Set<Int>?) -> NetworkClientError? {
        if let failure { return failure.error }
        guard let statusCode, ResponseKinds.accepts(statusCode, acceptable) else {
            return outcome(as: VoidResponse.self, decoder: JSONDecoder(), acceptable: acceptable).failureValue
        }
        return nil
    }
}

extension Result {
    fileprivate var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
