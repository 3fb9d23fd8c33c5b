import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a `URLSession` adds to each request it sends, for ``HTTPTransport/additions(to:)`` of Courier's `URLSession`
/// transports: read once from the session's configuration, which cannot change after the session is made; the
/// storages are read at each call, since their content changes (a sign-in sets a cookie).
///
/// - `httpAdditionalHeaders`: sent unless the request has the field (corelibs and Apple's `URLSession` alike).
/// - The cookies of `httpCookieStorage` for the URL, when `httpShouldSetCookies`: corelibs sends them even over a
///   request's own `Cookie` field and whatever the request's `httpShouldHandleCookies`, so they always count.
/// - The credentials of `urlCredentialStorage` whose protection space is the URL's host, port and scheme, any realm
///   and method: `URLSession` answers a challenge with them, and Apple's may send one before it is asked.
struct SessionAdditions: Sendable {
    private let headerFields: [String: String]
    private let cookies: HTTPCookieStorage?
    private let credentials: URLCredentialStorage?

    init(_ configuration: URLSessionConfiguration) {
        var fields: [String: String] = [:]
        for (name, value) in configuration.httpAdditionalHeaders ?? [:] {
            fields[Self.text(name.base)] = Self.text(value)
        }
        headerFields = fields
        cookies = configuration.httpShouldSetCookies ? configuration.httpCookieStorage : nil
        credentials = configuration.urlCredentialStorage
    }

    /// What the session adds to `request`.
    func additions(to request: URLRequest) -> RequestAdditions {
        guard let url = request.url else { return RequestAdditions(headerFields: headerFields) }
        var sent: [String] = []
        if let cookies, let list = cookies.cookies(for: url), !list.isEmpty {
            sent.append("cookie\u{0}" + (HTTPCookie.requestHeaderFields(with: list)["Cookie"] ?? ""))
        }
        if let all = credentials?.allCredentials, !all.isEmpty, let host = url.host?.lowercased(),
            let scheme = url.scheme?.lowercased()
        {
            let port = url.port ?? (scheme == "https" ? 443 : 80)
            for (space, byUser) in all
            where !space.isProxy() && space.host.lowercased() == host && space.port == port
                && space.protocol?.lowercased() == scheme
            {
                for (user, credential) in byUser {
                    let fields = [space.realm ?? "", space.authenticationMethod, user, credential.password ?? ""]
                    sent.append("credential\u{0}" + fields.joined(separator: "\u{0}"))
                }
            }
        }
        return RequestAdditions(headerFields: headerFields, credentials: sent.sorted())
    }

    /// A header name or value of `httpAdditionalHeaders` as `URLSession` sends it (a string, or its description).
    private static func text(_ value: Any) -> String {
        value as? String ?? String(describing: value)
    }
}
