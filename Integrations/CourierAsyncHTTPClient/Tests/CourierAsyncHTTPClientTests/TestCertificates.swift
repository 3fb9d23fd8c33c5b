import Crypto
import Foundation
import NIOSSL
import X509

/// A private certificate authority made in the test, and certificates it issues for localhost.
struct TestAuthority {
    let key = P256.Signing.PrivateKey()
    let certificate: Certificate

    init(name: String) throws {
        let subject = try DistinguishedName { CommonName(name) }
        let now = Date()
        certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3_600), notValidAfter: now.addingTimeInterval(3_600),
            issuer: subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(key))
    }

    var pem: String { get throws { try certificate.serializeAsPEM().pemString } }

    /// A certificate for a server (named `dnsName`, localhost by default), or for a client, valid during `validity`
    /// (from an hour ago to an hour from now by default).
    func issue(
        commonName: String, forServer: Bool, dnsName: String = "localhost", validity: Range<Date>? = nil
    ) throws -> (certificatePEM: String, keyPEM: String) {
        let leafKey = P256.Signing.PrivateKey()
        let now = Date()
        let validity = validity ?? now.addingTimeInterval(-3_600)..<now.addingTimeInterval(3_600)
        let extensions: Certificate.Extensions
        if forServer {
            extensions = try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([.dnsName(dnsName)])
            }
        } else {
            extensions = try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.clientAuth])
            }
        }
        let leaf = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(leafKey.publicKey),
            notValidBefore: validity.lowerBound, notValidAfter: validity.upperBound,
            issuer: certificate.subject, subject: try DistinguishedName { CommonName(commonName) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions,
            issuerPrivateKey: .init(key))
        return (try leaf.serializeAsPEM().pemString, leafKey.pemRepresentation)
    }

    /// A server's TLS configuration with a certificate from this authority (for `dnsName`, valid during `validity`);
    /// `clientAuthority` requires a client certificate it issued.
    func serverTLS(
        requiringClientsOf clientAuthority: TestAuthority? = nil, dnsName: String = "localhost",
        validity: Range<Date>? = nil
    ) throws -> TLSConfiguration {
        let (certificatePEM, keyPEM) = try issue(
            commonName: dnsName, forServer: true, dnsName: dnsName, validity: validity)
        let chain = try NIOSSLCertificate.fromPEMBytes(Array(certificatePEM.utf8)).map {
            NIOSSLCertificateSource.certificate($0)
        }
        let key = NIOSSLPrivateKeySource.privateKey(try NIOSSLPrivateKey(bytes: Array(keyPEM.utf8), format: .pem))
        guard let clientAuthority else {
            return TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: key)
        }
        let roots = try NIOSSLCertificate.fromPEMBytes(Array(clientAuthority.pem.utf8))
        return TLSConfiguration.makeServerConfigurationWithMTLS(
            certificateChain: chain, privateKey: key, trustRoots: .certificates(roots))
    }

    /// A server's TLS configuration with a self-signed certificate for localhost (no authority vouches for it).
    static func selfSignedServerTLS() throws -> TLSConfiguration {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("localhost") }
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3_600), notValidAfter: now.addingTimeInterval(3_600),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([.dnsName("localhost")])
            },
            issuerPrivateKey: .init(key))
        let chain = try NIOSSLCertificate.fromPEMBytes(Array(try certificate.serializeAsPEM().pemString.utf8))
        let privateKey = try NIOSSLPrivateKey(bytes: Array(key.pemRepresentation.utf8), format: .pem)
        return TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(privateKey))
    }
}
