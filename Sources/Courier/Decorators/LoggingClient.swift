import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A decorator that hands a ``LogEntry`` to a sink after every request, with secrets redacted at every level.
///
/// At ``LogLevel/info``, one line per request: method, URL, status, duration in milliseconds, response size, and the
/// error case on failure. ``LogLevel/debug`` adds the request and response headers and a bounded prefix
/// (``maximumBodyLength``, 1,024 bytes by default) of text bodies; binary bodies are written as their size.
///
/// Always redacted (written `<redacted>`): the `Authorization`, `Proxy-Authorization`, `Cookie` and `Set-Cookie`
/// headers, the configuration's ``NetworkConfiguration/sensitiveHeaders``, the fields of an ``Authenticator``'s
/// credential, URL user info, a bare query name (`?abc123`, which may be a token), the headers, query parameters and
/// JSON or form body fields named by the ``LogRedaction`` or containing one of its
/// ``LogRedaction/nameFragments`` (`*password*`, `*secret*`, `*token*`, `*apikey*`), and, in bodies, any value of
/// those the request carried, also JSON-escaped or percent-encoded (a server that echoes a token).
///
/// This holds wherever the logger sits in a stack of decorators, including decorators you write: the client at the
/// bottom of the stack reports what it sent (the final headers and body, and which header names are secrets) in a
/// ``SendReport`` to the logger, which asks for it as any decorator can (``NetworkClientProtocol/runReporting(_:)``),
/// so the logger never has to find the configuration. A request the bottom client did not report (a test double of your own, or a call cancelled before it
/// was sent) is logged from the request itself, and then only the values of headers that are never secrets
/// (`Accept`, `Content-Type`, `User-Agent` and the like) are shown: the configuration's sensitive names are not known.
///
/// Courier takes no logging dependency: forward entries to swift-log or `os.Logger` in the sink:
///
/// ```swift
/// let logger = Logger(label: "api")  // swift-log
/// let client = NetworkClient(configuration: configuration).logged(level: .info) { entry in
///     logger.log(level: entry.error == nil ? .info : .error, "\(entry)")
/// }
/// ```
///
/// The decorator behind ``NetworkClientProtocol/logged(level:redacting:maximumBodyLength:to:)``.
final class LoggingDecorator: NetworkClientProtocol {
    /// The client that runs the requests.
    public let wrapped: any NetworkClientProtocol
    /// How much is written.
    public let level: LogLevel
    /// What is redacted besides what always is.
    public let redaction: LogRedaction
    /// The most bytes of a body shown at ``LogLevel/debug``; 1,024 by default.
    public let maximumBodyLength: Int
    /// Called with the entry of every request, on the caller's task, after the request ended.
    public let sink: @Sendable (LogEntry) -> Void

    private let redactor: LogRedactor
    /// The last base URL logged, redacted once: a client's requests nearly always share one.
    private let lastBase = Locked<(key: ObjectIdentifier, prefix: Substring, logged: LogRedactor.LoggedBase)?>(nil)
    /// Nanoseconds on a monotonic clock; injected by tests.
    private let now: @Sendable () -> UInt64

    /// Creates a logging client.
    /// - Parameters:
    ///   - client: The client that runs the requests.
    ///   - level: How much to write; ``LogLevel/info`` by default.
    ///   - redaction: What to redact besides what always is; `LogRedaction()` by default (common secret names and
    ///     fragments in headers, queries and bodies).
    ///   - maximumBodyLength: The most bytes of a body shown at ``LogLevel/debug``; 1,024 by default.
    ///   - sink: Called with each entry.
    public convenience init(
        wrapping client: any NetworkClientProtocol, level: LogLevel = .info, redaction: LogRedaction = LogRedaction(),
        maximumBodyLength: Int = 1_024, sink: @escaping @Sendable (LogEntry) -> Void
    ) {
        self.init(
            wrapping: client, level: level, redaction: redaction, maximumBodyLength: maximumBodyLength,
            now: { DispatchTime.now().uptimeNanoseconds }, sink: sink)
    }

    init(
        wrapping client: any NetworkClientProtocol, level: LogLevel, redaction: LogRedaction, maximumBodyLength: Int,
        now: @escaping @Sendable () -> UInt64, sink: @escaping @Sendable (LogEntry) -> Void
    ) {
        self.wrapped = client
        self.level = level
        self.redaction = redaction
        self.maximumBodyLength = max(0, maximumBodyLength)
        self.sink = sink
        self.now = now
        self.redactor = LogRedactor(redaction, sensitiveHeaders: [])
    }

