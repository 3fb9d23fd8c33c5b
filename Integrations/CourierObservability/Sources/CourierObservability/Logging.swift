import Courier
import Foundation
import Logging

extension NetworkClientProtocol {
    /// Wraps this client so that every request is logged to `logger` (swift-log), secrets redacted as
    /// `logged(level:redacting:maximumBodyLength:to:)` redacts them (this is that decorator, with a sink that writes to
    /// `logger`): one message per request (two for a stream: its opening and its end), its parts as metadata.
    ///
    /// The message is the entry's one-line text (`GET https://api.example.com/v1/posts -> 200, 12 ms, 345 bytes`).
    /// The metadata: `http.method`, `http.url` (user info and the named query values redacted), `http.status`,
    /// `duration_ms`, `response_bytes`, `error` (the error's case, never its text) and `tag` when there are any; when
    /// `logger` writes `.debug`, also `request.headers` and `response.headers` (values redacted) and the
    /// bounded, redacted `request.body` and `response.body`.
    ///
    /// Levels: a request that succeeded logs at `.debug` when `logger` writes `.debug` or lower, `.info` otherwise; a
    /// `4xx` status at `.warning`; another failure at `.error`; a cancelled call at `.notice`. `logger`'s level is read
    /// once, here.
    ///
    /// - Parameters:
    ///   - logger: The swift-log logger.
    ///   - redaction: What to redact besides what always is; `LogRedaction()` by default.
    /// - Returns: A client that logs every request of this one.
    public func logged(to logger: Logger, redacting redaction: LogRedaction = LogRedaction())
        -> some NetworkClientProtocol
    {
        let level: LogLevel = logger.logLevel <= .debug ? .debug : .info
        return logged(level: level, redacting: redaction) { entry in
            logger.log(
                level: SwiftLogBridge.level(of: entry), "\(entry.summary)", metadata: SwiftLogBridge.metadata(of: entry)
            )
        }
    }
}

/// How a ``LogEntry`` becomes a swift-log message.
enum SwiftLogBridge {
    static func level(of entry: LogEntry) -> Logger.Level {
        guard let error = entry.error else { return entry.level == .debug ? .debug : .info }
        if error is CancellationError { return .notice }
        if let status = entry.statusCode, (400..<500).contains(status) { return .warning }
        return .error
    }

    static func metadata(of entry: LogEntry) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "http.method": .string(entry.method.rawValue),
            "http.url": .string(entry.url),
            "duration_ms": .stringConvertible(entry.milliseconds),
        ]
        if let status = entry.statusCode { metadata["http.status"] = .stringConvertible(status) }
        if let size = entry.responseSize { metadata["response_bytes"] = .stringConvertible(size) }
        if let errorCase = entry.errorCase { metadata["error"] = .string(errorCase) }
        if let tag = entry.tag { metadata["tag"] = .string(tag) }
        guard entry.level == .debug else { return metadata }
        if !entry.requestHeaders.isEmpty {
            metadata["request.headers"] = .dictionary(
                Dictionary(entry.requestHeaders.map { ($0.name, .string($0.value)) }, uniquingKeysWith: { $1 }))
        }
        if !entry.responseHeaders.isEmpty {
            metadata["response.headers"] = .dictionary(
                Dictionary(entry.responseHeaders.map { ($0.name, .string($0.value)) }, uniquingKeysWith: { $1 }))
        }
        if let body = entry.requestBody { metadata["request.body"] = .string(body) }
        if let body = entry.responseBody { metadata["response.body"] = .string(body) }
        return metadata
    }
}

extension LogEntry {
    /// The entry's first line (the description at ``LogLevel/info``): the headers and bodies go to the metadata.
    var summary: String {
        let text = description
        return text.firstIndex(of: "\n").map { String(text[..<$0]) } ?? text
    }
}
