import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What ``NetworkClientProtocol/logged(level:redacting:maximumBodyLength:to:)`` hands its sink for one request: the parts as properties, and the formatted text as
/// ``description``. Every value in it is already redacted.
///
/// At ``LogLevel/info`` the description is one line:
///
/// ```text
/// GET https://api.example.com/v1/posts?page=2&api_key=<redacted> -> 200, 12 ms, 345 bytes
/// POST https://api.example.com/v1/posts -> 503, 8 ms, 17 bytes, error: unacceptableStatusCode(503)
/// GET https://api.example.com/v1/posts -> failed, 10003 ms, error: transportFailed(timedOut)
/// GET https://api.example.com/v1/posts/7 -> 200, 0 ms, 120 bytes, cache: fresh
/// ```
///
/// At ``LogLevel/debug`` it is followed by one line per request header (`  > Name: value`), the request body
/// (`  > body: …`), one line per response header (`  < Name: value`) and the response body (`  < body: …`).
/// The entry is built cheaply; the text is formatted only when ``description`` or ``url`` is read.
public struct LogEntry: Sendable, CustomStringConvertible {
    /// The level of the logger that made the entry.
    public let level: LogLevel
    /// The request method.
    public let method: HTTPMethod
    /// The response status code; `nil` when no response arrived.
    public let statusCode: Int?
    /// The time from calling the wrapped client to its outcome, in seconds.
    public let duration: TimeInterval
    /// The size of the response body in bytes; `nil` when no response body arrived.
    public let responseSize: Int?
    /// The error the request failed with, unchanged; `nil` on success. ``errorCase`` names it safely for logs.
    public let error: (any Error)?
    /// The request header fields as the client at the bottom of the stack sent them (after the interceptors and the
    /// credential; URLSession's own fields such as `Host` are not included), values redacted, sorted by name; the
    /// request's `additionalHeaders` when that client reported nothing (a test double); empty below
    /// ``LogLevel/debug``.
    public let requestHeaders: [(name: String, value: String)]
    /// The response header fields, values redacted, sorted by name; empty below ``LogLevel/debug``.
    public let responseHeaders: [(name: String, value: String)]
    /// A bounded prefix of the request body as text, named fields redacted, or a placeholder for binary data; `nil`
    /// below ``LogLevel/debug`` or without a body.
    public let requestBody: String?
    /// A bounded prefix of the response body as text, named fields redacted, or a placeholder for binary data;
    /// `nil` below ``LogLevel/debug`` or without a body.
    public let responseBody: String?

    /// The request's ``RequestOptions/tag``, written first in ``description`` as `[tag]`; `nil` when it has none.
    public let tag: String?

    let redactor: LogRedactor
    let base: LogRedactor.LoggedBase?
    let path: String?
    let queryItems: [URLQueryItem]?

    /// What the call cost (``RequestMetrics``): the response's metrics, or the error's
    /// (``NetworkClientError/metrics``); `nil` for a failure that has none. For a stream, those of its opening.
    public let metrics: RequestMetrics?

    /// For a streamed response (``ServerSentEvents``, ``JSONLines``, ``ByteStream``), which of its two entries this
    /// is: ``StreamLogPhase/opened`` when `run` returned at the head,
    /// ``StreamLogPhase/ended(items:reconnections:endedByReader:)`` when the sequence
    /// ended (``duration`` then runs to the end, ``responseSize`` counts every body byte and ``error`` is what ended
    /// it); `nil` for any other response.
    public internal(set) var stream: StreamLogPhase? = nil

    /// Where the response came from when the configuration has a ``ResponseCache``: written in ``description`` as
    /// `cache: fresh` (or `revalidated`, …) unless it is ``CacheStatus/network``, the default and the value of every
    /// failed call.
    public internal(set) var cacheStatus: CacheStatus = .network

    /// The request URL, user info and the named query values redacted.
    public var url: String {
        redactor.url(base: base, path: path, queryItems: queryItems)
    }

    /// The duration in whole milliseconds, rounded.
    public var milliseconds: Int {
        Int((duration * 1_000).rounded())
    }

    /// The failure's case, safe to log: `unacceptableStatusCode(503)`, `transportFailed(timedOut)`,
    /// `decodingFailed`, `cancelled`, or the error's type name for errors that are not Courier's; `nil` on success.
    public var errorCase: String? {
        error.map(Self.errorCase)
    }

