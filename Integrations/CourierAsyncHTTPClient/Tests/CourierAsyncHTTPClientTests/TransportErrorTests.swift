import Courier
import Foundation
import NIOConcurrencyHelpers
import NIOSSL
import Testing

@testable import CourierAsyncHTTPClient

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Checks what a user reads of a transport failure: the URLError's own text never carries a host name, a source path
/// of the machine that built the TLS library, or bytes the server sent; and Courier's whole description no path.
private func checkText(
    _ error: (any Error)?, hiding secrets: [String] = [], sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let urlError = transportError(error) else {
        Issue.record("not a transport failure: \(String(describing: error))", sourceLocation: sourceLocation)
        return
    }
    let text = urlError.localizedDescription
    for secret in ["localhost", "127.0.0.1"] + secrets {
        #expect(!text.contains(secret), "\(text)", sourceLocation: sourceLocation)
    }
    let whole = String(describing: error.map { $0 }) + " " + String(reflecting: urlError)
    for path in [".cc", ".c:", ".swift", "/.build/", "checkouts", "/Sources/", "/src/"] {
        #expect(!whole.contains(path), "\(whole)", sourceLocation: sourceLocation)
    }
}

@Suite("AsyncHTTPClientTransport: certificate failures say which")
struct CertificateFailureTests {
    private static func refusal(
        of serverTLS: TLSConfiguration, trusting authority: TestAuthority
    ) async throws -> (any Error)? {
        let server = try await RawServer(tls: serverTLS, behaviour: .silent)
        let transport = try AsyncHTTPClientTransport(tls: TLSOptions(trustRoots: .only(pem: try authority.pem)))
        let client = client(transport, baseURL: server.url("/", host: "localhost"))
        let (error, _) = try await failure {
            _ = try await client.run(NetworkRequest<VoidRequest, Data>(path: "memo", method: .get))
        }
        #expect(server.requestCount == 0, "no request reaches a server whose certificate is refused")
        try await transport.shutdown()
        try await server.stop()
        return error
    }

    @Test("Expired, not yet valid, for another host, of an unknown authority, self-signed: each its own code and text")
    func distinctCodes() async throws {
        let authority = try TestAuthority(name: "Courier Test CA")
        let now = Date()
        let day: TimeInterval = 86_400
        let cases: [(String, TLSConfiguration, URLError.Code)] = [
            (
                "expired",
                try authority.serverTLS(validity: now.addingTimeInterval(-30 * day)..<now.addingTimeInterval(-day)),
                .serverCertificateHasBadDate
            ),
            (
                "not yet valid",
                try authority.serverTLS(validity: now.addingTimeInterval(day)..<now.addingTimeInterval(30 * day)),
                .serverCertificateHasBadDate
            ),
            ("for another host", try authority.serverTLS(dnsName: "elsewhere.example"), .serverCertificateUntrusted),
            (
                "of an unknown authority", try TestAuthority(name: "Another CA").serverTLS(),
                .serverCertificateHasUnknownRoot
            ),
            ("self-signed", try TestAuthority.selfSignedServerTLS(), .serverCertificateHasUnknownRoot),
        ]
        var texts: [URLError.Code: Set<String>] = [:]
        for (name, tls, expected) in cases {
            let error = try await Self.refusal(of: tls, trusting: authority)
            #expect(transportCode(error) == expected, "\(name): \(String(describing: error))")
            checkText(error, hiding: ["elsewhere.example"])
            if let urlError = transportError(error) {
                texts[urlError.code, default: []].insert(urlError.localizedDescription)
            }
        }
        // One fixed text per code, and a different one for each.
        #expect(texts.values.allSatisfy { $0.count == 1 }, "\(texts)")
        #expect(Set(texts.values.compactMap(\.first)).count == 3, "\(texts)")
    }

    @Test("The diagnosis reads dates: any certificate of the chain outside its validity is a bad date")
    func diagnosisRule() {
        let now: Int64 = 1_000_000
        #expect(CertificateDiagnosis.code(for: [(0, 2_000_000)], now: now) == .serverCertificateHasUnknownRoot)
        #expect(CertificateDiagnosis.code(for: [(0, 999_999)], now: now) == .serverCertificateHasBadDate)
        #expect(
            CertificateDiagnosis.code(for: [(0, 2_000_000), (1_000_001, 3_000_000)], now: now)
                == .serverCertificateHasBadDate)
        #expect(CertificateDiagnosis.code(for: [], now: now) == .serverCertificateUntrusted)
    }

    @Test("A client certificate the server does not accept is clientCertificateRejected")
    func clientCertificateRejected() async throws {
        let authority = try TestAuthority(name: "Courier Test CA")
        let clients = try TestAuthority(name: "Courier Client CA")
        let strangers = try TestAuthority(name: "Another Client CA")
        let server = try await TestServer(tls: try authority.serverTLS(requiringClientsOf: clients)) { _ in .text("no")
        }
        let identity = try strangers.issue(commonName: "stranger", forServer: false)
        let transport = try mutualTLSTransport(trusting: authority, presenting: identity)
        let (error, _) = try await failure {
            _ = try await client(transport, baseURL: server.url("/", host: "localhost")).run(
                NetworkRequest<VoidRequest, Data>(path: "memo", method: .get))
        }
        #expect(transportCode(error) == .clientCertificateRejected, "\(String(describing: error))")
        checkText(error)
        #expect(server.requests.isEmpty)
        try await transport.shutdown()
        try await server.stop()
    }

    @Test("HTTPS to a server that speaks plain HTTP: secureConnectionFailed with a fixed text")
    func notTLS() async throws {
        let server = try await RawServer(behaviour: .greet(Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8)))
        let transport = try AsyncHTTPClientTransport()
        let url = try #require(URL(string: "https://localhost:\(server.port)/"))
        let (error, _) = try await failure {
            _ = try await client(transport, baseURL: url).run(
                NetworkRequest<VoidRequest, Data>(path: "x", method: .get))
        }
        #expect(transportCode(error) == .secureConnectionFailed, "\(String(describing: error))")
        checkText(error)
        try await transport.shutdown()
        try await server.stop()
    }
}

