import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The `URLError` code Apple's URLSession reports for the TLS failure that libcurl describes as `detail`, or `nil`
/// when `detail` is not one of libcurl's TLS failures.
///
/// corelibs reports every TLS failure as `URLError(.unknown)` with libcurl's text as the description, so a `catch`
/// written against Apple's codes never fires on Linux. `platformErrorCode(_:detail:)` calls this on Linux only;
/// the text stays in the error's description. The texts are libcurl 7.88's with OpenSSL 3.0 (Debian 12), and the
/// wording of the other curl releases where it differs:
///
/// | libcurl's text | Code |
/// | --- | --- |
/// | "SSL certificate problem: certificate has expired" or "… certificate is not yet valid" | `.serverCertificateHasBadDate` |
/// | "SSL certificate problem: " with any other reason ("self-signed certificate", "unable to get local issuer certificate", "certificate revoked", …) | `.serverCertificateUntrusted` |
/// | "SSL: no alternative certificate subject name matches target host name …", "SSL: certificate subject name … does not match target host name …" | `.serverCertificateUntrusted` (what Apple reports for a wrong host) |
/// | "SSL peer certificate or SSH remote key was not OK" (curl's generic text for the same failure) | `.serverCertificateUntrusted` |
/// | "… alert certificate required" (a TLS 1.3 server that wants a client certificate) | `.clientCertificateRequired` |
/// | "OpenSSL SSL_connect: …" (the server closed or reset during the handshake), "OpenSSL/3.0.19: error:…:SSL routines::…" ("wrong version number": the port does not speak TLS; "alert handshake failure"; …), "SSL connect error", "TLS connect error" | `.secureConnectionFailed` |
/// | "error setting certificate file: …", "error setting certificate path: …", "error setting certificate verify locations …" (the system CA bundle is missing or unreadable) | `.secureConnectionFailed` |
///
/// A failure while reading after the handshake ("OpenSSL SSL_read: …") is left as it is, apart from the client
/// certificate alert, which TLS 1.3 delivers only then.
func tlsErrorCode(libcurlText detail: String) -> URLError.Code? {
    if detail.hasPrefix("SSL certificate problem: ") {
        let dateProblems = ["certificate has expired", "certificate is not yet valid"]
        let isDateProblem = dateProblems.contains { detail.contains($0) }
        return isDateProblem ? .serverCertificateHasBadDate : .serverCertificateUntrusted
    }
    let untrusted = [
        "SSL: no alternative certificate subject name matches", "SSL: certificate subject name",
        "SSL: unable to obtain common name from peer certificate", "SSL peer certificate or SSH remote key was not OK",
    ]
    if untrusted.contains(where: { detail.hasPrefix($0) }) { return .serverCertificateUntrusted }
    if detail.contains("alert certificate required") { return .clientCertificateRequired }
    if detail.hasPrefix("OpenSSL SSL_read") || detail.hasPrefix("OpenSSL SSL_write") { return nil }
    let handshake = [
        "OpenSSL SSL_connect", "SSL connect error", "TLS connect error", "error setting certificate file",
        "error setting certificate path", "error setting certificate verify locations",
    ]
    if handshake.contains(where: { detail.hasPrefix($0) }) { return .secureConnectionFailed }
    // "OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number" (curl 7.88), or without the version prefix
    // and with OpenSSL 1.1's function names ("error:1408F10B:SSL routines:ssl3_get_record:wrong version number").
    if detail.contains("SSL routines:") { return .secureConnectionFailed }
    return nil
}
