import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The one owner of redirects, without a socket: where a redirect leads, what the next request carries, and the
/// budget.
@Suite("Redirects")
struct RedirectsTests {
    static func redirect(_ status: Int, to location: String, from url: String = "https://api.example/v1/items/1")
        -> HTTPURLResponse
    {
        HTTPURLResponse(
            url: URL(string: url)!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: ["Location": location])!
    }

    static func post(_ url: String = "https://api.example/v1/items/1") -> OutgoingRequest {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = "POST"
        request.httpBody = Data("{\"a\":1}".utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("7", forHTTPHeaderField: "Content-Length")
        request.setValue("Bearer secret", forHTTPHeaderField: "Authorization")
        request.setValue("k-123", forHTTPHeaderField: "X-Api-Key")
        return OutgoingRequest(request: request, body: .data(Data("{\"a\":1}".utf8)))
    }

    static let sensitive: Set<String> = ["authorization", "cookie", "proxy-authorization", "x-api-key"]

    @Test("A 303 to a POST becomes a GET without the body or its headers")
    func seeOther() throws {
        var state = RedirectState(sensitiveHeaders: Self.sensitive)
        let next = try state.next(after: Self.redirect(303, to: "/v1/done"), from: Self.post())
        #expect(next.request.url?.absoluteString == "https://api.example/v1/done")
        #expect(next.request.httpMethod == "GET")
        #expect(next.request.httpBody == nil)
        #expect(next.body == .none)
        #expect(next.request.value(forHTTPHeaderField: "Content-Type") == nil)
        #expect(next.request.value(forHTTPHeaderField: "Content-Length") == nil)
        #expect(next.request.value(forHTTPHeaderField: "Authorization") == "Bearer secret", "same origin keeps it")
    }

    @Test("A 301 or 302 to a POST becomes a GET, as URLSession does; to a PUT it keeps the method and body")
    func movedAndFound() throws {
        for status in [301, 302] {
            var state = RedirectState(sensitiveHeaders: Self.sensitive)
            let next = try state.next(after: Self.redirect(status, to: "/v1/x"), from: Self.post())
            #expect(next.request.httpMethod == "GET")
            #expect(next.body == .none)
            var put = Self.post()
            put.request.httpMethod = "PUT"
            let kept = try state.next(after: Self.redirect(status, to: "/v1/x"), from: put)
            #expect(kept.request.httpMethod == "PUT")
            #expect(kept.body == .data(Data("{\"a\":1}".utf8)))
        }
    }

    @Test("A 307 or 308 keeps the method and the body, a file body included (it is read again)")
    func temporaryAndPermanent() throws {
        for status in [307, 308] {
            var state = RedirectState(sensitiveHeaders: Self.sensitive)
            let next = try state.next(after: Self.redirect(status, to: "/v2/items"), from: Self.post())
            #expect(next.request.httpMethod == "POST")
            #expect(next.request.httpBody == Data("{\"a\":1}".utf8))
            #expect(next.request.value(forHTTPHeaderField: "Content-Type") == "application/json")
            var upload = Self.post()
            upload.request.httpBody = nil
            upload.body = .file(URL(fileURLWithPath: "/tmp/upload.bin"), byteCount: 42)
            let file = try state.next(after: Self.redirect(status, to: "/v2/items"), from: upload)
            #expect(file.body == .file(URL(fileURLWithPath: "/tmp/upload.bin"), byteCount: 42))
        }
    }

    @Test("A relative Location is resolved against the redirecting URL (RFC 3986), not the host's root")
    func relativeLocations() throws {
        let cases = [
            ("final", "https://api.example/v1/items/final"), ("./final", "https://api.example/v1/items/final"),
            ("../final", "https://api.example/v1/final"), ("/root", "https://api.example/root"),
            ("//cdn.example/x", "https://cdn.example/x"), ("?page=2", "https://api.example/v1/items/1?page=2"),
        ]
        for (location, expected) in cases {
            var state = RedirectState(sensitiveHeaders: Self.sensitive)
            let next = try state.next(after: Self.redirect(302, to: location), from: Self.post())
            #expect(next.request.url?.absoluteString == expected, "Location: \(location)")
        }
    }

    @Test("To another scheme, host or port the sensitive headers and the credential's own are removed")
    func crossOrigin() throws {
        for target in ["https://evil.example/x", "http://api.example/x", "https://api.example:8443/x"] {
            var state = RedirectState(sensitiveHeaders: Self.sensitive)
            let next = try state.next(after: Self.redirect(307, to: target), from: Self.post())
            #expect(next.request.value(forHTTPHeaderField: "Authorization") == nil, "\(target)")
            #expect(next.request.value(forHTTPHeaderField: "X-Api-Key") == nil, "\(target)")
            #expect(next.request.httpBody == Data("{\"a\":1}".utf8), "a 307 keeps the body on any origin")
        }
        var state = RedirectState(sensitiveHeaders: Self.sensitive)
        let same = try state.next(after: Self.redirect(307, to: "HTTPS://API.EXAMPLE:443/x"), from: Self.post())
        #expect(same.request.value(forHTTPHeaderField: "Authorization") == "Bearer secret", "the same origin")
    }

    @Test("A Location that is not http or https is refused with redirectRefused")
    func otherSchemes() {
        for location in ["file:///etc/passwd", "ftp://api.example/x", "javascript:alert(1)", "data:text/plain,hi"] {
            var state = RedirectState(sensitiveHeaders: Self.sensitive)
            #expect(throws: NetworkClientError.self, "Location: \(location)") {
                _ = try state.next(after: Self.redirect(302, to: location), from: Self.post())
            }
        }
    }

