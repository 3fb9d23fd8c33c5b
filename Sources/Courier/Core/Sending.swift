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
                do {
                    outgoing = try redirects.next(after: head, from: outgoing)
                } catch {
                    throw Self.wrapped(error, url: outgoing.request.url)
                }
            case .restarting(let fresh):
                outgoing.request = fresh
            case .cancelled:
                throw CancellationError()
            case .timedOut:
                throw Self.wrapped(Self.timeout, url: outgoing.request.url)
            case .tooLarge:
                throw NetworkClientError.responseTooLarge(limit: rules.limit)
            case .failed(let error):
                if error is CancellationError { throw error }
                throw Self.wrapped(error, url: outgoing.request.url)
            }
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

    /// The one error of a passed deadline, on every transport.
    static let timeout = URLError(
        .timedOut,
        userInfo: [
            NSLocalizedDescriptionKey:
                "the request took longer than its total timeout (totalTimeout or timeoutIntervalForResource)"
        ])

    /// `error` as the caller sees it: a ``NetworkClientError`` as it is, anything else as
    /// ``NetworkClientError/transportFailed(_:)``, redacted here, once (URLError's user info carries the full URL,
    /// password and query included).
    static func wrapped(_ error: any Error, url: URL?) -> any Error {
        if error is NetworkClientError || error is CancellationError { return error }
        return NetworkClientError.transportFailed(Redaction.urlError(error, url: url))
    }
}
