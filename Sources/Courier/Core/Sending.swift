import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The limits one call is sent under, for every hop of it.
struct SendingRules: Sendable {
    /// The most body bytes held in memory.
    var limit: Int
    /// When the whole call (every redirect included) must have ended, if ever.
    var deadline: DispatchTime?
    /// Lowercased names of the header fields kept off another origin: the configuration's and the credential's.
    var sensitiveHeaders: Set<String>
    var onProgress: (@Sendable (TransferProgress) -> Void)?
    /// The configuration's ``ResponseCache`` as the call's settings read it; `nil` sends every hop to the transport.
    var cache: ResponseCache?
}

extension NetworkClient {
    /// Sends `first` through the configuration's transport and returns the final response: one ``HTTPExchange`` per
    /// hop, redirects decided by one ``RedirectState``, a download restarted after a stale range without counting as a
    /// redirect. The deadline and the caller's cancellation stop the exchange in flight, whatever the transport.
    ///
    /// - Parameter meter: Takes the readings of ``RequestMetrics``: the first request handed over, the final head, the
    ///   bytes each way, the redirects.
    /// - Parameter sink: Makes the sink of a hop's body (a download's file) and may add to its request (`Range`), for
    ///   the call that began with `first`; `nil` keeps the body in memory.
    /// - Throws: ``NetworkClientError`` (every transport error wrapped in ``NetworkClientError/transportFailed(_:)``
    ///   with its secrets removed, here and only here), or `CancellationError`.
    func send(
        _ first: OutgoingRequest, rules: SendingRules, meter: inout MetricsMeter,
        sink: (_ request: inout URLRequest, _ first: URLRequest) -> (any ResponseBodySink)?
    ) async throws -> (head: HTTPURLResponse, body: Data, sinkValue: (any Sendable)?, cacheStatus: CacheStatus) {
        var outgoing = first
        var redirects = RedirectState(sensitiveHeaders: rules.sensitiveHeaders)
        let reporter = rules.onProgress.map(ProgressReporter.init)
        while true {
            var request = outgoing.request
            let bodySink = sink(&request, first.request)
            let exchange = HTTPExchange(
                request: request, body: outgoing.body, limit: rules.limit, sink: bodySink, reporter: reporter)
            if meter.requestStart == 0 { meter.requestStart = DispatchTime.now().uptimeNanoseconds }
            switch outgoing.body {
            case .none: break
            case .data(let data): meter.bytesSent += Int64(data.count)
            case .file(_, let byteCount): meter.bytesSent += byteCount
            }
            if let channel = bodySink?.streamChannel {
                // A stream: the transfer goes on in a task of its own once the head opened it.
                let (outcome, isOpen) = await opened(
                    exchange, channel: channel, deadline: rules.deadline, url: request.url)
                (meter.responseStart, meter.bytesReceived) = exchange.readings
                if case .delivered(let head, let data) = outcome {
                    // Not open: an error status, whose body is the error's.
                    return (head, data, isOpen ? channel : nil, .network)
                }
                if case .redirected(let head) = outcome {
                    meter.redirects += 1
                    outgoing = try next(after: head, from: outgoing, &redirects)
                    continue
                }
                try Self.fail(outcome, url: outgoing.request.url, limit: rules.limit)
            }
            // With a cache, each hop goes through it (see CachingTransport): a cached answer meets the same rules.
            let hop = rules.cache.map {
                CachingTransport(
                    cache: $0, base: configuration.transport, sensitiveHeaders: rules.sensitiveHeaders,
                    limit: rules.limit)
            }
            let outcome = await exchanged(exchange, deadline: rules.deadline, transport: hop ?? configuration.transport)
            hop?.finished(outcome, request: request)
            (meter.responseStart, meter.bytesReceived) = exchange.readings
            let cacheStatus = hop?.status ?? .network
            meter.fromCache = cacheStatus != .network
            switch outcome {
            case .delivered(let head, let data):
                if let reporter, let last = exchange.finalProgress() {
                    // The caller hears of the end after the last report.
                    await withCheckedContinuation { continuation in
                        reporter.finish(with: last) { continuation.resume() }
                    }
                }
                return (head, data, bodySink == nil ? nil : exchange.sinkValue, cacheStatus)
            case .redirected(let head):
                meter.redirects += 1
                outgoing = try next(after: head, from: outgoing, &redirects)
            case .restarting(let fresh):
                outgoing.request = fresh
            case .cancelled, .timedOut, .tooLarge, .failed:
                try Self.fail(outcome, url: outgoing.request.url, limit: rules.limit)
            }
        }
    }

