import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Anything that runs a ``NetworkRequest``: ``NetworkClient``, the decorators, and your test doubles.
///
/// SDKs should hand out `any NetworkClientProtocol`, so that apps can wrap it (``deduplicated(sharing:)``,
/// ``sequential(policy:)``) and tests can replace it.
public protocol NetworkClientProtocol: Sendable {
    /// Runs `networkRequest` and returns its decoded response.
    ///
    /// - Throws: ``NetworkClientError`` when the request cannot be built or sent, the status is not acceptable, or
    ///   the body cannot be decoded; `CancellationError` when the calling task is cancelled; and, through decorators
    ///   and test doubles, their own errors, unchanged (for example ``AuthenticationError``).
    func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel>
}

/// The client that sends requests with the ``NetworkConfiguration``'s `URLSession`.
///
/// Each ``run(_:)`` builds the URL once as a string, runs the interceptors, sends with the session on the caller's
/// task (no actor hop, no extra task), checks the status and decodes.
public final class NetworkClient: NetworkClientProtocol {
    /// The configuration every request runs against.
    public let configuration: NetworkConfiguration
    /// What the configuration's adaptation built around this client's pipeline, once, when the client was created
    /// (see ``ClientAdaptation``); `nil`, as for every configuration Courier's own API makes, runs each request on the
    /// pipeline.
    private let adapted: (any NetworkClientProtocol)?

    /// Creates a client.
    /// - Parameter configuration: The session, coders, base URL and interceptors to use.
    public init(configuration: NetworkConfiguration) {
        self.configuration = configuration
        // Around a client of its own on the same configuration: holding this one would be a reference cycle.
        adapted = configuration.currentSettings.adaptation?.client(
            around: Pipeline(client: NetworkClient(configuration: configuration, adapted: nil)))
    }

    private init(configuration: NetworkConfiguration, adapted: (any NetworkClientProtocol)?) {
        self.configuration = configuration
        self.adapted = adapted
    }

