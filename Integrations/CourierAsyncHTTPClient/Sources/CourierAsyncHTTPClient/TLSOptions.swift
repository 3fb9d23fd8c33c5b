import AsyncHTTPClient
import NIOSSL

/// The TLS settings of an `HTTPClient` that ``AsyncHTTPClientTransport`` creates: which certificate authorities it
/// trusts, and the certificate it presents when a server asks for one (mTLS).
///
/// These are per client, which `URLSession` on Linux cannot do (it trusts only the system store, process-wide, and
/// presents no client certificate). Certificate pinning is not offered: `HTTPClient.Configuration` has no
/// certificate verification callback.
public struct TLSOptions: Sendable {
    /// Which certificate authorities a client trusts.
    public enum TrustRoots: Sendable, Equatable {
        /// The system's trust store (the default).
        case system
        /// Only the certificates in this PEM text (one or more `BEGIN CERTIFICATE` blocks): a private CA, with the
        /// system's store not trusted.
        case only(pem: String)
        /// The system's trust store and the certificates in this PEM text.
        case systemAnd(pem: String)
    }

    /// A certificate chain and its private key, presented when the server asks for a client certificate.
    public struct ClientIdentity: Sendable, Equatable {
        /// The client's certificate first, then any intermediates, as PEM.
        public var certificateChainPEM: String
        /// The certificate's private key, as PEM (RSA or ECDSA, unencrypted).
        public var privateKeyPEM: String

        /// An identity from PEM texts.
        public init(certificateChainPEM: String, privateKeyPEM: String) {
            self.certificateChainPEM = certificateChainPEM
            self.privateKeyPEM = privateKeyPEM
        }
    }

    /// Which certificate authorities are trusted; ``TrustRoots/system`` by default.
    public var trustRoots: TrustRoots
    /// The certificate presented when a server asks for one; `nil` (none) by default.
    public var clientIdentity: ClientIdentity?
    /// The oldest TLS version accepted; TLS 1.2 by default.
    public var minimumVersion: TLSVersion

    /// TLS settings; by default the system's trust store, no client certificate, TLS 1.2 or newer.
    public init(
        trustRoots: TrustRoots = .system, clientIdentity: ClientIdentity? = nil, minimumVersion: TLSVersion = .tlsv12
    ) {
        self.trustRoots = trustRoots
        self.clientIdentity = clientIdentity
        self.minimumVersion = minimumVersion
    }

    /// The NIOSSL configuration for a client. Hostnames are always verified, and a connection closes at once
    /// (`shutdownTimeout` zero): it sends its `close_notify` and does not wait for the server's. NIOSSL waits 5 seconds
    /// by default, reading whatever the server sends meanwhile, which kept a stopped exchange's connection open and
    /// reading.
    ///
    /// - Throws: ``AsyncHTTPClientTransportError/invalidPEM(_:)`` when a certificate or key cannot be read.
    public func makeTLSConfiguration() throws(AsyncHTTPClientTransportError) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = minimumVersion
        configuration.certificateVerification = .fullVerification
        configuration.shutdownTimeout = .zero
        switch trustRoots {
        case .system:
            configuration.trustRoots = .default
        case .only(let pem):
            configuration.trustRoots = .certificates(try Self.certificates(pem, what: "trust roots"))
        case .systemAnd(let pem):
            configuration.trustRoots = .default
            configuration.additionalTrustRoots = [.certificates(try Self.certificates(pem, what: "trust roots"))]
        }
        if let clientIdentity {
            let chain = try Self.certificates(clientIdentity.certificateChainPEM, what: "client certificate chain")
            configuration.certificateChain = chain.map { .certificate($0) }
            do {
                let key = try NIOSSLPrivateKey(bytes: Array(clientIdentity.privateKeyPEM.utf8), format: .pem)
                configuration.privateKey = .privateKey(key)
            } catch {
                throw .invalidPEM("client private key")
            }
        }
        return configuration
    }

    private static func certificates(
        _ pem: String, what: String
    ) throws(AsyncHTTPClientTransportError) -> [NIOSSLCertificate] {
        let certificates = try? NIOSSLCertificate.fromPEMBytes(Array(pem.utf8))
        guard let certificates, !certificates.isEmpty else { throw .invalidPEM(what) }
        return certificates
    }
}
