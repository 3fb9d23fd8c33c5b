import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The rules of RFC 9111 (a private cache) and RFC 5861 in one place: what is stored, when a stored response is
/// served, validated or served stale, how a `304` updates it, and what an unsafe request invalidates. Pure functions
/// of messages and times; ``CachingTransport`` carries them out.
enum CachePolicy {
    /// The statuses whose responses may be given a heuristic lifetime (RFC 9110, 15.1), 206 left out (Courier does
    /// not combine partial responses).
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// The statuses whose caching rules Courier implements, for `must-understand` (RFC 9111, 5.2.2.3).
    static let understoodStatuses: Set<Int> = heuristicallyCacheable.union([302, 303, 307])

    /// The statuses after which `stale-if-error` may serve a stale response (RFC 5861, 4).
    static let errorStatuses: Set<Int> = [500, 502, 503, 504]

    /// The methods that change nothing on the server (RFC 9110, 9.2.1): any other one invalidates.
    static let safeMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE"]

    /// The request fields that make a request the caller's own conditional or partial one: the cache lets it through.
    static let callerConditionals = [
        "If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range",
    ]

    /// The header fields a 304 never updates (RFC 9111, 3.2: a cache keeps its stored framing).
    static let keptOn304: Set<String> = [
        "content-length", "content-encoding", "transfer-encoding", "content-range", "content-type",
    ]

    /// The request's own `Cache-Control` (or `Pragma: no-cache` when it has none, RFC 9111 5.4).
    static func requestControl(_ request: URLRequest) -> CacheControl {
        if let value = request.value(forHTTPHeaderField: "Cache-Control") { return CacheControl(value) }
        var control = CacheControl(nil)
        if let pragma = request.value(forHTTPHeaderField: "Pragma"), pragma.lowercased().contains("no-cache") {
            control.noCache = true
        }
        return control
    }

    /// Whether the cache deals with `request` at all: `GET` or `HEAD`, without the caller's own validators or range.
    static func handles(_ request: URLRequest) -> Bool {
        let method = request.httpMethod ?? "GET"
        guard method == "GET" || method == "HEAD" else { return false }
        return !callerConditionals.contains { request.value(forHTTPHeaderField: $0) != nil }
    }

    /// Whether the response `head` to the `GET` `request` may be stored (RFC 9111, 3, for a private cache).
    static func isStorable(_ head: HTTPURLResponse, for request: URLRequest) -> Bool {
        guard (request.httpMethod ?? "GET") == "GET" else { return false }
        let status = head.statusCode
        guard status >= 200, status < 600, status != 206, status != 304 else { return false }
        guard !requestControl(request).noStore else { return false }
        let control = CacheControl(head.value(forHTTPHeaderField: "Cache-Control"))
        if control.mustUnderstand {
            guard understoodStatuses.contains(status) else { return false }
        } else if control.noStore {
            return false
        }
        // Vary: *, or a Vary naming more fields than a lookup may compare.
        if let vary = head.value(forHTTPHeaderField: "Vary"), varyNames(vary) == nil { return false }
        let explicit =
            control.maxAge != nil || control.invalidMaxAge || head.value(forHTTPHeaderField: "Expires") != nil
            || control.isPublic || control.isPrivate
        return explicit || heuristicallyCacheable.contains(status)
    }

    /// The lowercased field names of a `Vary` value; `nil` when a response with it is not stored: `*` (it never
    /// matches), or more than ``ResponseCache/maximumVaryFields`` names.
    static func varyNames(_ value: String) -> [String]? {
        let names = CacheControl.split(value).map { $0.lowercased() }
        guard names.count <= ResponseCache.maximumVaryFields else { return nil }
        return names.contains("*") ? nil : names
    }

    /// What to do with a stored response for a request.
    enum Use: Equatable {
        /// Serve it as it is.
        case serve(CacheStatus)
        /// Serve it stale and revalidate in the background.
        case serveWhileRevalidating
        /// Ask the server (with validators if the stored response has any).
        case validate
    }

