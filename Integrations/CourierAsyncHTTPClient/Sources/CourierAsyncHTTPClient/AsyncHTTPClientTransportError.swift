import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Why ``AsyncHTTPClientTransport`` cannot be created or cannot send.
public enum AsyncHTTPClientTransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The `HTTPClient` follows redirects: Courier follows them under its rules, so the client must not
    /// (`redirectConfiguration: .disallow`).
    case clientFollowsRedirects
    /// A PEM text in ``TLSOptions`` could not be read; the associated value names which (never its content).
    case invalidPEM(String)

    /// What went wrong, and how to fix it; never a PEM text.
    public var description: String {
        switch self {
        case .clientFollowsRedirects:
            "the HTTPClient follows redirects; Courier follows them: create it with redirectConfiguration: .disallow"
        case .invalidPEM(let what): "the \(what) is not valid PEM"
        }
    }

    /// The `URLError` Courier's callers and ``RetryPolicy`` understand, for an error AsyncHTTPClient, SwiftNIO or
    /// NIOSSL threw (a `URLError` stays as it is). The code says why, as Apple's `URLSession` would:
    ///
    /// | Error | Code |
    /// | --- | --- |
    /// | a certificate the trust roots do not vouch for, or for another host | `.serverCertificateUntrusted` |
    /// | the server wanted a client certificate | `.clientCertificateRequired` |
    /// | another TLS handshake failure | `.secureConnectionFailed` |
    /// | the connection was refused or could not be made | `.cannotConnectToHost` |
    /// | the connect or read timeout passed | `.timedOut` |
    /// | the connection closed mid-exchange | `.networkConnectionLost` |
    /// | the proxy wants authentication | `.userAuthenticationRequired` |
    /// | the URL cannot be sent (no host, a scheme AsyncHTTPClient does not speak) | `.badURL` / `.unsupportedURL` |
    /// | cancelled | `.cancelled` |
    /// | ``clientFollowsRedirects`` | `.httpTooManyRedirects` |
    ///
    /// Any other error becomes `.unknown`; its type is named in the description, never its text (which may carry a
    /// URL's secrets).
    public static func urlError(for error: any Error) -> URLError {
        if let error = error as? URLError { return error }
        return URLError(
            code(for: error), userInfo: [NSLocalizedDescriptionKey: "\(type(of: error)): \(name(of: error))"])
    }

    static func code(for error: any Error) -> URLError.Code {
        if error is CancellationError { return .cancelled }
        if let error = error as? AsyncHTTPClientTransportError {
            return error == .clientFollowsRedirects ? .httpTooManyRedirects : .unknown
        }
        if let error = error as? NIOSSLError {
            if case .handshakeFailed(let inner) = error { return tlsCode(String(describing: inner)) }
            return .secureConnectionFailed
        }
        // After a TLS 1.3 handshake, the server's alert (it wanted a client certificate) arrives as a read error.
        if let error = error as? BoringSSLError { return tlsCode(String(describing: error)) }
        if let error = error as? NIOSSLExtraError {
            return error == .failedToValidateHostname ? .serverCertificateUntrusted : .secureConnectionFailed
        }
        if error is NIOConnectionError { return .cannotConnectToHost }
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNREFUSED, EHOSTUNREACH, ENETUNREACH: return .cannotConnectToHost
            case ECONNRESET, EPIPE: return .networkConnectionLost
            default: return .unknown
            }
        }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout: return .timedOut
            case .ioOnClosedChannel, .outputClosed, .eof, .alreadyClosed: return .networkConnectionLost
            default: return .unknown
            }
        }
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout, .readTimeout, .writeTimeout, .deadlineExceeded, .tlsHandshakeTimeout,
                .socksHandshakeTimeout, .httpProxyHandshakeTimeout, .getConnectionFromPoolTimeout:
                return .timedOut
            case .remoteConnectionClosed, .uncleanShutdown: return .networkConnectionLost
            case .cancelled, .requestStreamCancelled: return .cancelled
            case .proxyAuthenticationRequired: return .userAuthenticationRequired
            case .emptyHost, .invalidURL, .emptyScheme: return .badURL
            default: return String(describing: error).contains("unsupportedScheme") ? .unsupportedURL : .unknown
            }
        }
        return .unknown
    }

    /// The code for a failed handshake, from BoringSSL's reason (`CERTIFICATE_VERIFY_FAILED`, an alert the server
    /// sent).
    private static func tlsCode(_ reason: String) -> URLError.Code {
        if reason.contains("CERTIFICATE_VERIFY_FAILED") { return .serverCertificateUntrusted }
        if reason.contains("CERTIFICATE_REQUIRED") { return .clientCertificateRequired }
        return .secureConnectionFailed
    }

    /// A name for `error` safe to show: the case of AsyncHTTPClient's and NIO's errors (without the values some
    /// carry, such as a header's), the code of others.
    private static func name(of error: any Error) -> String {
        if error is HTTPClientError || error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError
            || error is ChannelError
        {
            let text = String(describing: error)
            // A failed handshake keeps BoringSSL's reason, which names no secret; other values are cut off.
            if error is NIOSSLError || error is BoringSSLError { return text }
            return String(text.prefix { $0 != "(" })
        }
        return String(describing: code(for: error))
    }
}
