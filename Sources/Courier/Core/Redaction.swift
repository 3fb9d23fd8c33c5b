import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How Courier describes requests, URLs and errors without leaking secrets.
enum Redaction {
    /// The header fields whose values are secrets whatever the configuration says.
    static let alwaysSensitiveHeaders: Set<String> = ["authorization", "cookie", "proxy-authorization"]

    /// What a redacted query value reads.
    static let redacted = "<redacted>"
    private static let redactedInURL = "%3Credacted%3E"

    /// `url` with its user info and fragment dropped and every query value replaced by `<redacted>`
    /// (percent-encoded); a query item without a value is itself replaced, since it may be a bare token.
    static func redactedURL(_ url: URL) -> URL {
        guard url.user != nil || url.password != nil || url.query != nil || url.fragment != nil else { return url }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
            return URL(string: "about:invalid")!
        }
        components.user = nil
        components.password = nil
        components.fragment = nil
        components.percentEncodedQueryItems = components.percentEncodedQueryItems?.map { item in
            item.value == nil
                ? URLQueryItem(name: redactedInURL, value: nil) : URLQueryItem(name: item.name, value: redactedInURL)
        }
        return components.url ?? URL(string: "about:invalid")!
    }

    /// `scheme://host:port/path?name=<redacted>`: ``redactedURL(_:)`` as text.
    static func url(_ url: URL) -> String {
        redactedURL(url).absoluteString.replacingOccurrences(of: redactedInURL, with: redacted)
    }

    /// A `URLError` that keeps the code and libcurl's explanation of `error` but names only the redacted URL:
    /// the one URLSession made carries the full URL, password and query included, in its user info.
    static func urlError(_ error: any Error, url: URL?) -> URLError {
        let urlError = error as? URLError
        var userInfo: [String: Any] = [:]
        if let failing = urlError?.failingURL ?? url {
            let redacted = redactedURL(failing)
            userInfo[NSURLErrorFailingURLErrorKey] = redacted
        }
        if var detail = urlError?.userInfo[NSLocalizedDescriptionKey] as? String {
            if detail == "Out of memory" {
                // What libcurl reports when a response header line is over its 100 KB limit.
                detail =
                    "libcurl gave up with \"Out of memory\", usually a response header larger than its 100 KB limit"
            }
            userInfo[NSLocalizedDescriptionKey] = detail
        } else if urlError == nil {
            // Another engine's error (an HTTPTransport of the caller's): its text may carry anything, so only its type
            // is named. An adapter maps its errors to URLError codes for RetryPolicy to read them.
            userInfo[NSLocalizedDescriptionKey] = "the transport failed with \(type(of: error))"
        }
        let detail = userInfo[NSLocalizedDescriptionKey] as? String
        return URLError(platformErrorCode(urlError?.code ?? .unknown, detail: detail), userInfo: userInfo)
    }

    /// `response`, or a copy whose URL is redacted when it has user info or a query, so that printing an error that
    /// holds it shows no secret.
    static func response(_ response: HTTPURLResponse) -> HTTPURLResponse {
        guard let url = response.url else { return response }
        let redacted = redactedURL(url)
        guard redacted != url else { return response }
        let fields = response.allHeaderFields.reduce(into: [String: String]()) { fields, field in
            if let name = field.key as? String, let value = field.value as? String { fields[name] = value }
        }
        return HTTPURLResponse(
            url: redacted, statusCode: response.statusCode, httpVersion: "HTTP/1.1", headerFields: fields)
            ?? response
    }

    static func describe(_ code: URLError.Code) -> String {
        switch code {
        case .timedOut: return "timed out"
        case .cannotConnectToHost: return "could not connect to the host"
        case .networkConnectionLost: return "the connection was lost"
        case .notConnectedToInternet: return "not connected to the internet"
        case .httpTooManyRedirects: return "too many redirects"
        case .badServerResponse: return "bad server response"
        case .cannotFindHost: return "host not found"
        case .cancelled: return "cancelled"
        case .secureConnectionFailed: return "TLS handshake failed"
        case .serverCertificateUntrusted: return "the server's certificate is not trusted"
        case .serverCertificateHasBadDate: return "the server's certificate has expired or is not yet valid"
        case .clientCertificateRequired: return "the server requires a client certificate"
        default: return "URL loading error"
        }
    }

    /// A coding path spelled out: `items[2].name`, or "the top level".
    static func path(_ codingPath: [any CodingKey]) -> String {
        let text = codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        return text.isEmpty ? "the top level" : String(text.drop { $0 == "." })
    }

    /// A decoding error with its coding path spelled out (`items[2].name`).
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return String(describing: error) }
        switch error {
        case .typeMismatch(let type, let context):
            return "type mismatch at \(path(context.codingPath)): expected \(type). \(context.debugDescription)"
        case .valueNotFound(let type, let context):
            return "missing value at \(path(context.codingPath)): expected \(type). \(context.debugDescription)"
        case .keyNotFound(let key, let context):
            return "missing key \(String(reflecting: key.stringValue)) at \(path(context.codingPath))"
        case .dataCorrupted(let context):
            return "corrupted data at \(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return String(describing: error)
        }
    }
}
