import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

#if canImport(Glibc)
import Glibc
#endif

/// TLS failures get the `URLError` codes Apple's URLSession reports, so that one `catch` works on every platform.
///
/// On Linux corelibs reports every TLS failure as `URLError(.unknown)` with libcurl's text as the description (and a
/// copy of it in an underlying `NSError`, also `.unknown`). Courier classifies that text; these tests check the
/// classifier on libcurl's exact texts, and the whole path against loopback servers with certificates made here.
///
/// corelibs trusts only the system trust store, which a test must not modify. A certificate from the test's own CA
/// therefore always fails at the chain ("unable to get local issuer certificate") before libcurl looks at its dates
/// or names: "expired" and "wrong host" are asserted on libcurl's texts (taken from curl 7.88.1 with the CA trusted),
/// and against a live server only as what they are without that trust.
@Suite("HTTPS on Linux")
struct HTTPSOnLinuxTests {
    // MARK: The classifier, on libcurl's texts

    /// libcurl 7.88.1 with OpenSSL 3.0 (Debian 12), as corelibs puts it in the description, and the wording of other
    /// releases.
    static let tlsTexts: [(text: String, code: URLError.Code)] = [
        ("SSL certificate problem: self-signed certificate", .serverCertificateUntrusted),
        ("SSL certificate problem: self signed certificate", .serverCertificateUntrusted),
        ("SSL certificate problem: self-signed certificate in certificate chain", .serverCertificateUntrusted),
        ("SSL certificate problem: unable to get local issuer certificate", .serverCertificateUntrusted),
        ("SSL certificate problem: certificate revoked", .serverCertificateUntrusted),
        ("SSL certificate problem: certificate has expired", .serverCertificateHasBadDate),
        ("SSL certificate problem: certificate is not yet valid", .serverCertificateHasBadDate),
        (
            "SSL: no alternative certificate subject name matches target host name '127.0.0.1'",
            .serverCertificateUntrusted
        ),
        (
            "SSL: certificate subject name 'other.example' does not match target host name '127.0.0.1'",
            .serverCertificateUntrusted
        ),
        ("SSL peer certificate or SSH remote key was not OK", .serverCertificateUntrusted),
        (
            "OpenSSL SSL_read: OpenSSL/3.0.19: error:0A00045C:SSL routines::tlsv13 alert certificate required, errno 0",
            .clientCertificateRequired
        ),
        ("OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number", .secureConnectionFailed),
        ("OpenSSL/3.0.19: error:0A000410:SSL routines::sslv3 alert handshake failure", .secureConnectionFailed),
        ("error:1408F10B:SSL routines:ssl3_get_record:wrong version number", .secureConnectionFailed),
        ("OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to 127.0.0.1:32771 ", .secureConnectionFailed),
        ("OpenSSL SSL_connect: Connection reset by peer in connection to example.com:443 ", .secureConnectionFailed),
        ("SSL connect error", .secureConnectionFailed),
        ("error setting certificate file: /etc/ssl/certs/ca-certificates.crt", .secureConnectionFailed),
    ]

    /// Failures that are not TLS failures, or that happen after the handshake, keep their code.
    static let otherTexts = [
        "transfer closed with 92 bytes remaining to read",
        "OpenSSL SSL_read: SSL_ERROR_SYSCALL, errno 104",
        "OpenSSL SSL_read: OpenSSL/3.0.19: error:0A000126:SSL routines::unexpected eof while reading, errno 0",
        "Recv failure: Connection reset by peer",
        "Empty reply from server",
        "Received HTTP/0.9 when not allowed",
    ]

    @Test("libcurl's TLS texts map to Apple's codes", arguments: tlsTexts)
    func classifiesTLSText(_ text: String, _ code: URLError.Code) {
        #expect(tlsErrorCode(libcurlText: text) == code)
    }

    @Test("Texts that are not TLS failures are not classified", arguments: otherTexts)
    func leavesOtherTexts(_ text: String) {
        #expect(tlsErrorCode(libcurlText: text) == nil)
    }