    /// The formatted entry: one line at ``LogLevel/info``, more lines at ``LogLevel/debug``.
    public var description: String {
        var line = UTF8Text(
            capacity: 64 + (tag?.utf8.count ?? 0)
                + LogRedactor.urlCapacity(base: base, path: path, queryItems: queryItems))
        if let tag {
            line.append(byte: UInt8(ascii: "["))
            line.append(tag.escapedForLog)
            line.append("] ")
        }
        line.append(method.rawValue)
        line.append(byte: UInt8(ascii: " "))
        redactor.appendURL(base: base, path: path, queryItems: queryItems, to: &line)
        line.append(" -> ")
        if let statusCode { line.append(statusCode) } else { line.append("failed") }
        line.append(", ")
        if case .ended = stream { line.append("stream ended after ") }
        line.append(milliseconds)
        line.append(" ms")
        switch stream {
        case nil: break
        case .opened: line.append(", stream opened")
        case .ended(let items, let reconnections, let endedByReader):
            line.append(", ")
            line.append(items)
            line.append(" items")
            if reconnections > 0 {
                line.append(", ")
                line.append(reconnections)
                line.append(" reconnections")
            }
            if endedByReader { line.append(", stopped by the reader") }
        }
        if let responseSize {
            line.append(", ")
            line.append(responseSize)
            line.append(" bytes")
        }
        if cacheStatus != .network {
            line.append(", cache: ")
            line.append(cacheStatus.description)
        }
        if let errorCase {
            line.append(", error: ")
            line.append(errorCase)
        }
        let text = line.string
        guard level == .debug else { return text }
        var lines = [text]
        lines += redactor.headerLines(requestHeaders, prefix: "  > ")
        if let requestBody { lines.append("  > body: \(requestBody)") }
        lines += redactor.headerLines(responseHeaders, prefix: "  < ")
        if let responseBody { lines.append("  < body: \(responseBody)") }
        return lines.joined(separator: "\n")
    }

    static func errorCase(_ error: any Error) -> String {
        if error is CancellationError { return "cancelled" }
        if let error = error as? AuthenticationError {
            switch error {
            case .tooManyRefreshes: return "tooManyRefreshes"
            }
        }
        if let error = error as? StreamError {
            switch error {
            case .readerFellBehind(let limit): return "readerFellBehind(\(limit))"
            case .gaveUpReconnecting(let attempts): return "gaveUpReconnecting(\(attempts))"
            }
        }
        guard let error = error as? NetworkClientError else { return String(describing: type(of: error)) }
        switch error {
        case .invalidURL: return "invalidURL"
        case .invalidHeader(let name, _): return "invalidHeader(\(name.escapedForLog))"
        case .invalidRequest: return "invalidRequest"
        case .encodingFailed: return "encodingFailed"
        case .interceptorFailed: return "interceptorFailed"
        case .transportFailed(let urlError): return "transportFailed(\(urlErrorName(urlError.code)))"
        case .invalidResponse: return "invalidResponse"
        case .unacceptableStatusCode(let status, _, _): return "unacceptableStatusCode(\(status))"
        case .decodingFailed: return "decodingFailed"
        case .responseTooLarge(let limit): return "responseTooLarge(\(limit))"
        case .redirectRefused: return "redirectRefused"
        case .fileAccessFailed: return "fileAccessFailed"
        }
    }

    private static func urlErrorName(_ code: URLError.Code) -> String {
        switch code {
        case .timedOut: return "timedOut"
        case .cannotConnectToHost: return "cannotConnectToHost"
        case .networkConnectionLost: return "networkConnectionLost"
        case .notConnectedToInternet: return "notConnectedToInternet"
        case .cannotFindHost: return "cannotFindHost"
        case .dnsLookupFailed: return "dnsLookupFailed"
        case .httpTooManyRedirects: return "httpTooManyRedirects"
        case .badServerResponse: return "badServerResponse"
        case .cancelled: return "cancelled"
        case .secureConnectionFailed: return "secureConnectionFailed"
        case .serverCertificateUntrusted: return "serverCertificateUntrusted"
        case .serverCertificateHasBadDate: return "serverCertificateHasBadDate"
        case .clientCertificateRequired: return "clientCertificateRequired"
        default: return "URLError \(code.rawValue)"
        }
    }
}

/// Which of a streamed response's two log entries a ``LogEntry`` is.
public enum StreamLogPhase: Sendable, Hashable {
    /// `run` returned at the head: the stream opened. The entry's ``LogEntry/duration`` is the time to the head.
    case opened
    /// The sequence ended: cleanly, with an error (the entry's ``LogEntry/error``), or because the reader stopped.
    /// The entry's ``LogEntry/duration`` runs from the call to the end and its ``LogEntry/responseSize`` counts the
    /// body bytes of every connection.
    /// - Parameters:
    ///   - items: The items the reader took: events, lines or chunks.
    ///   - reconnections: The connections opened again after the first (``StreamReconnection``); `0` without.
    ///   - endedByReader: Whether the reader stopped before the end: it broke out of its loop, dropped the sequence
    ///     or was cancelled.
    case ended(items: Int, reconnections: Int, endedByReader: Bool)
}
