import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// Collects what a logging client writes.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
final class LogCollector: Sendable {
    private let entries = Locked<[LogEntry]>([])

    var all: [LogEntry] { entries.withLock { $0 } }
    var lines: [String] { all.map(\.description) }

    var sink: @Sendable (LogEntry) -> Void {
        { entry in self.entries.withLock { $0.append(entry) } }
    }

    /// Everything an app could write from the entries: descriptions and every text property.
    var everything: String {
        all.map { entry in
            ([entry.description, entry.url, entry.errorCase ?? "", entry.requestBody ?? "", entry.responseBody ?? ""]
                + (entry.requestHeaders + entry.responseHeaders).map { "\($0.name): \($0.value)" })
                .joined(separator: "\n")
        }.joined(separator: "\n")
    }
}

/// A clock that moves 12.4 ms at every reading, so every request takes "12 ms".
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func steppingClock() -> @Sendable () -> UInt64 {
    let readings = Locked<UInt64>(0)
    return {
        readings.withLock {
            $0 += 12_400_000
            return $0
        }
    }
}

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func loggingClient(
    _ client: any NetworkClientProtocol, level: LogLevel, redaction: LogRedaction = LogRedaction(),
    maximumBodyLength: Int = 1_024, to collector: LogCollector
) -> LoggingDecorator {
    LoggingDecorator(
        wrapping: client, level: level, redaction: redaction, maximumBodyLength: maximumBodyLength,
        now: steppingClock(), sink: collector.sink)
}

struct Login: Codable, Sendable {
    let user: String
    let password: String
}