    @Test("The error Courier reports for a libcurl TLS text has Apple's code and keeps the text and no secret")
    func mappedErrorKeepsTheText() throws {
        let url = try #require(URL(string: "https://user:PASSWORD@127.0.0.1:8443/x?token=SECRET"))
        let text = "SSL certificate problem: certificate has expired"
        // What corelibs throws: the full URL twice, and libcurl's text in the description and an underlying error.
        let thrown = URLError(
            .unknown,
            userInfo: [
                NSLocalizedDescriptionKey: text, NSURLErrorFailingURLErrorKey: url,
                "NSErrorFailingURLStringKey": url.absoluteString,
                NSUnderlyingErrorKey: NSError(
                    domain: NSURLErrorDomain, code: -1, userInfo: [NSLocalizedDescriptionKey: text]),
            ])
        let error = NetworkClientError.transportFailed(Redaction.urlError(thrown, url: url))
        guard case .transportFailed(let urlError) = error else { throw ExpectedAFailure() }
        #if canImport(FoundationNetworking)
        #expect(urlError.code == .serverCertificateHasBadDate)
        #else
        #expect(urlError.code == .unknown)  // Apple platforms report their own codes; Courier keeps them.
        #endif
        #expect(String(describing: error).contains(text), "\(error)")
        var dumped = ""
        dump(error, to: &dumped)
        #expect(!dumped.contains("PASSWORD") && !dumped.contains("SECRET"), "\(dumped)")
    }

    // MARK: Against loopback servers