@Suite("AsyncHTTPClientTransport: malformed and cut-off responses")
struct MalformedResponseTests {
    private static let marker = "S3CRET-FROM-THE-SERVER"

    @Test(
        "A malformed head is badServerResponse saying what was malformed, never with the server's bytes",
        arguments: [
            ("HTTP/1.1 2x0 \(marker)\r\n\r\n", "status line"),
            ("HTTP/1.1 200 OK\r\n\(marker) no colon\r\n\r\n", "field"),
            ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n\(marker)", "Content-Length"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\(marker)\r\n", "chunked"),
        ])
    func malformedHead(response: String, saying: String) async throws {
        let server = try await RawServer(behaviour: .send(Array(response.utf8)))
        let transport = try AsyncHTTPClientTransport()
        let (error, _) = try await failure {
            _ = try await client(transport, baseURL: server.url("/")).run(
                NetworkRequest<VoidRequest, Data>(path: "x", method: .get, timeoutInterval: 10))
        }
        #expect(transportCode(error) == .badServerResponse, "\(String(describing: error))")
        let text = transportError(error)?.localizedDescription ?? ""
        #expect(text.contains(saying), "\(text)")
        checkText(error, hiding: [Self.marker])
        try await transport.shutdown()
        try await server.stop()
    }

    @Test("A head larger than the parser takes is badServerResponse saying so")
    func oversizedHead() async throws {
        let fields = (0..<4_000).map { "X-Field-\($0): \(Self.marker)\r\n" }.joined()
        let server = try await RawServer(behaviour: .send(Array("HTTP/1.1 200 OK\r\n\(fields)\r\n".utf8)))
        let transport = try AsyncHTTPClientTransport()
        let (error, _) = try await failure {
            _ = try await client(transport, baseURL: server.url("/")).run(
                NetworkRequest<VoidRequest, Data>(path: "x", method: .get))
        }
        #expect(transportCode(error) == .badServerResponse, "\(String(describing: error))")
        #expect(transportError(error)?.localizedDescription.contains("larger than") == true)
        checkText(error, hiding: [Self.marker])
        try await transport.shutdown()
        try await server.stop()
    }

    @Test("A body cut off before its Content-Length is networkConnectionLost", arguments: [false, true])
    func truncatedBody(tls: Bool) async throws {
        let authority = try TestAuthority(name: "Courier Test CA")
        let bytes = Array("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n".utf8) + patternBytes(300)
        let server = try await RawServer(tls: tls ? try authority.serverTLS() : nil, behaviour: .sendAndDrop(bytes))
        let transport =
            tls
            ? try AsyncHTTPClientTransport(tls: TLSOptions(trustRoots: .only(pem: try authority.pem)))
            : try AsyncHTTPClientTransport()
        let (error, _) = try await failure {
            _ = try await client(transport, baseURL: server.url("/", host: tls ? "localhost" : "127.0.0.1")).run(
                NetworkRequest<VoidRequest, Data>(path: "x", method: .get))
        }
        #expect(transportCode(error) == .networkConnectionLost, "\(String(describing: error))")
        checkText(error)
        try await transport.shutdown()
        try await server.stop()
    }

    @Test(
        "An event stream dropped mid-way: the events that came, then networkConnectionLost", arguments: [false, true])
    func droppedStream(tls: Bool) async throws {
        let authority = try TestAuthority(name: "Courier Test CA")
        let event = "data: one\n\n"
        let chunk = String(event.utf8.count, radix: 16) + "\r\n" + event + "\r\n"
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        let server = try await RawServer(
            tls: tls ? try authority.serverTLS() : nil, behaviour: .sendAndDrop(Array((head + chunk).utf8)))
        let transport =
            tls
            ? try AsyncHTTPClientTransport(tls: TLSOptions(trustRoots: .only(pem: try authority.pem)))
            : try AsyncHTTPClientTransport()
        let events = try await client(transport, baseURL: server.url("/", host: tls ? "localhost" : "127.0.0.1")).run(
            NetworkRequest<VoidRequest, ServerSentEvents>(path: "events", method: .get)
        ).value
        let seen = NIOLockedValueBox<[String]>([])
        let (error, _) = try await failure {
            for try await event in events { seen.withLockedValue { $0.append(event.data) } }
        }
        #expect(seen.withLockedValue { $0 } == ["one"])
        #expect(transportCode(error) == .networkConnectionLost, "\(String(describing: error))")
        checkText(error)
        try await transport.shutdown()
        try await server.stop()
    }
}
