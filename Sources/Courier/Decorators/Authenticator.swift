import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Supplies a credential, puts it on a request, and renews it after the server rejected it: what
/// `authenticated(by:)` needs. ``BearerTokenAuthenticator`` is a ready one for `Authorization: Bearer` tokens.
public protocol Authenticator: Sendable {
    /// The credential, for example an access token. Compared to tell a stale credential from the current one.
    associatedtype Credential: Sendable & Equatable

    /// The credential to send now. Called once per request, unless a renewal is in progress (then the request waits
    /// for the renewed credential instead).
    /// - Throws: Any error; the request fails with it, unchanged, and nothing is sent.
    func credential() async throws -> Credential

    /// Puts `credential` on a request's header fields (replacing any field of the same name, in any case).
    func apply(_ credential: Credential, to headers: inout [String: String])

    /// A new credential, given the one the server rejected. `authenticated(by:)` calls it at most once for a
    /// rejected credential, however many requests were rejected with it.
    /// - Throws: Any error; every request waiting for this renewal fails with it, unchanged.
    func refresh(rejected: Credential) async throws -> Credential

    /// Whether `error` means the server rejected the credential. The default implementation says yes to
    /// ``NetworkClientError/unacceptableStatusCode(statusCode:response:data:)`` with status 401.
    func isRejection(_ error: any Error) -> Bool
}

extension Authenticator {
    /// `true` for a `401 Unauthorized` response.
    public func isRejection(_ error: any Error) -> Bool {
        guard case NetworkClientError.unacceptableStatusCode(401, _, _) = error else { return false }
        return true
    }
}

/// An ``Authenticator`` for OAuth-style bearer tokens, built from two closures; it sends
/// `Authorization: Bearer <token>`.
///
/// ```swift
/// let authenticator = BearerTokenAuthenticator(
///     token: { await tokenStore.accessToken },
///     refresh: { rejected in try await tokenStore.refresh(replacing: rejected) })
/// let client = NetworkClient(configuration: configuration).authenticated(by: authenticator)
/// ```
///
/// `refresh` should store the new token where `token` reads it, so that later requests start with it.
public struct BearerTokenAuthenticator: Authenticator {
    private let token: @Sendable () async throws -> String
    private let renew: @Sendable (_ rejected: String) async throws -> String

    /// Creates a bearer-token authenticator.
    /// - Parameters:
    ///   - token: The current access token. Its errors fail the request, unchanged, before anything is sent.
    ///   - refresh: A new access token, given the one the server rejected. Its errors fail every request waiting
    ///     for it, unchanged.
    public init(
        token: @escaping @Sendable () async throws -> String,
        refresh: @escaping @Sendable (_ rejected: String) async throws -> String
    ) {
        self.token = token
        self.renew = refresh
    }

    /// The current token, from `token`.
    /// - Throws: What `token` throws.
    public func credential() async throws -> String {
        try await token()
    }

    /// Sets `Authorization: Bearer <token>`, replacing any `Authorization` field already there.
    public func apply(_ credential: String, to headers: inout [String: String]) {
        for name in headers.keys where name.caseInsensitiveCompare("Authorization") == .orderedSame {
            headers[name] = nil
        }
        headers["Authorization"] = "Bearer " + credential
    }

    /// A new token, from `refresh`.
    /// - Throws: What `refresh` throws.
    public func refresh(rejected: String) async throws -> String {
        try await renew(rejected)
    }
}

/// Why `authenticated(by:)` gave up on a request without asking the authenticator again.
public enum AuthenticationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// More than `limit` renewals were needed within `window` seconds: the server keeps rejecting fresh credentials,
    /// so the client stops rather than renewing in a loop. The next request after the window tries again.
    case tooManyRefreshes(limit: Int, window: TimeInterval)

    /// A readable description, without any credential.
    public var description: String {
        switch self {
        case .tooManyRefreshes(let limit, let window):
            return "The credential was renewed \(limit) times within \(window) s and the server still rejects it; "
                + "not renewing again (refresh storm)."
        }
    }
}