    #if canImport(FoundationNetworking)
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A self-signed certificate is serverCertificateUntrusted, described by libcurl, with the URL redacted",
        .enabled(if: TLSTestServer.toolsAvailable, TLSTestServer.toolsMissing))
    func selfSigned() async throws {
        await fewDescriptorsOpen()
        let pki = try TestPKI()
        let server = try TLSTestServer(.tls(certificate: try pki.selfSigned()))
        defer { server.stop() }
        let base = try #require(URL(string: "https://user:PASSWORD@127.0.0.1:\(server.port)"))
        let client = NetworkClient(configuration: NetworkConfiguration(baseURL: base))
        let request = NetworkRequest<VoidRequest, String>(
            path: "x", method: .get, queryItems: [URLQueryItem(name: "token", value: "SECRET")])
        let error = try await #require(throws: NetworkClientError.self) { _ = try await client.run(request) }
        guard case .transportFailed(let urlError) = error else { throw ExpectedAFailure() }
        #expect(urlError.code == .serverCertificateUntrusted, "\(error)")
        #expect("\(error)".contains("SSL certificate problem: self-signed certificate"), "\(error)")
        var dumped = ""
        dump(error, to: &dumped)
        #expect(!dumped.contains("PASSWORD") && !dumped.contains("SECRET"), "\(dumped)")
    }

    /// The leaves the test CA signs; the CA is not in the system trust store.
    enum Leaf: String, CaseIterable, Sendable {
        case valid, expired, wrongHost
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A certificate from a CA outside the system trust store is serverCertificateUntrusted, whatever else is wrong",
        .enabled(if: TLSTestServer.toolsAvailable, TLSTestServer.toolsMissing), arguments: Leaf.allCases)
    func untrustedCA(_ leaf: Leaf) async throws {
        await fewDescriptorsOpen()
        let pki = try TestPKI()
        let certificate: TestPKI.Certificate
        switch leaf {
        case .valid: certificate = try pki.leaf(named: "valid", subjectAltName: "IP:127.0.0.1", days: 2)
        case .expired: certificate = try pki.leaf(named: "expired", subjectAltName: "IP:127.0.0.1", days: -1)
        case .wrongHost: certificate = try pki.leaf(named: "other", subjectAltName: "DNS:other.example", days: 2)
        }
        let server = try TLSTestServer(.tls(certificate: certificate))
        defer { server.stop() }
        let error = try await #require(throws: NetworkClientError.self) {
            _ = try await server.client().run(NetworkRequest<VoidRequest, String>(method: .get))
        }
        guard case .transportFailed(let urlError) = error else { throw ExpectedAFailure() }
        // libcurl verifies the chain first and stops there: the date and the name are never looked at.
        #expect(urlError.code == .serverCertificateUntrusted, "\(error)")
        #expect("\(error)".contains("unable to get local issuer certificate"), "\(error)")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A server that answers plain HTTP on the HTTPS port is secureConnectionFailed",
        .enabled(if: TLSTestServer.pythonAvailable, "needs python3 on PATH"))
    func plainHTTP() async throws {
        await fewDescriptorsOpen()
        let server = try TLSTestServer(.plainHTTP)
        defer { server.stop() }
        let error = try await #require(throws: NetworkClientError.self) {
            _ = try await server.client().run(NetworkRequest<VoidRequest, String>(method: .get))
        }
        guard case .transportFailed(let urlError) = error else { throw ExpectedAFailure() }
        #expect(urlError.code == .secureConnectionFailed, "\(error)")
        #expect("\(error)".contains("wrong version number"), "\(error)")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A server that closes the connection during the handshake is secureConnectionFailed",
        .enabled(if: TLSTestServer.pythonAvailable, "needs python3 on PATH"))
    func abortedHandshake() async throws {
        await fewDescriptorsOpen()
        let server = try TLSTestServer(.closeAfterClientHello)
        defer { server.stop() }
        let error = try await #require(throws: NetworkClientError.self) {
            _ = try await server.client().run(NetworkRequest<VoidRequest, String>(method: .get))
        }
        guard case .transportFailed(let urlError) = error else { throw ExpectedAFailure() }
        #expect(urlError.code == .secureConnectionFailed, "\(error)")
        #expect("\(error)".contains("SSL_connect"), "\(error)")
    }

    // MARK: What Courier cannot fix

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("libcurl sends a POST again on a new connection when the kept-alive one closes after the server read it")
    func postResentAfterKeptAliveConnectionCloses() async throws {
        let postHeads = Locked(0)
        let server = try LoopbackServer(
            requestBodyMode: { method, _ in
                // Called when a request's head has arrived, before its body.
                if method == "POST" { postHeads.withLock { $0 += 1 } }
                return .buffer
            },
            handler: { request in
                // The first POST is read in full, then the connection closes without an answer.
                guard request.method == "POST" else { return .respond(status: 200, body: Data("ok".utf8)) }
                let first = request.connectionID == 0
                return first ? .raw(Data()) : .respond(status: 201, body: Data("created".utf8))
            })
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.timeoutIntervalForRequest = 2
        let client = NetworkClient(
            configuration: NetworkConfiguration(sessionConfiguration: sessionConfiguration, baseURL: server.baseURL))
        _ = try await client.run(NetworkRequest<VoidRequest, String>(path: "warm", method: .get))
        let order = NetworkRequest<Data, String>(path: "orders", method: .post, body: Data(#"{"item":1}"#.utf8))
        let outcome: Result<String, any Error>
        do { outcome = .success(try await client.run(order).value) } catch { outcome = .failure(error) }

        // The POST's head reached the server twice, the second time on a new connection: libcurl resent it on its
        // own (RetryPolicy had no part in it, and would not retry a POST).
        #expect(postHeads.withLock { $0 } == 2)
        #expect(server.connectionCount == 2)
        let bodies = server.recordedRequests.filter { $0.method == "POST" }.count
        switch outcome {
        case .success(let answer):
            // The body went out again too: the server executed the order twice, and the caller saw one success.
            #expect(bodies == 2 && answer == "created")
        case .failure(let error):
            // What happens here, run after run: the resend carries the head but not the body, and the call waits
            // out the idle timeout (the server waits for the body it was promised).
            #expect(bodies == 1)
            #expect(FaultTests.transportCode(error) == .timedOut, "\(error)")
        }
    }
    #endif
}

/// The error a test throws when a call it expects to fail did not fail the expected way.
private struct ExpectedAFailure: Error {}

/// A command a test needs is not on `PATH`.
private struct ToolMissing: Error, CustomStringConvertible {
    let name: String
    var description: String { "\(name) is not on PATH" }
}

#if canImport(FoundationNetworking)
/// A private CA and the certificates it signs, made with the `openssl` command in a temporary directory that is
/// removed when this value goes away.
private final class TestPKI {
    struct Certificate {
        let certificate: URL
        let key: URL
    }

    let directory: URL
    private var authority: Certificate?

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("CourierTLS-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    /// A self-signed certificate for 127.0.0.1.
    func selfSigned() throws -> Certificate {
        let made = files("self")
        try openssl(
            ["req", "-x509"] + Self.newKey(made) + [
                "-out", made.certificate.path, "-days", "2", "-subj", "/CN=127.0.0.1", "-addext",
                "subjectAltName=IP:127.0.0.1",
            ])
        return made
    }

    /// A certificate signed by the test CA; a negative `days` makes one that has expired.
    func leaf(named name: String, subjectAltName: String, days: Int) throws -> Certificate {
        let ca = try certificateAuthority()
        let made = files(name)
        let request = directory.appendingPathComponent("\(name).csr")
        let extensions = directory.appendingPathComponent("\(name).ext")
        try Data("subjectAltName=\(subjectAltName)\n".utf8).write(to: extensions)
        try openssl(["req", "-new"] + Self.newKey(made) + ["-out", request.path, "-subj", "/CN=\(name)"])
        try openssl([
            "x509", "-req", "-in", request.path, "-CA", ca.certificate.path, "-CAkey", ca.key.path,
            "-CAcreateserial", "-out", made.certificate.path, "-extfile", extensions.path, "-days", "\(days)",
        ])
        return made
    }

    private func certificateAuthority() throws -> Certificate {
        if let authority { return authority }
        let made = files("ca")
        try openssl(
            ["req", "-x509"] + Self.newKey(made) + [
                "-out", made.certificate.path, "-days", "2", "-subj", "/CN=Courier Test CA", "-addext",
                "basicConstraints=critical,CA:true", "-addext", "keyUsage=critical,keyCertSign",
            ])
        authority = made
        return made
    }

    private func files(_ name: String) -> Certificate {
        Certificate(
            certificate: directory.appendingPathComponent("\(name).pem"),
            key: directory.appendingPathComponent("\(name).key"))
    }

    private static func newKey(_ made: Certificate) -> [String] {
        ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", made.key.path]
    }

    private func openssl(_ arguments: [String]) throws {
        let process = Process()
        guard let openssl = TLSTestServer.executable("openssl") else { throw ToolMissing(name: "openssl") }
        process.executableURL = openssl
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try startChild(process)
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "openssl \(arguments.joined(separator: " ")) failed:\n\(text)")
    }
}

/// A server on 127.0.0.1 and an ephemeral port, run by `python3` in a child process until ``stop()``.
private final class TLSTestServer {
    enum Mode {
        /// HTTPS with this certificate, answering 200 "ok".
        case tls(certificate: TestPKI.Certificate)
        /// A plain HTTP answer on every connection, sent without waiting for the request.
        case plainHTTP
        /// Reads what the client sends first (its TLS ClientHello), then closes the connection.
        case closeAfterClientHello
    }

    static let script = """
        import http.server, socket, ssl, sys
        mode = sys.argv[1]
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            def log_message(self, *args):
                pass
        if mode == "tls":
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(sys.argv[2], sys.argv[3])
            server.socket = context.wrap_socket(server.socket, server_side=True)
            print(server.server_address[1], flush=True)
            server.serve_forever()
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        print(listener.getsockname()[1], flush=True)
        while True:
            connection, _ = listener.accept()
            if mode == "plain":
                connection.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\nok")
            else:
                connection.recv(65536)
            connection.close()
        """

    /// Whether `python3` and `openssl` are on `PATH`.
    static var toolsAvailable: Bool { pythonAvailable && executable("openssl") != nil }
    static var pythonAvailable: Bool { executable("python3") != nil }
    static let toolsMissing: Comment = "needs the openssl and python3 commands on PATH"

    static func executable(_ name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").lazy.map { URL(fileURLWithPath: String($0)).appendingPathComponent(name) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    let port: Int
    private let process: Process

    init(_ mode: Mode) throws {
        var arguments = ["-c", Self.script]
        switch mode {
        case .tls(let certificate): arguments += ["tls", certificate.certificate.path, certificate.key.path]
        case .plainHTTP: arguments.append("plain")
        case .closeAfterClientHello: arguments.append("close")
        }
        guard let python = Self.executable("python3") else { throw ToolMissing(name: "python3") }
        let process = Process()
        process.executableURL = python
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = FileHandle.nullDevice
        try startChild(process)
        // The server prints its port once it listens; an empty read means it exited first.
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let port = Int(text) else {
            Self.kill(process)
            throw ServerDidNotStart(output: text)
        }
        self.port = port
        self.process = process
    }

    /// Ends the child process and waits for it.
    func stop() {
        Self.kill(process)
    }

    /// SIGKILL, not `terminate()`: the test runner's worker threads block SIGTERM, and a child `Process` starts there
    /// inherits that mask, so a SIGTERM would never arrive and `waitUntilExit()` would spin for ever.
    private static func kill(_ process: Process) {
        if process.isRunning { _ = Glibc.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func client() -> NetworkClient {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 10
        return NetworkClient(
            configuration: NetworkConfiguration(
                sessionConfiguration: configuration, baseURL: URL(string: "https://127.0.0.1:\(port)")!))
    }

    struct ServerDidNotStart: Error, CustomStringConvertible {
        let output: String
        var description: String { "the python3 TLS test server did not print its port: \(output)" }
    }
}
#endif
