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

    /// What one hop is filed and selected by.
    private struct Filing {
        /// The request as the server receives it: the hop's, with what the transport adds to it.
        let request: URLRequest
        let key: CacheKey
        let selection: VarySelection
    }

    func send(_ exchange: HTTPExchange) async throws {
        // Asked first of the hop's own request: nothing more is read for a download or a POST.
        guard !exchange.prefersFileBody, CachePolicy.handles(exchange.request) else {
            return try await base.send(exchange)
        }
        // The cache decides on what the server receives: the request with what the transport adds to it (which may
        // add a conditional field of its own).
        let additions = base.additions(to: exchange.request)
        let request = additions.applied(to: exchange.request)
        guard CachePolicy.handles(request),
            let key = CacheKey(request, additions: additions, sensitiveHeaders: sensitiveHeaders, salt: cache.salt)
        else {
            return try await base.send(exchange)
        }
        let control = CachePolicy.requestControl(request)
        guard !control.noStore else { return try await base.send(exchange) }
        // The key holds the sensitive fields and every field the transport adds.
        let partitioned =
            additions.headerFields.isEmpty
            ? sensitiveHeaders : sensitiveHeaders.union(additions.headerFields.keys.map { $0.lowercased() })
        let filing = Filing(
            request: request, key: key, selection: VarySelection(salt: cache.salt, partitioned: partitioned))
        var stored = cache.lookup(key)
        if let candidate = stored, !filing.selection.matches(candidate, request) { stored = nil }
        if let stored {
            switch CachePolicy.use(stored, control: control, now: Self.now) {
            case .serve(let status):
                return replay(stored, to: exchange, as: status)
            case .serveWhileRevalidating:
                replay(stored, to: exchange, as: .staleWhileRevalidating)
                return revalidateInBackground(stored, filing, sending: exchange.request)
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
        // The hop's own request goes out: the transport adds what it adds, as without a cache.
        var outgoing = stored.flatMap { CachePolicy.conditional(exchange.request, for: $0) } ?? exchange.request
        outgoing.cachePolicy = .reloadIgnoringLocalCacheData  // The session's URLCache never answers it.
        let requestTime = Self.now
        let ended = await fetch(outgoing, body: exchange.body, for: exchange)
        guard !exchange.isStopped else { return }
        switch ended {
        case .delivered(let head, let body):
            deliver(head, body, filing, stored: stored, requestTime: requestTime, to: exchange)
        case .redirected(let head):
            deliver(head, Data(), filing, stored: stored, requestTime: requestTime, to: exchange)
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

    /// The network's answer `head` (and `body`) to the hop filed as `filing`: a 304 that validates `stored` serves it
    /// updated; an error status serves it under `stale-if-error`; anything else is stored when it may be and handed on.
    private func deliver(
        _ head: HTTPURLResponse, _ body: Data, _ filing: Filing, stored: StoredResponse?, requestTime: TimeInterval,
        to exchange: HTTPExchange
    ) {
        let responseTime = Self.now
        let request = filing.request
        let isGET = (request.httpMethod ?? "GET") == "GET"
        if head.statusCode == 304, let stored, CachePolicy.validates(head, stored) {
            let updated = CachePolicy.updated(stored, with: head, requestTime: requestTime, responseTime: responseTime)
            keep(updated, filing)
            return replay(updated, to: exchange, as: .revalidated)
        }
        if CachePolicy.errorStatuses.contains(head.statusCode), let stored,
            CachePolicy.servesOnError(stored, control: CachePolicy.requestControl(request), now: responseTime)
        {
            return replay(stored, to: exchange, as: .staleOnError)
        }
        if isGET {
            if let entry = Self.entry(head, body, filing, requestTime: requestTime, responseTime: responseTime) {
                cache.store(entry, for: filing.key)
            } else if head.statusCode < 500, head.statusCode != 304 {
                cache.remove(filing.key)  // A newer answer that may not be kept: the older one is not served again.
            }
        } else if head.statusCode == 200, let stored, CachePolicy.validates(head, stored) {
            // A HEAD freshens the stored GET (RFC 9111, 4.3.5).
            keep(CachePolicy.updated(stored, with: head, requestTime: requestTime, responseTime: responseTime), filing)
        }
        guard exchange.receive(head), !body.isEmpty else { return }
        _ = exchange.receive(body)
    }

    /// Stores `updated`, a stored response whose header fields a 304 (or a HEAD) replaced, selected again by its
    /// `Vary` as it now reads; removes it when that `Vary` may not be stored.
    private func keep(_ updated: StoredResponse, _ filing: Filing) {
        var updated = updated
        guard let vary = filing.selection.values(updated.header("Vary"), of: filing.request) else {
            return cache.remove(filing.key)
        }
        updated.varyValues = vary
        cache.store(updated, for: filing.key)
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

    /// Validates `stored` with a `GET` of the cache's own (`sending`, as a `GET`), off the caller's task, unless one is
    /// already under way.
    private func revalidateInBackground(_ stored: StoredResponse, _ filing: Filing, sending: URLRequest) {
        guard cache.beginRevalidation(filing.key) else { return }
        var get = sending
        get.httpMethod = "GET"
        get.cachePolicy = .reloadIgnoringLocalCacheData
        let outgoing = CachePolicy.conditional(get, for: stored) ?? get
        var wire = filing.request
        wire.httpMethod = "GET"
        let filed = Filing(request: wire, key: filing.key, selection: filing.selection)
        Task.detached { [self] in
            defer { cache.endRevalidation(filed.key) }
            let requestTime = Self.now
            let ended = await fetch(outgoing, body: .none, for: nil)
            guard case .delivered(let head, let body) = ended else { return }
            let responseTime = Self.now
            if head.statusCode == 304, CachePolicy.validates(head, stored) {
                keep(
                    CachePolicy.updated(stored, with: head, requestTime: requestTime, responseTime: responseTime),
                    filed)
            } else if let entry = Self.entry(head, body, filed, requestTime: requestTime, responseTime: responseTime) {
                cache.store(entry, for: filed.key)
            }
        }
    }

    /// What the cache keeps of the network's answer `head` and `body` to the hop filed as `filing`; `nil` when it may
    /// not be stored (``CachePolicy/isStorable(_:for:)``, which also refuses a `Vary` that cannot be kept).
    private static func entry(
        _ head: HTTPURLResponse, _ body: Data, _ filing: Filing, requestTime: TimeInterval,
        responseTime: TimeInterval
    ) -> StoredResponse? {
        guard CachePolicy.isStorable(head, for: filing.request),
            let vary = filing.selection.values(head.value(forHTTPHeaderField: "Vary"), of: filing.request)
        else { return nil }
        // A copy of exactly its size: a body read in pieces may hold a buffer up to twice as large, uncounted.
        let kept = body.withUnsafeBytes { bytes in bytes.baseAddress.map { Data(bytes: $0, count: bytes.count) } }
        return StoredResponse(
            status: head.statusCode, headers: StoredResponse.fields(of: head), body: kept ?? Data(),
            requestTime: requestTime, responseTime: responseTime, varyValues: vary)
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
