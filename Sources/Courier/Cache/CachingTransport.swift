import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One hop of a call through a ``ResponseCache``: the transport the client sends a hop's exchange to when a cache is
/// set. It answers from the cache, validates, or asks the configuration's transport, and hands the response to the
/// hop's exchange like a transport does, so a cached answer goes through the same state machine, redirect rules, size
/// limit and sink as a network answer.
///
/// - Downloads (a body going to a file), methods other than `GET` and `HEAD`, and requests with their own validators
///   or `Range` go straight to the transport (an unsafe method then invalidates, see ``finished(_:request:)``).
/// - Otherwise the network response is read whole into an exchange of the cache's own (under the same size limit;
///   the hop's stop stops it), stored when the rules allow, and then handed to the hop's exchange in one piece.
final class CachingTransport: HTTPTransport {
    let cache: ResponseCache
    let base: any HTTPTransport
    /// Lowercased names of the request's credential fields (the key's partition).
    let sensitiveHeaders: Set<String>
    /// The call's body size limit.
    let limit: Int
    private let outcome = Locked(CacheStatus.network)

    init(cache: ResponseCache, base: any HTTPTransport, sensitiveHeaders: Set<String>, limit: Int) {
        self.cache = cache
        self.base = base
        self.sensitiveHeaders = sensitiveHeaders
        self.limit = limit
    }

    /// Where the hop's response came from.
    var status: CacheStatus { outcome.withLock { $0 } }

    private static var now: TimeInterval { Date().timeIntervalSince1970 }

    func send(_ exchange: HTTPExchange) async throws {
        let request = exchange.request
        guard !exchange.prefersFileBody, CachePolicy.handles(request),
            let key = CacheKey(request, sensitiveHeaders: sensitiveHeaders, salt: cache.salt)
        else {
            return try await base.send(exchange)
        }
        let control = CachePolicy.requestControl(request)
        guard !control.noStore else { return try await base.send(exchange) }
        var stored = cache.lookup(key)
        if let candidate = stored, !CachePolicy.varyMatches(candidate, request) { stored = nil }
        if let stored {
            switch CachePolicy.use(stored, control: control, now: Self.now) {
            case .serve(let status):
                return replay(stored, to: exchange, as: status)
            case .serveWhileRevalidating:
                replay(stored, to: exchange, as: .staleWhileRevalidating)
                return revalidateInBackground(stored, key: key, request: request)
            case .validate:
                break
            }
        }
        if control.onlyIfCached {
            let head = HTTPURLResponse(
                url: request.url!, statusCode: 504, httpVersion: "HTTP/1.1", headerFields: ["Content-Length": "0"])
            outcome.withLock { $0 = .unavailable }
            if let head { _ = exchange.receive(head) }
            return
        }
        var outgoing = stored.flatMap { CachePolicy.conditional(request, for: $0) } ?? request
        outgoing.cachePolicy = .reloadIgnoringLocalCacheData  // The session's URLCache never answers it.
        let requestTime = Self.now
        let ended = await fetch(outgoing, body: exchange.body, for: exchange)
        guard !exchange.isStopped else { return }
        switch ended {
        case .delivered(let head, let body):
            deliver(head, body, request: request, key: key, stored: stored, requestTime: requestTime, to: exchange)
        case .redirected(let head):
            deliver(head, Data(), request: request, key: key, stored: stored, requestTime: requestTime, to: exchange)
        case .failed(let error):
            if let stored, CachePolicy.servesOnError(stored, control: control, now: Self.now) {
                return replay(stored, to: exchange, as: .staleOnError)
            }
            throw error
        case .tooLarge:
            exchange.stop(.tooLarge)
        case .cancelled, .timedOut, .restarting:
            return
        }
    }