    @Test("The 21st redirect fails with httpTooManyRedirects")
    func budget() throws {
        var state = RedirectState(sensitiveHeaders: Self.sensitive)
        var outgoing = Self.post()
        for index in 1...20 {
            outgoing = try state.next(after: Self.redirect(307, to: "/hop/\(index)"), from: outgoing)
        }
        #expect(state.followed == 20)
        #expect(NetworkConfiguration.maximumRedirects == 20)
        #expect {
            _ = try state.next(after: Self.redirect(307, to: "/hop/21"), from: outgoing)
        } throws: { error in
            (error as? URLError)?.code == .httpTooManyRedirects
        }
    }

    @Test("A redirect to a streamed body's request must resend it: refused")
    func streamedBody() {
        var state = RedirectState(sensitiveHeaders: Self.sensitive)
        var sent = Self.post()
        sent.request.httpBody = nil
        sent.request.httpBodyStream = InputStream(data: Data("x".utf8))
        #expect(throws: NetworkClientError.self) {
            _ = try state.next(after: Self.redirect(307, to: "/v2"), from: sent)
        }
    }
}

@Suite("Redirects without a Location")
struct RedirectWithoutLocationTests {
    @Test(
        "A 3xx without a Location is the final response: unacceptableStatusCode with its status, not a transport error",
        arguments: [301, 302, 303, 307, 308])
    func finalResponse(status: Int) async throws {
        let server = try LoopbackServer { _ in .respond(status: status, body: Data("moved, but where?".utf8)) }
        do {
            _ = try await server.client().run(NetworkRequest<VoidRequest, VoidResponse>(path: "nowhere", method: .get))
            Issue.record("a \(status) without a Location succeeded")
        } catch NetworkClientError.unacceptableStatusCode(let code, _, let data) {
            #expect(code == status)
            #if canImport(FoundationNetworking)
            // corelibs discards a 3xx's body while it waits to redirect: only the head can be handed over.
            #expect(data?.isEmpty ?? true)
            #else
            #expect(data.map { String(decoding: $0, as: UTF8.self) } == "moved, but where?")
            #endif
        }
        #expect(server.requestCount == 1)
    }
}
