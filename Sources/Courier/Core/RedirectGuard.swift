import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Decides every redirect: where it may lead, what it may carry, and whether it resends the body.
///
/// - A `Location` whose scheme is not `http` or `https` is refused (corelibs turns `file:///etc/passwd` into a
///   request for `/etc/passwd` on the same host).
/// - When a redirect leads to another scheme, host or port, the sensitive header fields are removed (URLSession
///   follows redirects itself, and on Linux it forwards `Authorization` and `Cookie` to any host).
/// - A 307 or 308 keeps the method and the body. corelibs resends an empty body, so there the redirect is followed by
///   a new request that carries the same bytes.
///
/// The session delegate of sessions Courier creates calls ``decide(_:redirecting:response:)``; on Apple platforms the
/// guard is also the per-task delegate of a caller's session.
final class RedirectGuard: NSObject, URLSessionTaskDelegate, Sendable {
    /// Lowercased names of the header fields to remove.
    let sensitiveHeaders: Set<String>

    init(sensitiveHeaders: Set<String>) {
        self.sensitiveHeaders = sensitiveHeaders
    }

    /// What to do with a redirect.
    enum Decision {
        /// Let URLSession follow it with this request.
        case follow(URLRequest)
        /// Stop this transfer and send this request anew (URLSession would drop its body).
        case followAnew(URLRequest)
        /// Do not follow it, for this reason.
        case refuse(String)
    }

    /// The decision for the redirect `response` to `sent`, which URLSession proposes to follow with `proposed`.
    /// - Parameter extra: Lowercased names of more header fields to keep off another origin (a credential's).
    func decide(
        _ proposed: URLRequest, redirecting sent: URLRequest?, response: HTTPURLResponse,
        alsoRemoving extra: Set<String> = []
    ) -> Decision {
        // The Location itself: corelibs rewrites `file:///etc/passwd` into a URL on the redirecting host.
        let location = response.value(forHTTPHeaderField: "Location").flatMap { URL(string: $0) }
        for scheme in [location?.scheme, proposed.url?.scheme].compactMap({ $0?.lowercased() })
        where scheme != "http" && scheme != "https" {
            return .refuse(
                "the server redirected to a \(String(reflecting: scheme)) URL; only http and https are followed")
        }
        var next = guarded(
            redirectTarget(of: proposed, response: response), redirectedFrom: sent?.url ?? response.url,
            alsoRemoving: extra)
        guard response.statusCode == 307 || response.statusCode == 308, let sent else { return .follow(next) }
        if sent.httpBodyStream != nil {
            return .refuse(
                "a \(response.statusCode) redirect must resend the body, and a streamed body cannot be sent again")
        }
        guard let body = sent.httpBody, !body.isEmpty, redirectsDropBodies else { return .follow(next) }
        next.httpMethod = sent.httpMethod
        next.httpBody = body
        return .followAnew(next)
    }

    /// Called for a caller's session on Apple platforms, where the per-task delegate sees redirects.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        switch decide(request, redirecting: task.originalRequest, response: response) {
        case .follow(let next), .followAnew(let next): completionHandler(next)
        case .refuse: completionHandler(nil)
        }
    }

    /// `request` without the sensitive headers if it goes to another origin than `origin`.
    func guarded(_ request: URLRequest, redirectedFrom origin: URL?, alsoRemoving extra: Set<String> = []) -> URLRequest
    {
        guard let origin, let target = request.url, !Self.sameOrigin(origin, target) else { return request }
        var request = request
        for name in (request.allHTTPHeaderFields ?? [:]).keys
        where sensitiveHeaders.contains(name.lowercased()) || extra.contains(name.lowercased()) {
            request.setValue(nil, forHTTPHeaderField: name)
        }
        return request
    }

    static func sameOrigin(_ lhs: URL, _ rhs: URL) -> Bool {
        lhs.scheme?.lowercased() == rhs.scheme?.lowercased() && lhs.host?.lowercased() == rhs.host?.lowercased()
            && effectivePort(lhs) == effectivePort(rhs)
    }

    private static func effectivePort(_ url: URL) -> Int? {
        if let port = url.port { return port }
        switch url.scheme?.lowercased() {
        case "http": return 80
        case "https": return 443
        default: return nil
        }
    }
}
