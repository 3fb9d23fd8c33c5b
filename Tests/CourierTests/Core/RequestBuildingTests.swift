import Foundation
import Testing

@testable import Courier

/// How a `NetworkRequest` becomes a `URLRequest`, checked without a network.
@Suite("Request building")
struct RequestBuildingTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    private func urlRequest<Body, Response>(
        _ request: NetworkRequest<Body, Response>, base: String = "https://api.example.com/v1"
    ) throws -> URLRequest {
        try request.makeURLRequest(configuration: NetworkConfiguration(baseURL: URL(string: base)!))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    private func url(base: String, path: String?, query: [URLQueryItem]? = nil) throws -> String {
        let request = NetworkRequest<VoidRequest, VoidResponse>(path: path, method: .get, queryItems: query)
        return try #require(try urlRequest(request, base: base).url).absoluteString
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "Base and path join with exactly one slash",
        arguments: [
            ("https://h.example/api/v1", "users", "https://h.example/api/v1/users"),
            ("https://h.example/api/v1/", "users", "https://h.example/api/v1/users"),
            ("https://h.example/api/v1", "/users", "https://h.example/api/v1/users"),
            ("https://h.example/api/v1/", "/users", "https://h.example/api/v1/users"),
            ("https://h.example/api/v1//", "///users/", "https://h.example/api/v1/users/"),
            ("https://h.example", "users", "https://h.example/users"),
            ("https://h.example/", "/users/42", "https://h.example/users/42"),
            ("http://127.0.0.1:8080/base", "a/b", "http://127.0.0.1:8080/base/a/b"),
            ("https://h.example/api?key=1", "users", "https://h.example/api/users?key=1"),
        ])
    func joining(base: String, path: String, expected: String) throws {
        #expect(try url(base: base, path: path) == expected)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A nil or empty path means the base URL itself")
    func emptyPath() throws {
        #expect(try url(base: "https://h.example/api/", path: nil) == "https://h.example/api/")
        #expect(try url(base: "https://h.example/api", path: "") == "https://h.example/api")
        #expect(try url(base: "https://h.example/api", path: "/") == "https://h.example/api")
        #expect(
            try url(base: "https://h.example/api/", path: nil, query: [URLQueryItem(name: "q", value: "1")])
                == "https://h.example/api/?q=1")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A path never changes the scheme, host or port",
        arguments: ["//evil.example/x", "https://evil.example/x", "http://evil.example:81", "@evil.example/x"])
    func pathCannotChangeOrigin(path: String) throws {
        let built = try #require(URL(string: try url(base: "https://h.example:8443/api", path: path)))
        #expect(built.scheme == "https")
        #expect(built.host == "h.example")
        #expect(built.port == 8443)
        #expect(built.path.hasPrefix("/api/"))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A path is literal text: reserved characters, spaces and non-ASCII are percent-encoded")
    func pathEncoding() throws {
        #expect(try url(base: "https://h.example", path: "a b/c?d#e") == "https://h.example/a%20b/c%3Fd%23e")
        #expect(try url(base: "https://h.example", path: "100%/c++;x") == "https://h.example/100%25/c%2B%2B%3Bx")
        #expect(try url(base: "https://h.example", path: "café/✓") == "https://h.example/caf%C3%A9/%E2%9C%93")
        #expect(try url(base: "https://h.example", path: "v1.2/file.json") == "https://h.example/v1.2/file.json")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Dot segments are rejected instead of being resolved away", arguments: ["..", "a/../b", "./a", "a/."])
    func dotSegments(path: String) {
        #expect {
            _ = try url(base: "https://h.example/api", path: path)
        } throws: { error in
            guard case NetworkClientError.invalidURL(let reason) = error else { return false }
            return reason.contains("segment")
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A base URL without scheme or host is a clear error")
    func invalidBase() {
        #expect {
            _ = try url(base: "/relative/only", path: "x")
        } throws: { error in
            guard case NetworkClientError.invalidURL(let reason) = error else { return false }
            return reason.contains("no scheme or no host")
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("An IPv6 literal base URL: a clear invalidURL on Linux (corelibs cannot send to it), the URL elsewhere")
    func ipv6LiteralBase() throws {
        #if canImport(FoundationNetworking)
        #expect {
            _ = try url(base: "http://[::1]:8080", path: "x")
        } throws: { error in
            guard case NetworkClientError.invalidURL(let reason) = error else { return false }
            return reason.contains("IPv6 literal host") && reason.contains("localhost")
        }
        #else
        #expect(try url(base: "http://[::1]:8080", path: "x") == "http://[::1]:8080/x")
        #endif
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Query items keep order, encode every reserved character, and send nil values as bare names")
    func queryEncoding() throws {
        let items = [
            URLQueryItem(name: "q", value: "a+b&c=d%e f"),
            URLQueryItem(name: "flag", value: nil),
            URLQueryItem(name: "empty", value: ""),
            URLQueryItem(name: "ü n", value: "😀/?#[]@"),
        ]
        #expect(
            try url(base: "https://h.example", path: "s", query: items)
                == "https://h.example/s?q=a%2Bb%26c%3Dd%25e%20f&flag&empty=&%C3%BC%20n=%F0%9F%98%80%2F%3F%23%5B%5D%40")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Default headers: Accept is JSON; callers override them case-insensitively")
    func defaultHeaders() throws {
        let plain = try urlRequest(NetworkRequest<VoidRequest, VoidResponse>(method: .get))
        #expect(plain.value(forHTTPHeaderField: "Accept") == "application/json")
        #expect(plain.value(forHTTPHeaderField: "Content-Type") == nil)
        #expect(plain.httpBody == nil)

        let custom = try urlRequest(
            NetworkRequest<[String: Int], VoidResponse>(
                method: .post, body: ["a": 1], additionalHeaders: ["accept": "text/plain", "content-type": "x/y"]))
        #expect(custom.value(forHTTPHeaderField: "Accept") == "text/plain")
        #expect(custom.value(forHTTPHeaderField: "Content-Type") == "x/y")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Bodies: JSON with the request's encoder, Data as is, forms url-encoded, VoidRequest empty")
    func bodies() throws {
        struct Payload: Encodable, Sendable { let userName: String }
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let json = try urlRequest(
            NetworkRequest<Payload, VoidResponse>(method: .post, body: Payload(userName: "ann"), encoder: encoder))
        #expect(json.httpBody == Data(#"{"user_name":"ann"}"#.utf8))
        #expect(json.value(forHTTPHeaderField: "Content-Type") == "application/json")

        let raw = try urlRequest(NetworkRequest<Data, VoidResponse>(method: .put, body: Data([0, 1, 2])))
        #expect(raw.httpBody == Data([0, 1, 2]))
        #expect(raw.value(forHTTPHeaderField: "Content-Type") == "application/octet-stream")

        let form = try urlRequest(
            NetworkRequest<VoidRequest, VoidResponse>(
                method: .post,
                formItems: [
                    URLFormItem(name: "a b", value: "1+1=2"), URLFormItem(name: "skip", value: nil),
                    URLFormItem(name: "z", value: "&"),
                ]))
        #expect(form.httpBody == Data("a%20b=1%2B1%3D2&z=%26".utf8))
        #expect(form.value(forHTTPHeaderField: "Content-Type") == "application/x-www-form-urlencoded")

        let void = try urlRequest(NetworkRequest<VoidRequest, VoidResponse>(method: .post, body: VoidRequest()))
        #expect(void.httpBody == nil)
        #expect(void.httpMethod == "POST")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Both a body and form items is an error, not a silent choice")
    func conflictingBodies() {
        #expect(throws: NetworkClientError.self) {
            _ = try urlRequest(
                NetworkRequest<[Int], VoidResponse>(
                    method: .post, formItems: [URLFormItem(name: "a", value: "1")], body: [1]))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("An encoder failure is reported as encodingFailed")
    func encodingFailure() {
        struct Unencodable: Encodable, Sendable {
            func encode(to encoder: any Encoder) throws {
                throw EncodingError.invalidValue(0, .init(codingPath: [], debugDescription: "nope"))
            }
        }
        #expect {
            _ = try urlRequest(NetworkRequest<Unencodable, VoidResponse>(method: .post, body: Unencodable()))
        } throws: { error in
            guard case NetworkClientError.encodingFailed = error else { return false }
            return true
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "Header injection and invalid header names are rejected, naming the header",
        arguments: [
            ("X-Note", "s3cr3t\r\nX-Injected: 1", "CR or LF"),
            ("X-Note", "s3cr3t\nb", "CR or LF"),
            ("X-Note", "s3cr3t\u{0}", "control character 0x0"),
            ("Bad Name", "s3cr3t", "not allowed in a header name"),
            ("X-Evil\r\nHost", "s3cr3t", "not allowed in a header name"),
            ("", "s3cr3t", "empty"),
        ])
    func headerInjection(name: String, value: String, reason: String) {
        #expect {
            _ = try urlRequest(
                NetworkRequest<VoidRequest, VoidResponse>(method: .get, additionalHeaders: [name: value]))
        } throws: { error in
            guard case NetworkClientError.invalidHeader(let badName, let badReason) = error else { return false }
            return badName == name && badReason.contains(reason) && !"\(error)".contains(value)
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A timeout that is NaN, zero or negative is rejected (corelibs traps on NaN)",
        arguments: [Double.nan, 0, -1])
    func invalidTimeout(interval: TimeInterval) {
        #expect {
            _ = try urlRequest(NetworkRequest<VoidRequest, VoidResponse>(method: .get, timeoutInterval: interval))
        } throws: { error in
            guard case NetworkClientError.invalidRequest(let reason) = error else { return false }
            return reason.contains("timeout")
        }
        #expect {
            _ = try urlRequest(NetworkRequest<VoidRequest, VoidResponse>(method: .get, totalTimeout: interval))
        } throws: { error in
            guard case NetworkClientError.invalidRequest(let reason) = error else { return false }
            return reason.contains("total timeout")
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "An infinite or huge timeout is lowered to about 31.7 years (corelibs traps above about 9.2e15 s)",
        arguments: [Double.infinity, 1e300, 9.3e15])
    func hugeTimeout(interval: TimeInterval) throws {
        let request = try urlRequest(NetworkRequest<VoidRequest, VoidResponse>(method: .get, timeoutInterval: interval))
        #expect(request.timeoutInterval == 1_000_000_000)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "An interceptor's method must be an RFC 9110 token: no forged request line",
        arguments: ["GET /evil HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET", "GET ", "", "PO\u{0}ST"])
    func forgedMethod(method: String) async throws {
        let configuration = NetworkConfiguration(baseURL: URL(string: "http://127.0.0.1:9")!)
        configuration.interceptors = [
            RequestChange { request in
                request.httpMethod = method
            }
        ]
        await #expect {
            _ = try await NetworkClient(configuration: configuration).run(
                NetworkRequest<VoidRequest, VoidResponse>(method: .get))
        } throws: { error in
            guard case NetworkClientError.invalidRequest(let reason) = error else { return false }
            return reason.contains("not an RFC 9110 token") && !reason.contains("\r\n")
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "Fields that frame the message are Courier's: rejected in additionalHeaders, whatever their case",
        arguments: ["Content-Length", "transfer-encoding", "HOST", "Connection", "Upgrade"])
    func framingHeaders(name: String) {
        #expect {
            _ = try urlRequest(NetworkRequest<VoidRequest, VoidResponse>(method: .get, additionalHeaders: [name: "5"]))
        } throws: { error in
            guard case NetworkClientError.invalidHeader(let badName, let reason) = error else { return false }
            return badName == name && reason.contains("frames the message")
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A per-request timeout reaches the URLRequest")
    func timeout() throws {
        let request = try urlRequest(NetworkRequest<VoidRequest, VoidResponse>(method: .get, timeoutInterval: 2.5))
        #if canImport(FoundationNetworking)
        #expect(request.timeoutInterval == 3)  // corelibs counts whole seconds: rounded up, never down.
        #else
        #expect(request.timeoutInterval == 2.5)
        #endif
    }
}