@Suite("LoggingClient")
struct LoggingClientTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Info: one whole line per request, success and each kind of failure")
    func infoLines() async throws {
        let server = try LoopbackServer { request in
            switch request.path {
            case "/posts": .respond(status: 200, body: Data(#"{"id":1,"title":"hello"}"#.utf8))
            case "/down": .respond(status: 503, body: Data("maintenance".utf8))
            default: .respond(status: 200, body: Data("not json".utf8))
            }
        }
        let log = LogCollector()
        let client = loggingClient(server.client(), level: .info, to: log)
        let origin = "http://127.0.0.1:\(server.port)"

        let query = [URLQueryItem(name: "page", value: "2"), URLQueryItem(name: "api_key", value: "s3cr3t")]
        _ = try await client.run(NetworkRequest<VoidRequest, Post>(path: "posts", method: .get, queryItems: query))
        await #expect(throws: NetworkClientError.self) {
            try await client.run(NetworkRequest<VoidRequest, Post>(path: "down", method: .delete))
        }
        await #expect(throws: NetworkClientError.self) {
            try await client.run(NetworkRequest<VoidRequest, Post>(path: "garbage", method: .get))
        }
        await #expect(throws: NetworkClientError.self) {
            try await client.run(Echo(path: "x", method: .get, additionalHeaders: ["X-Bad": "s3cr3t\r\n"]))
        }
        #expect(
            log.lines == [
                "GET \(origin)/posts?page=2&api_key=<redacted> -> 200, 12 ms, 24 bytes",
                "DELETE \(origin)/down -> 503, 12 ms, 11 bytes, error: unacceptableStatusCode(503)",
                "GET \(origin)/garbage -> failed, 12 ms, 8 bytes, error: decodingFailed",
                "GET \(origin)/x -> failed, 12 ms, error: invalidHeader(X-Bad)",
            ])
        let first = try #require(log.all.first)
        #expect(first.method == .get)
        #expect(first.statusCode == 200)
        #expect(first.milliseconds == 12)
        #expect(first.responseSize == 24)
        #expect(first.error == nil)
        #expect(first.requestHeaders.isEmpty && first.responseBody == nil)
    }

    @Test("Numbers in a line are written in decimal, whatever their size or sign")
    func numbersInALine() {
        let numbers = [0, 7, 10, 99, 100, 1_024, 12_345, -1, -90, Int.max, Int.min]
        let written = numbers.map { number -> String in
            var text = UTF8Text(capacity: 0)
            text.append(number)
            return text.string
        }
        #expect(
            written == [
                "0", "7", "10", "99", "100", "1024", "12345", "-1", "-90", "9223372036854775807",
                "-9223372036854775808",
            ])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Info: a transport failure and a cancellation")
    func transportAndCancellation() async throws {
        let gone = RefusingPort()
        let log = LogCollector()
        let client = loggingClient(NetworkClient(configuration: gone.configuration()), level: .info, to: log)
        await #expect(throws: NetworkClientError.self) { try await client.run(Echo(path: "p", method: .head)) }

        let hanging = try LoopbackServer { _ in .hang }
        let cancelled = loggingClient(hanging.client(), level: .info, to: log)
        let task = Task { try await cancelled.run(Echo(path: "h", method: .get)) }
        #expect(await eventually { hanging.inProgressRequests == 1 })
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(
            log.lines == [
                "HEAD http://127.0.0.1:\(gone.port)/p -> failed, 12 ms, error: transportFailed(cannotConnectToHost)",
                "GET http://127.0.0.1:\(hanging.port)/h -> failed, 12 ms, error: cancelled",
            ])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Debug: headers and bodies, every secret redacted")
    func debugLines() async throws {
        let server = try LoopbackServer { _ in
            .respond(
                status: 200,
                headers: [
                    ServerHeader(name: "Content-Type", value: "application/json"),
                    ServerHeader(name: "Set-Cookie", value: "session=s3cr3t"),
                ],
                body: Data(#"{"token":"s3cr3t","user":"ann"}"#.utf8))
        }
        let log = LogCollector()
        let configuration = server.configuration(sensitiveHeaders: ["X-Api-Key"])
        let client = loggingClient(NetworkClient(configuration: configuration), level: .debug, to: log)
        let request = NetworkRequest<Login, VoidResponse>(
            path: "login", method: .post, body: Login(user: "ann", password: "s3cr3t"),
            additionalHeaders: ["Authorization": "Bearer s3cr3t", "X-Api-Key": "s3cr3t", "X-Trace": "abc"])
        _ = try await client.run(request)
        #expect(
            log.lines == [
                """
                POST http://127.0.0.1:\(server.port)/login -> 200, 12 ms, 31 bytes
                  > Accept: application/json
                  > Authorization: <redacted>
                  > Content-Type: application/json
                  > X-Api-Key: <redacted>
                  > X-Trace: abc
                  > body: {"password":"<redacted>","user":"ann"}
                  < Content-Length: 31
                  < Content-Type: application/json
                  < Set-Cookie: <redacted>
                  < body: {"token":"<redacted>","user":"ann"}
                """
            ])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Debug: bodies are a bounded prefix; binary bodies are written as their size")
    func bodyBounds() async throws {
        let server = try LoopbackServer { request in
            request.path == "/text"
                ? .respond(status: 200, body: Data(repeating: UInt8(ascii: "a"), count: 5_000))
                : .respond(status: 200, body: Data([0, 1, 2, 255]))
        }
        let log = LogCollector()
        let client = loggingClient(server.client(), level: .debug, maximumBodyLength: 16, to: log)
        _ = try await client.run(NetworkRequest<VoidRequest, Data>(path: "text", method: .get))
        _ = try await client.run(NetworkRequest<Data, Data>(path: "binary", method: .put, body: Data([0, 0xFF])))
        #expect(log.all.map(\.responseBody) == ["aaaaaaaaaaaaaaaa… (5000 bytes in all)", "<4 bytes of binary data>"])
        #expect(log.all.map(\.requestBody) == [nil, "<2 bytes of binary data>"])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("No secret in a header, query, user info or body field is ever logged, at any level, errors included")
    func noSecretAnywhere() async throws {
        let secret = "s3cr3t-Zq9"
        let server = try LoopbackServer { request in
            let body = Data(#"{"error":"denied","access_token":"\#(secret)","nested":{"password":"\#(secret)"}}"#.utf8)
            return .respond(
                status: request.path == "/ok" ? 200 : 401,
                headers: [ServerHeader(name: "Set-Cookie", value: "sid=\(secret)")], body: body)
        }
        let gone = RefusingPort()
        let goneURL = gone.url(userInfo: "ann:\(secret)@")
        for level in LogLevel.allCases {
            let log = LogCollector()
            let redaction = LogRedaction(headers: ["X-Custom-Secret"], queryParameters: ["sig", "access_token"])
            let configuration = server.configuration(sensitiveHeaders: ["X-Api-Key"])
            let client = loggingClient(
                NetworkClient(configuration: configuration), level: level, redaction: redaction, to: log)
            let headers = [
                "Authorization": "Bearer \(secret)", "Proxy-Authorization": "Basic \(secret)",
                "Cookie": "sid=\(secret)", "X-Api-Key": secret, "X-Custom-Secret": secret,
            ]
            let query = [URLQueryItem(name: "sig", value: secret), URLQueryItem(name: "Access_Token", value: secret)]
            _ = try? await client.run(
                NetworkRequest<Login, Data>(
                    path: "ok", method: .post, queryItems: query, body: Login(user: "ann", password: secret),
                    additionalHeaders: headers))
            _ = try? await client.run(
                NetworkRequest<VoidRequest, Data>(
                    path: "denied", method: .post, queryItems: query,
                    formItems: [URLFormItem(name: "password", value: secret), URLFormItem(name: "user", value: "ann")],
                    additionalHeaders: headers))
            _ = try? await client.run(
                NetworkRequest<VoidRequest, Data>(path: "gone", method: .get, queryItems: query, baseURL: goneURL))
            #expect(log.all.count == 3)
            #expect(!log.everything.contains(secret), "level \(level)")
            #expect(!log.everything.contains("s3cr3t"), "level \(level)")
            #expect(log.all[2].url.hasPrefix("http://<redacted>@127.0.0.1:"))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("logged(level:to:) finds the configuration under other decorators")
    func fluentForm() async throws {
        let server = try echoServer()
        let lines = Locked<[String]>([])
        let client = server.client().deduplicated().logged(level: .info) { entry in
            lines.withLock { $0.append("\(entry.method.rawValue) \(entry.url) \(entry.statusCode ?? 0)") }
        }
        _ = try await client.run(Echo(path: "a b", method: .get, queryItems: [URLQueryItem(name: "token", value: "t")]))
        #expect(lines.withLock { $0 } == ["GET http://127.0.0.1:\(server.port)/a%20b?token=<redacted> 200"])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A response the cache answered says so in its line: cache: fresh, revalidated; the network says nothing")
    func cacheStatusInTheLine() async throws {
        let server = try LoopbackServer { _ in
            .respond(
                status: 200, headers: [ServerHeader(name: "Cache-Control", value: "max-age=600")],
                body: Data("cached".utf8))
        }
        let configuration = server.configuration()
        configuration.responseCache = ResponseCache(memoryCapacity: 1 << 20)
        let log = LogCollector()
        let client = NetworkClient(configuration: configuration).logged(level: .info, to: log.sink)
        _ = try await client.run(NetworkRequest<VoidRequest, String>(path: "/c", method: .get))
        _ = try await client.run(NetworkRequest<VoidRequest, String>(path: "/c", method: .get))
        #expect(log.all.map(\.cacheStatus) == [.network, .fresh])
        #expect(!log.lines[0].contains("cache:"))
        #expect(log.lines[1].hasSuffix(", 6 bytes, cache: fresh"))
        #expect(server.requestCount == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("logged(maximumBodyLength:) bounds the bodies shown at debug")
    func maximumBodyLengthIsAParameter() async throws {
        let stub = StubNetworkClient()
        stub.stub(.get, "/long", body: String(repeating: "x", count: 100))
        let log = LogCollector()
        let client = stub.logged(level: .debug, maximumBodyLength: 10, to: log.sink)
        _ = try await client.run(NetworkRequest<VoidRequest, String>(path: "/long", method: .get))
        #expect(log.all.map(\.responseBody) == ["xxxxxxxxxx… (100 bytes in all)"])
    }
}
