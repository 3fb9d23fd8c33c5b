import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The one owner of redirects: which responses are followed, where they may lead, what the next request carries, and
/// how many are followed. Transports follow none (see ``HTTPTransport``); the exchange drops a followed redirect's body
/// (``TransferStateMachine``) and the client sends what ``RedirectState/next(after:from:)`` returns.
enum Redirects {
    /// The statuses followed when they carry a `Location`: 301, 302, 303, 307 and 308, as URLSession follows.
    static let followedStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// Whether `head` is a redirect Courier follows.
    static func isFollowable(_ head: HTTPURLResponse) -> Bool {
        followedStatuses.contains(head.statusCode) && head.value(forHTTPHeaderField: "Location") != nil
    }

    /// The one rule that keeps secrets on their origin: the names among `fields` to remove from a request that goes
    /// from `origin` to `target`, another origin (scheme, host or port): those in `sensitiveHeaders` (lowercased).
    /// None when the origins are the same, or when `origin` is unknown. What a cross-origin redirect, and a request
    /// that continues a response on another origin (``NetworkRequest/replacingURL(with:)``), must not carry.
    static func withheldHeaders(
        among fields: some Sequence<String>, sensitiveHeaders: Set<String>, from origin: String?, to target: URL?
    ) -> [String] {
        guard let origin, target.flatMap(Origin.of) != origin else { return [] }
        return fields.filter { sensitiveHeaders.contains($0.lowercased()) }
    }

    /// The header fields that describe a body, removed when a redirect drops it (RFC 9110, 15.4).
    static let bodyHeaders = [
        "Content-Type", "Content-Length", "Content-Encoding", "Content-Language",
        "Content-Location", "Transfer-Encoding",
    ]
}

/// What one hop sends: the request and its body.
struct OutgoingRequest: Sendable {
    var request: URLRequest
    var body: HTTPRequestBody
}

/// The redirects of one call: how many were followed, and the request each one leads to. A download restarted after a
/// stale range is not a redirect and does not count.
struct RedirectState: Sendable {
    /// How many redirects were followed so far.
    private(set) var followed = 0
    /// The most redirects followed: ``NetworkConfiguration/maximumRedirects``.
    let limit: Int
    /// Lowercased names of the header fields kept off another origin: the configuration's sensitive headers and the
    /// credential's own.
    let sensitiveHeaders: Set<String>

    init(limit: Int = NetworkConfiguration.maximumRedirects, sensitiveHeaders: Set<String>) {
        self.limit = limit
        self.sensitiveHeaders = sensitiveHeaders
    }

    /// The request that follows the redirect `head`, an answer to `sent`.
    ///
    /// - A `Location` that is not an http or https URL is refused (corelibs would turn `file:///etc/passwd` into a
    ///   request for `/etc/passwd` on the same host); a relative one is resolved against the redirecting URL (RFC 3986,
    ///   which corelibs gets wrong for `final`, `./final`, `../final`).
    /// - A 303 (but to `HEAD`), and a 301 or 302 to `POST`, become a `GET` without the body; a 307 or 308 keeps the
    ///   method and the body (a file body is read again from the file).
    /// - On the way to another scheme, host or port, the sensitive header fields are removed.
    ///
    /// - Throws: ``NetworkClientError/redirectRefused(reason:)``, or `URLError(.httpTooManyRedirects)` past the
    ///   limit.
    mutating func next(after head: HTTPURLResponse, from sent: OutgoingRequest) throws -> OutgoingRequest {
        followed += 1
        guard followed <= limit else {
            throw URLError(
                .httpTooManyRedirects,
                userInfo: [
                    NSLocalizedDescriptionKey: "more than \(limit) redirects (NetworkConfiguration.maximumRedirects)"
                ])
        }
        let location = head.value(forHTTPHeaderField: "Location") ?? ""
        let base = head.url ?? sent.request.url
        guard let target = URL(string: location, relativeTo: base)?.absoluteURL, target.host != nil else {
            throw NetworkClientError.redirectRefused(reason: "the server's Location is not a URL Courier can follow")
        }
        let scheme = target.scheme?.lowercased() ?? ""
        guard scheme == "http" || scheme == "https" else {
            throw NetworkClientError.redirectRefused(
                reason: "the server redirected to a \(String(reflecting: scheme)) URL; only http and https are followed"
            )
        }
        var next = sent
        next.request.url = target
        let method = sent.request.httpMethod ?? "GET"
        let dropsBody =
            (head.statusCode == 303 && method != "HEAD")
            || (method == "POST" && (head.statusCode == 301 || head.statusCode == 302))
        if dropsBody {
            next.request.httpMethod = "GET"
            next.request.httpBody = nil
            next.request.httpBodyStream = nil
            next.body = .none
            for name in Redirects.bodyHeaders { next.request.setValue(nil, forHTTPHeaderField: name) }
        } else if sent.request.httpBodyStream != nil {
            throw NetworkClientError.redirectRefused(
                reason: "a \(head.statusCode) redirect must resend the body, and a streamed body cannot be sent again")
        }
        for name in Redirects.withheldHeaders(
            among: (next.request.allHTTPHeaderFields ?? [:]).keys, sensitiveHeaders: sensitiveHeaders,
            from: sent.request.url.flatMap(Origin.of), to: target)
        {
            next.request.setValue(nil, forHTTPHeaderField: name)
        }
        return next
    }
}