    /// Runs `networkRequest` through the wrapped client and logs its outcome.
    ///
    /// - Throws: What the wrapped client throws, unchanged.
    public func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        let start = now()
        // What `runReporting` does, without its `Result`: one more generic type the runtime would look up on every
        // call of this unspecialized `run`.
        let recorder = SendRecorder()
        do {
            let response = try await wrapped.run(networkRequest.reporting(to: recorder))
            let report = recorder.lastReport
            let head = response.response as? HTTPURLResponse
            guard let source = ResponseKinds.streamSource(of: response.value) else {
                log(
                    networkRequest, report, start: start, status: response.statusCode, response: head,
                    data: response.data, error: nil, metrics: response.metrics, cacheStatus: response.cacheStatus)
                return response
            }
            // A stream: one entry now that it opened, one when it ends (however it ends, even unread).
            log(
                networkRequest, report, start: start, status: response.statusCode, response: head, data: nil,
                error: nil, metrics: response.metrics, stream: .opened)
            // Never the response itself: it holds the stream, which holds this observer, and a stream nobody keeps
            // must go away (that closes its connection).
            let (status, metrics) = (response.statusCode, response.metrics)
            source.onEnd { [self] summary, error in
                log(
                    networkRequest, report, start: start, status: status, response: nil, data: nil, error: error,
                    metrics: metrics,
                    stream: .ended(
                        items: summary.items, reconnections: summary.reconnections,
                        endedByReader: summary.endedByReader),
                    streamedBytes: summary.bytes)
            }
            return response
        } catch {
            let report = recorder.lastReport
            switch error {
            case NetworkClientError.unacceptableStatusCode(let status, let response, let data):
                log(
                    networkRequest, report, start: start, status: status, response: response, data: data, error: error,
                    metrics: (error as? NetworkClientError)?.metrics)
            case NetworkClientError.decodingFailed(_, let data):
                log(
                    networkRequest, report, start: start, status: nil, response: nil, data: data, error: error,
                    metrics: (error as? NetworkClientError)?.metrics)
            default:
                log(
                    networkRequest, report, start: start, status: nil, response: nil, data: nil, error: error,
                    metrics: (error as? NetworkClientError)?.metrics)
            }
            throw error
        }
    }

    private func log<RequestModel, ResponseModel>(
        _ request: NetworkRequest<RequestModel, ResponseModel>, _ report: SendReport?, start: UInt64, status: Int?,
        response: HTTPURLResponse?, data: Data?, error: (any Error)?, metrics: RequestMetrics?,
        stream: StreamLogPhase? = nil, streamedBytes: Int64? = nil, cacheStatus: CacheStatus = .network
    ) {
        let end = now()
        let duration = TimeInterval(end >= start ? end - start : 0) / 1e9
        // Header names matter only at debug, where headers are written.
        // Without a report (a call that ended before it was sent, or a test double of your own at the bottom) the
        // configuration's sensitive names are unknown: only header values known to be harmless are shown.
        var redactor = self.redactor
        if level == .debug {
            redactor =
                report.map { redactor.adding(sensitiveHeaders: $0.sensitiveHeaders) }
                ?? redactor.showingOnlyHarmlessHeaders()
            if let scope = request.credentialScope { redactor = redactor.adding(sensitiveHeaders: scope.headerNames) }
        }
        var requestHeaders: [(name: String, value: String)] = []
        var responseHeaders: [(name: String, value: String)] = []
        var requestBody: String?
        var responseBody: String?
        if level == .debug {
            let sentHeaders = report?.headers ?? request.additionalHeaders ?? [:]
            requestHeaders = redacted(sentHeaders.map { ($0.key, $0.value) }, redactor)
            responseHeaders = redacted(
                response?.allHeaderFields.map { ("\($0.key)", "\($0.value)") } ?? [], redactor)
            let secrets = redactor.secrets(
                headers: sentHeaders, queryItems: request.queryItems, formItems: request.formItems)
            if let placeholder = BodyKinds.kind(of: request)?.logPlaceholder {
                // Streamed from files when sent: never read into memory for a log line.
                requestBody = placeholder
            } else {
                requestBody = (report?.body ?? self.requestBody(request)).flatMap {
                    redactor.body($0, limit: maximumBodyLength, scrubbing: secrets)
                }
            }
            responseBody =
                stream == .opened
                ? ResponseKinds.logPlaceholder(of: ResponseModel.self)
                : data.flatMap { redactor.body($0, limit: maximumBodyLength, scrubbing: secrets) }
        }
        let responseSize = streamedBytes.map { Int(clamping: $0) } ?? data?.count
        sink(
            LogEntry(
                level: level, method: request.method, statusCode: status, duration: duration,
                responseSize: responseSize, error: error, requestHeaders: requestHeaders,
                responseHeaders: responseHeaders, requestBody: requestBody, responseBody: responseBody,
                tag: request.options.tag, redactor: redactor,
                base: loggedBase(report, request, redactor),
                path: request.path, queryItems: request.queryItems, metrics: metrics, stream: stream,
                cacheStatus: cacheStatus))
    }

    /// The base URL as logged, redacted: a configuration's is redacted once and kept, since a client's requests
    /// nearly always share one.
    private func loggedBase<RequestModel, ResponseModel>(
        _ report: SendReport?, _ request: NetworkRequest<RequestModel, ResponseModel>, _ redactor: LogRedactor
    ) -> LogRedactor.LoggedBase? {
        guard let base = report?.base ?? request.baseURL.map(BaseURL.init) else { return nil }
        guard let key = report?.baseKey else { return redactor.loggedBase(base) }
        // The key alone could be a freed configuration's reused address: the base URL's text must match too.
        if let last = lastBase.withLock({ $0 }), last.key == key, last.prefix == base.prefixAsGiven {
            return last.logged
        }
        let logged = redactor.loggedBase(base)
        lastBase.withLock { $0 = (key, base.prefixAsGiven, logged) }
        return logged
    }

    private func redacted(_ fields: [(String, String)], _ redactor: LogRedactor) -> [(name: String, value: String)] {
        fields.map { (name: $0.0, value: redactor.header(name: $0.0, value: $0.1)) }
            .sorted { $0.name.lowercased() < $1.name.lowercased() }
    }

    /// The body as the client would send it, re-encoded for the log (debug only, when the client at the bottom did
    /// not report what it sent).
    private func requestBody<RequestModel, ResponseModel>(
        _ request: NetworkRequest<RequestModel, ResponseModel>
    ) -> Data? {
        if let formItems = request.formItems { return FormEncoding.body(formItems) }
        return try? BodyKinds.kind(of: request)?.bytesInMemory(with: request.encoder ?? JSONEncoder())
    }
}

