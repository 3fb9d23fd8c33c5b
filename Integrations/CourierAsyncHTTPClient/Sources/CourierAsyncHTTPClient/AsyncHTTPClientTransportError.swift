import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
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
    /// NIOSSL threw (a `URLError` stays as it is). The code says why, as Apple's `URLSession` would, and the
    /// description is a fixed text for that reason: never the library's own text, which can carry a host name, a
    /// header's value, bytes the server sent or a source path of the machine that built the TLS library.
    ///
    /// | Error | Code |
    /// | --- | --- |
    /// | the server's certificate does not verify against the trust roots | `.serverCertificateUntrusted` (see below) |
    /// | the server's certificate is for another host | `.serverCertificateUntrusted` |
    /// | the server wanted a client certificate and got none | `.clientCertificateRequired` |
    /// | the server refused the client certificate | `.clientCertificateRejected` |
    /// | another TLS handshake failure | `.secureConnectionFailed` |
    /// | the host name could not be resolved | `.cannotFindHost` |
    /// | the connection was refused or could not be made | `.cannotConnectToHost` |
    /// | the connect timeout passed | `.timedOut` |
    /// | the connection closed mid-exchange (over TLS too, without `close_notify`) | `.networkConnectionLost` |
    /// | the response head or its framing is malformed (too large, a bad status line or field) | `.badServerResponse` |
    /// | the response body could not be decompressed | `.cannotDecodeContentData` |
    /// | the proxy wants authentication | `.userAuthenticationRequired` |
    /// | the URL cannot be sent (no host, a scheme AsyncHTTPClient does not speak) | `.badURL` / `.unsupportedURL` |
    /// | cancelled | `.cancelled` |
    /// | ``clientFollowsRedirects`` | `.httpTooManyRedirects` |
    ///
    /// Any other error becomes `.unknown`, its description naming its type. A certificate that does not verify is
    /// `.serverCertificateUntrusted` here; ``AsyncHTTPClientTransport`` says more when it sends: an expired or
    /// not-yet-valid certificate is `.serverCertificateHasBadDate`, one not issued by a trusted authority
    /// `.serverCertificateHasUnknownRoot` (see ``AsyncHTTPClientTransport/send(_:)``).
    public static func urlError(for error: any Error) -> URLError {
        if let error = error as? URLError { return error }
        let (code, text) = reason(for: error)
        return urlError(code, text)
    }

    /// A `URLError` with `code` and the fixed description `text`.
    static func urlError(_ code: URLError.Code, _ text: String) -> URLError {
        URLError(code, userInfo: [NSLocalizedDescriptionKey: text])
    }

    /// The code and the fixed text for `error`.
    static func reason(for error: any Error) -> (URLError.Code, String) {
        if error is CancellationError { return (.cancelled, "the request was cancelled") }
        if let error = error as? AsyncHTTPClientTransportError {
            return error == .clientFollowsRedirects
                ? (.httpTooManyRedirects, error.description) : (.unknown, "\(error)")
        }
        if let error = error as? NIOSSLError {
            switch error {
            case .handshakeFailed(let inner): return tlsReason(String(describing: inner))
            case .uncleanShutdown: return (.networkConnectionLost, Text.connectionLost)
            default: return (.secureConnectionFailed, Text.tlsFailed)
            }
        }
        // After a TLS 1.3 handshake, the server's alert (it wanted a client certificate) arrives as a read error.
        if let error = error as? BoringSSLError { return tlsReason(String(describing: error)) }
        if let error = error as? NIOSSLExtraError {
            return error == .failedToValidateHostname
                ? (.serverCertificateUntrusted, Text.wrongHost) : (.secureConnectionFailed, Text.tlsFailed)
        }
        if let error = error as? NIOConnectionError {
            let resolved = !error.connectionErrors.isEmpty || (error.dnsAError == nil && error.dnsAAAAError == nil)
            return resolved
                ? (.cannotConnectToHost, Text.cannotConnect)
                : (.cannotFindHost, "the server's host name could not be resolved")
        }
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNREFUSED, EHOSTUNREACH, ENETUNREACH: return (.cannotConnectToHost, Text.cannotConnect)
            case ECONNRESET, EPIPE: return (.networkConnectionLost, Text.connectionLost)
            case ETIMEDOUT: return (.timedOut, Text.timedOut)
            default: return (.unknown, "a socket operation failed (errno \(error.errnoCode))")
            }
        }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout: return (.timedOut, Text.connectTimeout)
            case .ioOnClosedChannel, .outputClosed, .eof, .alreadyClosed:
                return (.networkConnectionLost, Text.connectionLost)
            default: return (.unknown, "SwiftNIO failed (\(caseName(of: error)))")
            }
        }
        if let error = error as? HTTPParserError {
            // The connection closed before the body's declared end: what URLSession calls a lost connection.
            if error == .invalidEOFState || error == .closedConnection {
                return (.networkConnectionLost, Text.connectionLost)
            }
            return (.badServerResponse, malformedResponse(error))
        }
        if error is NIOHTTPDecompression.DecompressionError || error is NIOHTTPDecompression.ExtraDecompressionError {
            return (.cannotDecodeContentData, "the response body could not be decompressed")
        }
        if let error = error as? HTTPClientError { return clientReason(error) }
        return (.unknown, "the transport failed with \(type(of: error))")
    }

    /// The code and text of AsyncHTTPClient's own errors.
    private static func clientReason(_ error: HTTPClientError) -> (URLError.Code, String) {
        switch error {
        case .connectTimeout, .tlsHandshakeTimeout, .socksHandshakeTimeout, .httpProxyHandshakeTimeout:
            return (.timedOut, Text.connectTimeout)
        case .readTimeout, .writeTimeout, .deadlineExceeded, .getConnectionFromPoolTimeout:
            return (.timedOut, Text.timedOut)
        case .remoteConnectionClosed, .uncleanShutdown: return (.networkConnectionLost, Text.connectionLost)
        case .cancelled, .requestStreamCancelled: return (.cancelled, "the request was cancelled")
        case .proxyAuthenticationRequired: return (.userAuthenticationRequired, "the proxy requires authentication")
        case .emptyHost, .invalidURL, .emptyScheme: return (.badURL, "the URL cannot be sent: it has no host or scheme")
        default:
            // `description` names the case and carries its values (a host, a header); `shortDescription` never does.
            if String(describing: error).hasPrefix("HTTPClientError.unsupportedScheme") {
                return (.unsupportedURL, "AsyncHTTPClient does not speak the URL's scheme")
            }
            return (.unknown, "AsyncHTTPClient failed (\(error.shortDescription))")
        }
    }

    /// The code and text of a failed handshake, from BoringSSL's reason (`CERTIFICATE_VERIFY_FAILED`, an alert the
    /// server sent). Only the reason is read; the text, which names a source file of the machine that built the
    /// library, is never passed on.
    private static func tlsReason(_ reason: String) -> (URLError.Code, String) {
        if reason.contains("CERTIFICATE_VERIFY_FAILED") { return (.serverCertificateUntrusted, Text.chainUntrusted) }
        if reason.contains("CERTIFICATE_REQUIRED") {
            return (.clientCertificateRequired, "the server requires a client certificate")
        }
        // The server's alerts about the certificate the client presented.
        let rejected = [
            "ALERT_BAD_CERTIFICATE", "ALERT_UNKNOWN_CA", "ALERT_CERTIFICATE_EXPIRED",
            "ALERT_CERTIFICATE_REVOKED", "ALERT_UNSUPPORTED_CERTIFICATE", "ALERT_CERTIFICATE_UNKNOWN",
        ]
        if rejected.contains(where: reason.contains) {
            return (.clientCertificateRejected, "the server rejected the client certificate")
        }
        return (.secureConnectionFailed, Text.tlsFailed)
    }

    /// Whether `error` is a certificate chain that did not verify, which ``CertificateDiagnosis`` can tell more of.
    static func isUnverifiedChain(_ error: any Error) -> Bool {
        if case .handshakeFailed(let inner) = error as? NIOSSLError {
            return String(describing: inner).contains("CERTIFICATE_VERIFY_FAILED")
        }
        return false
    }

    /// What was malformed in the response, from the parser's error case (never its input).
    private static func malformedResponse(_ error: HTTPParserError) -> String {
        switch error {
        case .headerOverflow: "the response head is larger than the parser's 80 KiB limit"
        case .invalidVersion, .invalidStatus, .invalidConstant: "the response's status line is malformed"
        case .invalidHeaderToken, .invalidCharactersUsed, .lfExpected:
            "a field of the response head is malformed"
        case .invalidContentLength, .unexpectedContentLength:
            "the response's Content-Length is malformed, repeated with another value or beside Transfer-Encoding"
        case .invalidChunkSize: "the response's chunked body is malformed"
        case .trailingGarbage: "bytes followed the end of the response"
        default: "the response is malformed (HTTPParserError.\(caseName(of: error)))"
        }
    }

    /// The name of `error`'s case, without the values some cases carry (a header's, a host's).
    private static func caseName(of error: any Error) -> String {
        let text = String(describing: error)
        return String(text.prefix { $0 != "(" })
    }

    /// The fixed texts used for more than one error.
    enum Text {
        static let timedOut = "The request timed out."
        static let connectTimeout = "the connection could not be made within the connect timeout"
        static let cannotConnect = "the connection to the server could not be made"
        static let connectionLost = "the connection closed before the response was complete"
        static let tlsFailed = "the TLS handshake failed"
        static let chainUntrusted = "the server's certificate did not verify against the trust roots"
        static let wrongHost = "the server's certificate is not valid for the host name the request was sent to"
        static let badDate = "the server's certificate (or one in its chain) has expired or is not yet valid"
        static let unknownRoot = "the server's certificate is not issued by a certificate authority the client trusts"
    }
}