    /// The network's answer `head` (and `body`) to `request`: a 304 that validates `stored` serves it updated; an
    /// error status serves it under `stale-if-error`; anything else is stored when it may be and handed on.
    private func deliver(
        _ head: HTTPURLResponse, _ body: Data, request: URLRequest, key: CacheKey, stored: StoredResponse?,
        requestTime: TimeInterval, to exchange: HTTPExchange
    ) {
        let responseTime = Self.now
        let isGET = (request.httpMethod ?? "GET") == "GET"
        if head.statusCode == 304, let stored, CachePolicy.validates(head, stored) {
            let updated = CachePolicy.updated(stored, with: head, requestTime: requestTime, responseTime: responseTime)
            cache.store(updated, for: key)
            return replay(updated, to: exchange, as: .revalidated)
        }
        if CachePolicy.errorStatuses.contains(head.statusCode), let stored,
            CachePolicy.servesOnError(stored, control: CachePolicy.requestControl(request), now: responseTime)
        {
            return replay(stored, to: exchange, as: .staleOnError)
        }
        if isGET {
            if let entry = Self.entry(head, body, for: request, requestTime: requestTime, responseTime: responseTime) {
                cache.store(entry, for: key)
            } else if head.statusCode < 500, head.statusCode != 304 {
                cache.remove(key)  // A newer answer that may not be kept: the older one is not served again.
            }
        } else if head.statusCode == 200, let stored, CachePolicy.validates(head, stored) {
            // A HEAD freshens the stored GET (RFC 9111, 4.3.5).
            cache.store(
                CachePolicy.updated(stored, with: head, requestTime: requestTime, responseTime: responseTime), for: key)
        }
        guard exchange.receive(head), !body.isEmpty else { return }
        _ = exchange.receive(body)
    }

    /// Sends `request` on the transport in an exchange of the cache's own, in memory, stopped when `hop` stops.
    private func fetch(
        _ request: URLRequest, body: HTTPRequestBody, for hop: HTTPExchange?
    ) async -> TransferStateMachine.Outcome {
        let inner = HTTPExchange(request: request, body: body, limit: limit, sink: nil, reporter: nil)
        hop?.whenStopped { inner.stop(.cancelled) }
        var failure: (any Error)?
        do { try await base.send(inner) } catch { failure = error }
        return await inner.end(failure)
    }

    /// Hands `stored` to `exchange` with its current `Age`, as a transport hands a response.
    private func replay(_ stored: StoredResponse, to exchange: HTTPExchange, as status: CacheStatus) {
        outcome.withLock { $0 = status }
        let request = exchange.request
        let freshness = CacheFreshness(stored, now: Self.now)
        guard let url = request.url, let head = stored.head(for: url, age: freshness.ageHeader) else { return }
        guard exchange.receive(head), request.httpMethod != "HEAD", !stored.body.isEmpty else { return }
        _ = exchange.receive(stored.body)
    }

    /// Validates `stored` with a `GET` of the cache's own, off the caller's task, unless one is already under way.
    private func revalidateInBackground(_ stored: StoredResponse, key: CacheKey, request: URLRequest) {
        guard cache.beginRevalidation(key) else { return }
        var get = request
        get.httpMethod = "GET"
        get.cachePolicy = .reloadIgnoringLocalCacheData
        let outgoing = CachePolicy.conditional(get, for: stored) ?? get
        Task.detached { [self] in
            defer { cache.endRevalidation(key) }
            let requestTime = Self.now
            let ended = await fetch(outgoing, body: .none, for: nil)
            guard case .delivered(let head, let body) = ended else { return }
            let responseTime = Self.now
            if head.statusCode == 304, CachePolicy.validates(head, stored) {
                cache.store(
                    CachePolicy.updated(stored, with: head, requestTime: requestTime, responseTime: responseTime),
                    for: key)
            } else if let entry = Self.entry(head, body, for: get, requestTime: requestTime, responseTime: responseTime)
            {
                cache.store(entry, for: key)
            }
        }
    }

    /// What the cache keeps of the network's answer `head` and `body` to `request`; `nil` when it may not be stored
    /// (``CachePolicy/isStorable(_:for:)``) or its `Vary` names a field that cannot be matched.
    private static func entry(
        _ head: HTTPURLResponse, _ body: Data, for request: URLRequest, requestTime: TimeInterval,
        responseTime: TimeInterval
    ) -> StoredResponse? {
        guard CachePolicy.isStorable(head, for: request),
            let vary = CachePolicy.varyValues(head.value(forHTTPHeaderField: "Vary"), of: request)
        else { return nil }
        return StoredResponse(
            status: head.statusCode, headers: StoredResponse.fields(of: head), body: body, requestTime: requestTime,
            responseTime: responseTime, varyValues: vary)
    }

    /// A hop ended with `ended`: a successful unsafe request invalidates what it names (RFC 9111, 4.4).
    func finished(_ ended: TransferStateMachine.Outcome, request: URLRequest) {
        let head: HTTPURLResponse
        switch ended {
        case .delivered(let delivered, _): head = delivered
        case .redirected(let redirect): head = redirect
        default: return
        }
        for url in CachePolicy.invalidated(by: head, for: request) { cache.removeResponses(for: url) }
    }
}