extension NetworkClientProtocol {
    /// Wraps this client so that every request hands a ``LogEntry`` to `sink` when it ends, secrets redacted at every
    /// level and in every decorator order: the one way to log Courier's requests.
    ///
    /// At ``LogLevel/info`` an entry is one line: method, URL, status, duration, response size, the error case on
    /// failure, and where a response came from when a ``ResponseCache`` answered it:
    ///
    /// ```text
    /// GET https://api.example.com/v1/posts?page=2&api_key=<redacted> -> 200, 12 ms, 345 bytes
    /// GET https://api.example.com/v1/posts/7 -> 200, 0 ms, 120 bytes, cache: fresh
    /// DELETE https://api.example.com/v1/posts/7 -> 503, 9 ms, 17 bytes, error: unacceptableStatusCode(503)
    /// ```
    ///
    /// ``LogLevel/debug`` adds the request headers as sent (after the interceptors and the credential), the response
    /// headers, and the first `maximumBodyLength` bytes of text bodies; binary bodies are written as their size.
    ///
    /// - **One entry per call, two per stream.** A streamed response (``ServerSentEvents``, ``JSONLines``,
    ///   ``ByteStream``) writes one entry when `run` returns at its head (``LogEntry/stream`` is
    ///   ``StreamLogPhase/opened``) and one when the sequence ends
    ///   (``StreamLogPhase/ended(items:reconnections:endedByReader:)``, with the items read; its
    ///   ``LogEntry/responseSize`` counts the bytes): to count calls, leave out the entries whose `stream` is `.ended`.
    /// - **Redacted**, at every level: `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`, the
    ///   configuration's ``NetworkConfiguration/sensitiveHeaders``, the authenticator's credential, URL user info, a
    ///   bare query name, and the headers, query parameters and JSON or form body fields that `redaction` names or
    ///   whose name contains one of its ``LogRedaction/nameFragments``; in bodies, any value of those the request
    ///   carried, also JSON-escaped or percent-encoded.
    /// - **Wherever it sits.** The client at the bottom of the stack reports what it sent to the loggers above it, so
    ///   the rules hold in every order, your own decorators included. Over a test double of your own, which reports
    ///   nothing, only header values known to be harmless (`Accept`, `Content-Type`, …) are shown.
    ///
    /// Courier takes no logging dependency: forward entries to swift-log or `os.Logger` in the sink, or use
    /// `logged(to:)` of the `CourierObservability` integration. See <doc:Resilience>.
    /// - Parameters:
    ///   - level: How much to write; ``LogLevel/info`` (one line per request) by default.
    ///   - redaction: What to redact besides what always is; `LogRedaction()` by default (common secret names and
    ///     fragments in headers, queries and bodies).
    ///   - maximumBodyLength: The most bytes of a body shown at ``LogLevel/debug``; 1,024 by default. Negative values
    ///     count as 0.
    ///   - sink: Called with each request's ``LogEntry`` after it ended, on the caller's task.
    /// - Returns: A client that logs every request of this one.
    public func logged(
        level: LogLevel = .info, redacting redaction: LogRedaction = LogRedaction(), maximumBodyLength: Int = 1_024,
        to sink: @escaping @Sendable (LogEntry) -> Void
    ) -> some NetworkClientProtocol {
        LoggingDecorator(
            wrapping: self, level: level, redaction: redaction, maximumBodyLength: maximumBodyLength, sink: sink)
    }
}
