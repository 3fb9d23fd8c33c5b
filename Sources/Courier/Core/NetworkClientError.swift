import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every way ``NetworkClient`` can fail a request, other than cancellation.
///
/// When the calling `Task` is cancelled, Courier throws `CancellationError` instead, and the transfer is cancelled.
/// Errors that are not Courier's client's reach the caller unchanged, through every decorator: an
/// ``Authenticator``'s own errors and ``AuthenticationError`` (from `authenticated(by:)`), ``PaginationError`` (from
/// `pages(of:)`), ``OutboxError`` (from an ``Outbox``), ``StubNetworkClientError`` and a stubbed error (from
/// ``StubNetworkClient``), and what a decorator or test double of your own throws.
/// Errors thrown before anything is sent: ``invalidURL(reason:)``, ``invalidHeader(name:reason:)``,
/// ``invalidRequest(reason:)``, ``encodingFailed(underlying:)`` and ``interceptorFailed(underlying:)``.
public enum NetworkClientError: Error, Sendable {
    /// The request URL could not be built: an invalid base URL, a path with a `.` or `..` segment, or a URL that
    /// Foundation rejects. Nothing was sent.
    case invalidURL(reason: String)
    /// A header name is not an RFC 9110 token, or its value holds CR, LF or another control character (header
    /// injection). Nothing was sent. The value is not kept, since it may be a secret.
    case invalidHeader(name: String, reason: String)
    /// The request is inconsistent, or cannot be sent as asked: both `formItems` and `body` are set; its
    /// `timeoutInterval` or `totalTimeout` is not a positive number (NaN, zero or negative); an interceptor set a
    /// method that is not an RFC 9110 token; or a stream, file upload or download goes to a session or test double
    /// that cannot carry it. Nothing was sent.
    case invalidRequest(reason: String)
    /// The encoder threw while encoding the body. Nothing was sent.
    case encodingFailed(underlying: any Error)
    /// ``NetworkConfiguration/asyncInterceptor`` or a ``NetworkRequestInterceptor`` threw. Nothing was sent.
    case interceptorFailed(underlying: any Error)
    /// The transfer failed: no connection, timeout, connection lost, too many redirects, a malformed response.
    case transportFailed(URLError)
    /// The response is not an HTTP response (possible only with a custom `URLProtocol`).
    case invalidResponse(URLResponse)
    /// The server answered with a status code outside `200..<300`. `data` is the body, as received, so the caller
    /// can decode the server's error payload: never `nil` when Courier's client throws it (an empty body is empty
    /// `Data`). It is optional for the SDKs of MicroClient 0.0.18 and later, which write `guard let data`, and for
    /// test doubles that throw the case without a body.
    case unacceptableStatusCode(statusCode: Int, response: HTTPURLResponse, data: Data?)
    /// The 2xx body could not be decoded into the response model. `underlying` is usually a `DecodingError` whose
    /// coding path names the failing field; `data` is the body, as received.
    case decodingFailed(underlying: any Error, data: Data)
    /// The response body (counted after decompression) is larger than `limit` bytes, the request's or the
    /// configuration's ``NetworkConfiguration/maximumResponseSize``; or, for a stream, one line or event is longer
    /// than the request's ``NetworkRequest/maximumStreamItemSize``. The transfer was stopped when the limit was
    /// passed, or before the body was read when the server declared a larger `Content-Length`. (A reader that falls
    /// too far behind a stream ends it with ``StreamError/readerFellBehind(limit:)`` instead.)
    case responseTooLarge(limit: Int)
    /// The server redirected to a place Courier will not follow: a `Location` whose scheme is not `http` or `https`,
    /// or a 307/308 redirect of a request whose body cannot be sent again. The request was sent; the redirect was not.
    case redirectRefused(reason: String)
    /// A file the request needs cannot be used: a ``FileUpload`` or ``MultipartFormData`` file that does not exist,
    /// cannot be read or is not a regular file (nothing was sent); a ``FileUpload`` whose file changed size while it
    /// was sent (never more than its `Content-Length` went out, and the body was not completed); or a download that
    /// cannot be written or moved to its destination (a folder, a symbolic link, a partial file replaced meanwhile).
    case fileAccessFailed(url: URL, reason: String)
}

extension NetworkClientError: LocalizedError, CustomStringConvertible {
    /// A human-readable description, safe to log: it never contains header values or query values.
    public var description: String {
        switch self {
        case .invalidURL(let reason):
            return "Invalid request URL: \(reason)."
        case .invalidHeader(let name, let reason):
            return "Invalid header \(String(reflecting: name)): \(reason)."
        case .invalidRequest(let reason):
            return "Invalid request: \(reason)."
        case .encodingFailed(let underlying):
            // Not the error itself: EncodingError.invalidValue prints the value, which may be a secret.
            guard case EncodingError.invalidValue(_, let context) = underlying else {
                return "The request body could not be encoded: \(type(of: underlying))."
            }
            return "The request body could not be encoded: invalid value at \(Redaction.path(context.codingPath))."
        case .interceptorFailed(let underlying):
            return "The request interceptor failed with \(type(of: underlying)) (see `underlying`)."
        case .transportFailed(let error):
            let url = (error.userInfo[NSURLErrorFailingURLErrorKey] as? URL).map { " for \(Redaction.url($0))" } ?? ""
            // corelibs puts libcurl's own explanation ("transfer closed with 92 bytes remaining") in the description.
            let detail = (error.userInfo[NSLocalizedDescriptionKey] as? String).map { ": \($0)" } ?? ""
            return
                "The transfer failed\(url): \(Redaction.describe(error.code)) (URLError \(error.code.rawValue)\(detail))."
        case .invalidResponse(let response):
            return "The response is not an HTTP response: \(type(of: response))."
        case .unacceptableStatusCode(let statusCode, let response, let data):
            let reason = HTTPURLResponse.localizedString(forStatusCode: statusCode)
            let url = response.url.map { " from \($0.absoluteString.isEmpty ? "?" : Redaction.url($0))" } ?? ""
            let body = data.map { "body of \($0.count) bytes" } ?? "no body"
            return "Unacceptable status code \(statusCode) (\(reason))\(url), \(body)."
        case .decodingFailed(let underlying, let data):
            if data.isEmpty { return "The response could not be decoded: the body is empty." }
            // Foundation's explanations end with a period of their own.
            var detail = Redaction.describe(underlying)
            while detail.hasSuffix(".") { detail.removeLast() }
            return "The response could not be decoded (body of \(data.count) bytes): \(detail)."
        case .responseTooLarge(let limit):
            return
                "The response body is larger than the limit of \(limit) bytes (maximumResponseSize; for a stream, "
                + "maximumStreamItemSize, the longest line or event); the transfer was stopped."
        case .redirectRefused(let reason):
            return "The redirect was not followed: \(reason)."
        case .fileAccessFailed(let url, let reason):
            return "The file \(String(reflecting: url.path)) cannot be used: \(reason)."
        }
    }

    /// The same text as ``description``.
    public var errorDescription: String? { description }
}