    /// The request that follows the redirect `head`, as ``RedirectState`` decides it.
    private func next(
        after head: HTTPURLResponse, from outgoing: OutgoingRequest, _ redirects: inout RedirectState
    ) throws -> OutgoingRequest {
        do {
            return try redirects.next(after: head, from: outgoing)
        } catch {
            throw Self.wrapped(error, url: outgoing.request.url)
        }
    }

    /// Throws the error of an exchange that ended without a response: `CancellationError`, the deadline's timeout,
    /// ``NetworkClientError/responseTooLarge(limit:)`` or the failure, wrapped.
    private static func fail(_ outcome: TransferStateMachine.Outcome, url: URL?, limit: Int) throws -> Never {
        throw error(of: outcome, url: url, limit: limit) ?? TransferStateMachine.outOfOrder("no response")
    }

    /// The error the caller gets for an exchange that ended with `outcome`; `nil` for a response.
    static func error(of outcome: TransferStateMachine.Outcome, url: URL?, limit: Int) -> (any Error)? {
        switch outcome {
        case .delivered, .redirected, .restarting: return nil
        case .cancelled: return CancellationError()
        case .timedOut: return NetworkClientError.deadlinePassed(url: url)
        case .tooLarge: return NetworkClientError.responseTooLarge(limit: limit)
        case .failed(let error): return error is CancellationError ? error : wrapped(error, url: url)
        }
    }

    /// Starts a stream's exchange in a task of its own, which lives as long as the stream, and returns when the head
    /// opened the stream (`delivered`, with the channel open), or how the exchange ended without that: a redirect to
    /// follow, an error status with its body, a failure. The caller's cancellation stops the exchange until the head
    /// opened it; after that the reader owns it (``StreamChannel/cancel()``).
    private func opened(
        _ exchange: HTTPExchange, channel: StreamChannel, deadline: DispatchTime?, url: URL?
    ) async -> (TransferStateMachine.Outcome, isOpen: Bool) {
        channel.attach { [weak exchange] in exchange?.stop(.cancelled) }
        let transport = configuration.transport
        Task {
            let outcome = await exchanged(exchange, deadline: deadline, transport: transport)
            let ending = Self.error(of: outcome, url: url, limit: 0).map { Result<Void, any Error>.failure($0) }
            channel.transportEnded(outcome, as: ending ?? .success(()))
        }
        let opening = await withTaskCancellationHandler {
            await channel.awaitOpening()
        } onCancel: {
            exchange.stop(.cancelled)
        }
        switch opening {
        case .opened(let head): return (.delivered(head, Data()), true)
        case .ended(let outcome): return (outcome, false)
        }
    }

    /// Runs one exchange on the transport, under the deadline and the caller's cancellation.
    private func exchanged(
        _ exchange: HTTPExchange, deadline: DispatchTime?, transport: any HTTPTransport
    ) async -> TransferStateMachine.Outcome {
        if Task.isCancelled {
            // Nothing is sent; the exchange still ends, so that a download's kept bytes are settled.
            exchange.stop(.cancelled)
            return await exchange.end(nil)
        }
        if let deadline { DeadlineMonitor.shared.add(exchange, deadline: deadline) }
        defer { if deadline != nil { DeadlineMonitor.shared.remove(exchange) } }
        var failure: (any Error)?
        do {
            try await withTaskCancellationHandler {
                try await transport.send(exchange)
            } onCancel: {
                exchange.stop(.cancelled)
            }
        } catch {
            failure = error
        }
        return await exchange.end(failure)
    }

    /// `error` as the caller sees it: a ``NetworkClientError`` or a ``StreamError`` (a stream's own limit) as it is,
    /// anything else as ``NetworkClientError/transportFailed(_:)``, redacted here, once (URLError's user info carries
    /// the full URL, password and query included).
    static func wrapped(_ error: any Error, url: URL?) -> any Error {
        if error is NetworkClientError || error is CancellationError || error is StreamError { return error }
        return NetworkClientError.transportFailed(Redaction.urlError(error, url: url))
    }
}
