import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Why a server's certificate chain did not verify: expired (or not yet valid), or not issued by a trusted authority.
///
/// BoringSSL knows (it sends the server the alert that says which) but reports only `CERTIFICATE_VERIFY_FAILED`, and
/// AsyncHTTPClient offers no verification callback. So after such a failure the transport opens one more connection
/// to the same host and port, reads the chain the server presents in a TLS handshake it then aborts (no request is
/// sent), and looks at the dates: a certificate of the chain outside its validity period means a bad date; a chain
/// whose dates are right failed for its issuer (an unknown or self-signed authority, a missing intermediate).
enum CertificateDiagnosis {
    /// The code for a chain that did not verify at `host`:`port`; `.serverCertificateUntrusted` when the chain could
    /// not be read within `timeout`.
    static func code(host: String, port: Int, timeout: TimeAmount) async -> URLError.Code {
        guard let chain = await presentedChain(host: host, port: port, timeout: timeout), !chain.isEmpty else {
            return .serverCertificateUntrusted
        }
        return code(
            for: chain.map { (notValidBefore: Int64($0.notValidBefore), notValidAfter: Int64($0.notValidAfter)) })
    }

    /// The code for a chain, from each certificate's validity period (seconds since 1970) and the time `now`.
    static func code(
        for validity: [(notValidBefore: Int64, notValidAfter: Int64)], now: Int64 = Int64(time(nil))
    ) -> URLError.Code {
        if validity.contains(where: { now < $0.notValidBefore || now > $0.notValidAfter }) {
            return .serverCertificateHasBadDate
        }
        return validity.isEmpty ? .serverCertificateUntrusted : .serverCertificateHasUnknownRoot
    }

    /// A client context whose verification only records the chain and refuses it.
    private static let context: NIOSSLContext? = {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates([])
        configuration.shutdownTimeout = .zero
        return try? NIOSSLContext(configuration: configuration)
    }()

    /// The certificates the server at `host`:`port` presents, leaf first; `nil` when the handshake did not get that
    /// far within `timeout`.
    private static func presentedChain(host: String, port: Int, timeout: TimeAmount) async -> [NIOSSLCertificate]? {
        guard let context else { return nil }
        let chain = NIOLockedValueBox<[NIOSSLCertificate]?>(nil)
        let serverName = host.isIPAddress ? nil : host
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(
                        context: context, serverHostname: serverName,
                        customVerificationCallback: { certificates, verdict in
                            chain.withLockedValue { $0 = certificates }
                            verdict.succeed(.failed)
                        })
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        guard let channel = try? await bootstrap.connect(host: host, port: port).get() else { return nil }
        // The refused verification ends the handshake and closes the connection; the timeout bounds a server that
        // never sends its certificate, and the caller's cancellation ends the wait at once.
        let limit = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        await withTaskCancellationHandler {
            try? await channel.closeFuture.get()
        } onCancel: {
            channel.close(promise: nil)
        }
        limit.cancel()
        return chain.withLockedValue { $0 }
    }
}

extension String {
    /// Whether the string is an IPv4 or IPv6 address (never sent as SNI).
    fileprivate var isIPAddress: Bool {
        var ipv4 = in_addr()
        var ipv6 = in6_addr()
        return inet_pton(AF_INET, self, &ipv4) == 1 || inet_pton(AF_INET6, self, &ipv6) == 1
    }
}
