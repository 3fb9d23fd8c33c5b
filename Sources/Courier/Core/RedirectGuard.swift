import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Keeps credentials on the origin they were set for: when a redirect leads to another scheme, host or port, the
/// sensitive header fields are removed from the redirected request.
///
/// URLSession follows redirects itself, and on Linux it forwards `Authorization` and `Cookie` to any host.
final class RedirectGuard: NSObject, URLSessionTaskDelegate, Sendable {
    /// Lowercased names of the header fields to remove.
    let sensitiveHeaders: Set<String>

    init(sensitiveHeaders: Set<String>) {
        self.sensitiveHeaders = sensitiveHeaders
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        let request = redirectTarget(of: request, response: response)
        completionHandler(guarded(request, redirectedFrom: task.originalRequest?.url ?? response.url))
    }

    /// `request` without the sensitive headers if it goes to another origin than `origin`.
    func guarded(_ request: URLRequest, redirectedFrom origin: URL?) -> URLRequest {
        guard let origin, let target = request.url, !Self.sameOrigin(origin, target) else { return request }
        var request = request
        for name in (request.allHTTPHeaderFields ?? [:]).keys where sensitiveHeaders.contains(name.lowercased()) {
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
