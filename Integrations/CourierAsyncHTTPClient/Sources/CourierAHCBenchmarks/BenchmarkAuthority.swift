import Crypto
import Foundation
import NIOSSL
import X509

/// A private certificate authority made in the process, as the tests make theirs (`TestCertificates.swift`): P-256,
/// valid for an hour either side of now, and a server certificate it issues for localhost.
struct BenchmarkAuthority {
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

    /// A server's TLS configuration with a certificate from this authority for localhost.
    func serverTLS() throws -> TLSConfiguration {
        let leafKey = P256.Signing.PrivateKey()
        let now = Date()
        let leaf = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(leafKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3_600), notValidAfter: now.addingTimeInterval(3_600),
            issuer: certificate.subject, subject: try DistinguishedName { CommonName("localhost") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([.dnsName("localhost")])
            },
            issuerPrivateKey: .init(key))
        let chain = try NIOSSLCertificate.fromPEMBytes(Array(try leaf.serializeAsPEM().pemString.utf8)).map {
            NIOSSLCertificateSource.certificate($0)
        }
        let privateKey = try NIOSSLPrivateKey(bytes: Array(leafKey.pemRepresentation.utf8), format: .pem)
        return TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(privateKey))
    }
}
