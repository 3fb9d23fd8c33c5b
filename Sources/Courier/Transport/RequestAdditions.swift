import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a transport adds to a request when it sends it: what the server receives besides the request's own header
/// fields (``HTTPTransport/additions(to:)``).
///
/// A server may answer differently to each of them, so a ``ResponseCache`` files a response under them as it does
/// under the request's own credentials: two configurations that share one cache, whose sessions send different
/// `Authorization` fields, cookies or stored credentials, never get each other's responses. Courier's `URLSession`
/// transports report their session's `httpAdditionalHeaders`, the cookies its `httpCookieStorage` holds for the URL
/// (when `httpShouldSetCookies`), and the credentials its `urlCredentialStorage` holds for the URL's host, port and
/// scheme (any realm), which `URLSession` answers an authentication challenge with.
public struct RequestAdditions: Sendable, Hashable {
    /// Header fields sent with the request unless it has a field of the same name (compared ignoring case): the
    /// request's own value wins, as with `URLSession`'s `httpAdditionalHeaders`. Empty by default.
    public var headerFields: [String: String]
    /// Everything else the transport may send that a server can answer differently to, each as text that changes
    /// when what is sent changes: the cookies it adds, the credentials it answers a challenge with. Courier never logs
    /// them and never writes them in the clear: a ``ResponseCache`` keeps only a salted digest of them in its key.
    /// Empty by default.
    public var credentials: [String]

    /// Creates the additions of a transport.
    /// - Parameters:
    ///   - headerFields: The header fields the transport sends unless the request has its own; empty by default.
    ///   - credentials: The other state it sends (cookies, challenge credentials), as text; empty by default.
    public init(headerFields: [String: String] = [:], credentials: [String] = []) {
        self.headerFields = headerFields
        self.credentials = credentials
    }

    /// Nothing added: the transport sends the request as it is (the default of ``HTTPTransport/additions(to:)``).
    public static let none = RequestAdditions()
}

extension RequestAdditions {
    /// `request` as the server receives it: with each of ``headerFields`` it has no field of that name for.
    func applied(to request: URLRequest) -> URLRequest {
        guard !headerFields.isEmpty else { return request }
        var wire = request
        for (name, value) in headerFields where request.value(forHTTPHeaderField: name) == nil {
            wire.setValue(value, forHTTPHeaderField: name)
        }
        return wire
    }
}