    /// How `stored` may answer a request with `control`, at `now` (RFC 9111, 4.2 and 4.3; RFC 5861, 3).
    static func use(_ stored: StoredResponse, control: CacheControl, now: TimeInterval) -> Use {
        let freshness = CacheFreshness(stored, now: now)
        let response = stored.cacheControl
        if control.noCache || response.noCache { return .validate }
        if let maxAge = control.maxAge, freshness.currentAge > TimeInterval(maxAge) { return .validate }
        if freshness.isFresh {
            if let minFresh = control.minFresh, freshness.lifetime - freshness.currentAge < TimeInterval(minFresh) {
                return .validate
            }
            return .serve(.fresh)
        }
        if response.mustRevalidate { return .validate }
        if control.maxStaleAny || control.maxStale.map({ freshness.staleness <= TimeInterval($0) }) == true {
            return .serve(.fresh)
        }
        if let window = response.staleWhileRevalidate, freshness.staleness <= TimeInterval(window) {
            return .serveWhileRevalidating
        }
        return .validate
    }

    /// Whether `stored` may be served because the validation failed (`stale-if-error` of the response or the request).
    static func servesOnError(_ stored: StoredResponse, control: CacheControl, now: TimeInterval) -> Bool {
        let response = stored.cacheControl
        guard !response.mustRevalidate, !response.noCache else { return false }
        guard let window = [response.staleIfError, control.staleIfError].compactMap({ $0 }).max() else { return false }
        return CacheFreshness(stored, now: now).staleness <= TimeInterval(window)
    }

    /// The request that validates `stored`: `request` with `If-None-Match` (its `ETag`) and `If-Modified-Since` (its
    /// `Last-Modified`); `nil` when it has no validator.
    static func conditional(_ request: URLRequest, for stored: StoredResponse) -> URLRequest? {
        let etag = stored.header("ETag")
        let lastModified = stored.header("Last-Modified")
        guard etag != nil || lastModified != nil else { return nil }
        var conditional = request
        if let etag { conditional.setValue(etag, forHTTPHeaderField: "If-None-Match") }
        if let lastModified { conditional.setValue(lastModified, forHTTPHeaderField: "If-Modified-Since") }
        return conditional
    }

    /// `stored` updated by the header fields of `head` (a 304, or a 200 to a `HEAD`), RFC 9111 3.2 and 4.3.4.
    static func updated(
        _ stored: StoredResponse, with head: HTTPURLResponse, requestTime: TimeInterval, responseTime: TimeInterval
    ) -> StoredResponse {
        var updated = stored
        let fresh = StoredResponse.fields(of: head).filter { !keptOn304.contains($0.name.lowercased()) }
        let replaced = Set(fresh.map { $0.name.lowercased() })
        updated.headers = stored.headers.filter { !replaced.contains($0.name.lowercased()) } + fresh
        updated.headers.sort { $0.name.lowercased() < $1.name.lowercased() }
        updated.requestTime = requestTime
        updated.responseTime = responseTime
        return updated
    }

    /// Whether the 304 (or HEAD) `head` describes `stored` (RFC 9111 4.3.4: the same strong validator, or none).
    static func validates(_ head: HTTPURLResponse, _ stored: StoredResponse) -> Bool {
        guard let etag = head.value(forHTTPHeaderField: "ETag") else {
            guard let modified = head.value(forHTTPHeaderField: "Last-Modified") else { return true }
            return stored.header("Last-Modified") == nil || stored.header("Last-Modified") == modified
        }
        return stored.header("ETag").map { weakComparison($0, etag) } ?? false
    }

    private static func weakComparison(_ a: String, _ b: String) -> Bool {
        func opaque(_ tag: String) -> Substring {
            let trimmed = tag.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix("W/") ? trimmed.dropFirst(2) : Substring(trimmed)
        }
        return opaque(a) == opaque(b)
    }

    /// The URLs a response `head` to an unsafe `request` invalidates (RFC 9111, 4.4): none for an error status (or a
    /// safe method); otherwise the request's URL, and its `Location` and `Content-Location` when on the same origin.
    static func invalidated(by head: HTTPURLResponse, for request: URLRequest) -> [URL] {
        guard !safeMethods.contains(request.httpMethod ?? "GET"), head.statusCode < 400, let url = request.url else {
            return []
        }
        var urls = [url]
        for field in ["Location", "Content-Location"] {
            guard let value = head.value(forHTTPHeaderField: field),
                let target = URL(string: value, relativeTo: url)?.absoluteURL,
                let origin = Origin.of(target), origin == Origin.of(url)
            else { continue }
            urls.append(target)
        }
        return urls
    }
}
