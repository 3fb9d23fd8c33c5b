import Foundation

/// What one request says about how the decorators treat it: whether it may be shared, whether it carries the
/// credential, whether it may be retried, and a tag for its log entries.
///
/// Every field's default is what a request gets without options, so `RequestOptions()` changes nothing:
///
/// ```swift
/// let signIn = NetworkRequest<Credentials, Session>(
///     path: "/sessions", method: .post, body: credentials,
///     options: RequestOptions(sendsCredential: false, tag: "sign-in"))
/// ```
///
/// The options travel with the request through every decorator, whatever their order, including decorators you
/// write that only forward ``NetworkClientProtocol/run(_:)``.
public struct RequestOptions: Sendable, Hashable {
    /// Whether ``DeduplicatingClient`` may let this request share a call with identical ones in flight; `true` by
    /// default. `false` always sends it on its own (for example a `GET` with a side effect).
    public var allowsSharing: Bool
    /// Whether `authenticated(by:)` puts its credential on this request; `true` by default. `false` for a sign-in,
    /// a token refresh or a public endpoint: the request goes out untouched and a `401` is its outcome, with no
    /// renewal.
    public var sendsCredential: Bool
    /// Whether `retrying()` may send this request again after a transient failure; `true` by default (the
    /// policy still decides). `false` sends it once. The ``Outbox`` sets it to `false` on what it sends, since the
    /// outbox retries its entries itself.
    public var allowsRetry: Bool
    /// A label that `logged(…)` writes in the request's ``LogEntry`` (``LogEntry/tag``); `nil` by default. It is
    /// never sent.
    public var tag: String?

    /// Creates options; every parameter's default is what a request without options gets.
    /// - Parameters:
    ///   - allowsSharing: Whether ``DeduplicatingClient`` may share the call; `true` by default.
    ///   - sendsCredential: Whether `authenticated(by:)` adds its credential; `true` by default.
    ///   - allowsRetry: Whether `retrying()` may retry it; `true` by default.
    ///   - tag: A label for log entries; `nil` by default.
    public init(allowsSharing: Bool = true, sendsCredential: Bool = true, allowsRetry: Bool = true, tag: String? = nil)
    {
        self.allowsSharing = allowsSharing
        self.sendsCredential = sendsCredential
        self.allowsRetry = allowsRetry
        self.tag = tag
    }
}

/// The header fields `authenticated(by:)` put on a request, and the origins besides the configured base URL's
/// that may receive them. The client at the bottom of the stack, which knows the configured base URL, removes these
/// fields before sending to any other origin, and keeps them off redirects to another origin.
struct CredentialScope: Sendable, Hashable {
    /// Lowercased names of the credential's header fields.
    let headerNames: Set<String>
    /// `scheme://host:port` of the other origins that may receive it.
    let additionalOrigins: Set<String>
    /// Hashed once: a deduplicated request's key hashes its scope on every call.
    private let hash: Int

    init(headerNames: Set<String>, additionalOrigins: Set<String>) {
        self.headerNames = headerNames
        self.additionalOrigins = additionalOrigins
        var hasher = Hasher()
        hasher.combine(headerNames)
        hasher.combine(additionalOrigins)
        hash = hasher.finalize()
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }

    static func == (lhs: CredentialScope, rhs: CredentialScope) -> Bool {
        lhs.hash == rhs.hash && lhs.headerNames == rhs.headerNames && lhs.additionalOrigins == rhs.additionalOrigins
    }
}

extension CredentialScope {
    /// Whether the credential may go to `origin` (see ``Origin/of(_:)``): the origin of the configured base URL,
    /// `configured`, or one the authenticating client names. An unknown origin never may.
    func allows(_ origin: String?, configured: String?) -> Bool {
        guard let origin else { return false }
        return origin == configured || additionalOrigins.contains(origin)
    }

    /// Whether the header field `name`, in any case, is one of the credential's.
    func covers(_ name: String) -> Bool {
        headerNames.contains(name.lowercased())
    }
}