    /// Runs `networkRequest`: builds the `URLRequest`, applies the interceptors, sends it, requires an acceptable
    /// status and decodes the body into `ResponseModel`.
    ///
    /// - Throws: ``NetworkClientError`` (see its cases), or `CancellationError` when the calling task is cancelled;
    ///   the transfer is cancelled with it.
    public func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        if let adapted = adapted ?? networkRequest.adaptation?.client(around: Pipeline(client: self)) {
            return try await adapted.run(networkRequest)
        }
        return try await runDirectly(networkRequest)
    }

    /// A client's pipeline alone, without the adaptation around it: it builds, sends and decodes each request once.
    struct Pipeline: NetworkClientProtocol {
        let client: NetworkClient

        func run<RequestModel, ResponseModel>(
            _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
        ) async throws -> NetworkResponse<ResponseModel> {
            try await client.runDirectly(networkRequest)
        }
    }

    /// ``run(_:)`` on the pipeline alone.
    /// - Parameter settings: The settings already read for this call; `nil` reads them.
    func runDirectly<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>, settings: NetworkConfiguration.Settings? = nil
    ) async throws -> NetworkResponse<ResponseModel> {
        try Task.checkCancellation()
        var meter = MetricsMeter()
        let settings = settings ?? configuration.currentSettings
        let facts = ResponseKinds.facts(ResponseModel.self)
        let stream = facts.stream
        // A stream may run for days: only its own total timeout bounds it, not the session's resource timeout.
        let deadline =
            stream == nil
            ? deadline(totalTimeout: networkRequest.totalTimeout) : streamDeadline(networkRequest.totalTimeout)
        let sent = try await send(networkRequest, settings: settings, deadline: deadline, facts: facts, meter: &meter)
        // A download's file exists only for an acceptable status, or a 206 that resumed it; a stream opens only for an
        // acceptable status.
        if let file = sent.sinkValue {
            if let stream, let channel = file as? StreamChannel {
                let value = stream.init(
                    reading: streamSource(
                        channel, head: sent.head, of: networkRequest, kind: stream, deadline: deadline,
                        began: meter.startUptime))
                return NetworkResponse(
                    value: value as! ResponseModel, response: sent.head, data: Data(), metrics: meter.finished())
            }
            return NetworkResponse(
                value: file as! ResponseModel, response: sent.head, data: Data(), metrics: meter.finished(),
                cacheStatus: sent.cacheStatus)
        }
        guard ResponseKinds.accepts(sent.head.statusCode, sent.accepted) else {
            throw Self.unacceptable(sent, meter)
        }
        let value = try ResponseKinds.decode(
            ResponseModel.self, kind: facts.kind, from: sent.body,
            with: networkRequest.decoder ?? configuration.defaultDecoder)
        return NetworkResponse(
            value: value, response: sent.head, data: sent.body, metrics: meter.finished(),
            cacheStatus: sent.cacheStatus)
    }

    /// What ``send(_:settings:deadline:meter:)`` returns: the final response of one call, before its value is made.
    struct Sent {
        let head: HTTPURLResponse
        let body: Data
        /// What the body's sink produced: a download's ``DownloadedFile``, or an opened stream's ``StreamChannel``.
        let sinkValue: (any Sendable)?
        let cacheStatus: CacheStatus
        /// The statuses that count as success for the request.
        let accepted: Set<Int>?
    }

    /// Builds `networkRequest`, runs the interceptors, applies the credential's scope, reports what goes out to the
    /// request's recorders (``SendReport``), and sends it hop by hop (``send(_:rules:meter:sink:)``).
    ///
    /// - Throws: ``NetworkClientError`` or `CancellationError`, as ``run(_:)``.
    func send<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>, settings: NetworkConfiguration.Settings,
        deadline: DispatchTime?, facts: ResponseKinds.Facts, meter: inout MetricsMeter
    ) async throws -> Sent {
        let prepared: PreparedRequest
        do {
            prepared = try RequestPreparation.prepare(
                networkRequest, configuration: configuration, accept: facts.accept)
        } catch {
            if networkRequest.wantsSendReport { report(nil, of: networkRequest, credentialWithheld: false) }
            // Staging a multipart body stops when the caller cancels: that is a cancellation, not a file error.
            if Task.isCancelled { throw CancellationError() }
            throw error
        }
        defer { if prepared.uploadFileIsStaged, let file = prepared.uploadFile { Self.remove(file) } }
        var request = prepared.urlRequest
        do {
            request = try await intercepted(
                request, settings, interceptors: networkRequest.interceptors ?? settings.interceptors)
            // The async interceptor may have suspended: a caller cancelled meanwhile must not send anything.
            try Task.checkCancellation()
        } catch {
            if networkRequest.wantsSendReport { report(nil, of: networkRequest, credentialWithheld: false) }
            throw error
        }
        // Without a base URL override or an interceptor, the request goes to the configured origin: nothing to check.
        let mayLeaveOrigin =
            networkRequest.baseURL != nil || settings.interceptor != nil || settings.asyncInterceptor != nil
            || !(networkRequest.interceptors ?? settings.interceptors).isEmpty
        let credentialWithheld =
            mayLeaveOrigin ? keepCredential(networkRequest.credentialScope, to: &request) : false
        if let replaced = networkRequest.replacedFrom {
            keepSecrets(continuing: replaced, credential: networkRequest.credentialScope, in: &request)
        }
        if networkRequest.wantsSendReport {
            report(request, of: networkRequest, credentialWithheld: credentialWithheld)
        }
        let accepted = networkRequest.acceptableStatusCodes ?? settings.acceptableStatusCodes
        var sensitive = configuration.sensitiveHeaders
        if let scope = networkRequest.credentialScope { sensitive.formUnion(scope.headerNames) }
        let body: HTTPRequestBody
        if let file = prepared.uploadFile {
            body = try HTTPRequestBody.measuring(file)
        } else {
            body = request.httpBody.map { .data($0) } ?? .none
        }
        let destination = networkRequest.downloadDestination
        let kind = facts.kind
        do {
            let (head, data, sinkValue, cacheStatus) = try await send(
                OutgoingRequest(request: request, body: body),
                rules: SendingRules(
                    limit: networkRequest.maximumResponseSize ?? settings.maximumResponseSize,
                    deadline: deadline, sensitiveHeaders: sensitive,
                    onProgress: networkRequest.onProgress, cache: facts.stream == nil ? settings.responseCache : nil),
                meter: &meter,
                sink: { [serial = configuration.serial] request, first in
                    kind?.sink(
                        request: &request, first: first, destination: destination, acceptable: accepted,
                        scope: serial)
                })
            return Sent(
                head: head, body: data, sinkValue: sinkValue, cacheStatus: cacheStatus, accepted: accepted)
        } catch NetworkClientError.transportFailed(let failure) {
            throw NetworkClientError.transportFailed(RequestMetrics.attach(meter.finished(), to: failure))
        }
    }

    /// The error of a status that is not acceptable, with the response's body and the call's metrics.
    private static func unacceptable(_ sent: Sent, _ meter: MetricsMeter) -> NetworkClientError {
        .unacceptableStatusCode(
            statusCode: sent.head.statusCode,
            response: RequestMetrics.attach(meter.finished(), to: Redaction.response(sent.head)), data: sent.body)
    }

    /// What reads an opened stream: its first connection, the request's limits, and (for a `GET` of a kind that
    /// reconnects, with a ``StreamReconnection``) how to open it again with `Last-Event-ID`, through this client,
    /// interceptors included, under the same deadline.
    private func streamSource<RequestModel, ResponseModel>(
        _ channel: StreamChannel, head: HTTPURLResponse, of networkRequest: NetworkRequest<RequestModel, ResponseModel>,
        kind: any StreamResponseKind.Type, deadline: DispatchTime?, began: UInt64
    ) -> StreamSource {
        let reconnection = kind.reconnects && networkRequest.method == .get ? networkRequest.reconnection : nil
        var reopen: StreamSource.Reopen?
        if reconnection != nil {
            reopen = { [self] (lastEventID: String?) async throws -> StreamSource.Connection in
                try await reopenStream(networkRequest, lastEventID: lastEventID, deadline: deadline)
            }
        }
        return StreamSource(
            connection: channel, status: head.statusCode,
            maximumItemSize: networkRequest.maximumStreamItemSize ?? NetworkConfiguration.defaultMaximumStreamItemSize,
            decoder: networkRequest.decoder ?? configuration.defaultDecoder, began: began,
            reconnection: reconnection, deadline: deadline, reopen: reopen)
    }

    /// Removes an ``AuthenticatingClient``'s credential from `request` unless it goes to the configured base URL's
    /// origin or one the authenticating client names: this client is the one that knows the configured base URL,
    /// whatever decorators sit above it. Returns whether the credential was removed.
    private func keepCredential(_ scope: CredentialScope?, to request: inout URLRequest) -> Bool {
        guard let scope, !scope.allows(request.url.flatMap(Origin.of), configured: configuration.base.origin) else {
            return false
        }
        for name in (request.allHTTPHeaderFields ?? [:]).keys where scope.covers(name) {
            request.setValue(nil, forHTTPHeaderField: name)
        }
        return true
    }

    /// A request that continues another one on another origin (``NetworkRequest/replacingURL(with:)``: a next page)
    /// goes there as a cross-origin redirect would: without the configuration's sensitive header fields, whoever set
    /// them (the request, an interceptor). The credential's own fields are ``keepCredential(_:to:)``'s, which already
    /// kept them to the origins the credential names.
    private func keepSecrets(
        continuing replaced: ReplacedOrigin, credential: CredentialScope?, in request: inout URLRequest
    ) {
        var sensitive = configuration.sensitiveHeaders
        if let credential { sensitive.subtract(credential.headerNames) }
        for name in Redirects.withheldHeaders(
            among: (request.allHTTPHeaderFields ?? [:]).keys, sensitiveHeaders: sensitive,
            from: replaced.resolved(configured: configuration.base.origin), to: request.url)
        {
            request.setValue(nil, forHTTPHeaderField: name)
        }
    }

    /// Reports what is about to be sent to the request's recorders (see ``SendReport``); `request` is `nil` when the
    /// request failed before it could be built or intercepted, and then the request's own headers are told.
    private func report<RequestModel, ResponseModel>(
        _ request: URLRequest?, of networkRequest: NetworkRequest<RequestModel, ResponseModel>,
        credentialWithheld: Bool
    ) {
        networkRequest.report(
            SendReport(
                request: request, headers: request == nil ? networkRequest.additionalHeaders ?? [:] : nil,
                configuredSensitiveHeaders: configuration.sensitiveHeaders,
                credentialHeaders: networkRequest.credentialScope?.headerNames ?? [],
                base: networkRequest.baseURL.map(BaseURL.init) ?? configuration.base,
                baseKey: networkRequest.baseURL == nil ? ObjectIdentifier(configuration) : nil,
                credentialWithheld: credentialWithheld))
    }

    /// Removes a temporary file Courier made.
    private static func remove(_ file: URL) {
        try? FileManager.default.removeItem(at: file)
    }

    private func intercepted(
        _ request: URLRequest, _ settings: NetworkConfiguration.Settings,
        interceptors: [any NetworkRequestInterceptor]
    ) async throws -> URLRequest {
        guard settings.interceptor != nil || settings.asyncInterceptor != nil || !interceptors.isEmpty else {
            return request
        }
        var request = settings.interceptor?(request) ?? request
        do {
            if let asyncInterceptor = settings.asyncInterceptor {
                request = try await asyncInterceptor(request)
            }
            // Then the interceptor values (NetworkConfiguration.interceptors, or the request's own), in order.
            for interceptor in interceptors {
                request = try await interceptor.intercept(request)
            }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw NetworkClientError.interceptorFailed(underlying: error)
        }
        // Interceptors may set any method and add any header: hold them to the same rules as the request's own.
        try HeaderValidation.validate(method: request.httpMethod ?? "GET")
        try HeaderValidation.validate(request.allHTTPHeaderFields ?? [:])
        return request
    }

    /// Sends `networkRequest` again for a stream that reconnects, with `Last-Event-ID: lastEventID` when given, and
    /// returns its new connection.
    ///
    /// - Throws: What ``run(_:)`` throws for the opening, ``NetworkClientError/unacceptableStatusCode(statusCode:response:data:)``
    ///   included.
    private func reopenStream<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>, lastEventID: String?, deadline: DispatchTime?
    ) async throws -> StreamSource.Connection {
        var again = networkRequest
        if let lastEventID {
            var headers = again.additionalHeaders ?? [:]
            for name in headers.keys where name.lowercased() == "last-event-id" { headers[name] = nil }
            headers["Last-Event-ID"] = lastEventID
            again.additionalHeaders = headers
        }
        var meter = MetricsMeter()
        let sent = try await send(
            again, settings: configuration.currentSettings, deadline: deadline,
            facts: ResponseKinds.facts(ResponseModel.self), meter: &meter)
        guard let channel = sent.sinkValue as? StreamChannel else { throw Self.unacceptable(sent, meter) }
        return StreamSource.Connection(channel: channel, head: sent.head)
    }

    /// When a streamed call must have ended: its own total timeout only, if it has one.
    private func streamDeadline(_ totalTimeout: TimeInterval?) -> DispatchTime? {
        totalTimeout.map { .now() + min($0, NetworkConfiguration.maximumTimeout) }
    }

    /// When the request must have ended: the earlier of its own total timeout and the session's resource timeout
    /// where Courier enforces it; `nil` when neither applies.
    private func deadline(totalTimeout: TimeInterval?) -> DispatchTime? {
        // No array: building one to take its minimum would allocate on every call.
        let total = totalTimeout.map { min($0, NetworkConfiguration.maximumTimeout) }
        let seconds: TimeInterval
        switch (total, configuration.resourceTimeout) {
        case (let total?, let resource?): seconds = min(total, resource)
        case (let total?, nil): seconds = total
        case (nil, let resource?): seconds = resource
        case (nil, nil): return nil
        }
        return .now() + seconds
    }
}
