import Courier
import Foundation
import LoopbackHTTPServer
import Testing

/// Servers that misbehave: every fault must end in a specific `NetworkClientError`, never a crash, a hang or a wrong
/// value. The URLError codes asserted for transport faults are the ones corelibs Foundation (libcurl) gives on Linux,
/// as observed with Swift 6.3.1 on Debian 12; Apple platforms may report a different code for the same fault.
@Suite("Hostile servers")
struct FaultTests {
    /// The body a server sends for a list of items.
    struct Page: Decodable, Sendable, Equatable {
        struct Item: Decodable, Sendable, Equatable {
            let id: Int
        }

        let items: [Item]
    }

    // MARK: Broken transfers

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A body shorter than Content-Length, then close, is transportFailed")
    func partialBody() async throws {
        let server = try LoopbackServer { _ in
            .partialBody(status: 200, declaredLength: 100, body: Data(#"{"id":1,"#.utf8))
        }
        let error = try await #require(throws: NetworkClientError.self) {
            _ = try await server.client().run(NetworkRequest<VoidRequest, Post>(method: .get))
        }
        // Apple platforms report networkConnectionLost. corelibs reports libcurl's CURLE_PARTIAL_FILE ("transfer
        // closed with 92 bytes remaining to read") as URLError.unknown; Courier reports Apple's code, which
        // retrying() retries.
        #expect(Self.transportCode(error) == .networkConnectionLost, "\(error)")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A connection reset in the middle of the body is transportFailed")
    func resetMidBody() async throws {
        let server = try LoopbackServer { _ in
            .resetMidBody(status: 200, declaredLength: 100, body: Data(#"{"id":1,"#.utf8))
        }
        let error = try await #require(throws: NetworkClientError.self) {
            _ = try await server.client().run(NetworkRequest<VoidRequest, Post>(method: .get))
        }
        #expect(Self.transportCode(error) != nil, "\(error)")
        #if canImport(FoundationNetworking)
        // corelibs: "Recv failure: Connection reset by peer" surfaces as URLError.networkConnectionLost (-1005).
        #expect(Self.transportCode(error) == .networkConnectionLost, "\(error)")
        #endif
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Bytes that are not HTTP are transportFailed")
    func garbage() async throws {
        let server = try LoopbackServer { _ in .raw(Data("\u{1}\u{2}SSH-2.0-not HTTP at all\r\n\r\n".utf8)) }
        let error = try await #require(throws: NetworkClientError.self) {
            _ = try await server.client().run(NetworkRequest<VoidRequest, Post>(method: .get))
        }
        #expect(Self.transportCode(error) != nil, "\(error)")
        #if canImport(FoundationNetworking)
        // corelibs: libcurl refuses the reply ("Received HTTP/0.9 when not allowed"), which surfaces as
        // URLError.unsupportedURL (-1002), not badServerResponse.
        #expect(Self.transportCode(error) == .unsupportedURL, "\(error)")
        #endif
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A server that closes without answering is transportFailed")
    func emptyReply() async throws {
        let server = try LoopbackServer { _ in .raw(Data()) }
        let error = try await #require(throws: NetworkClientError.self) {
            _ = try await server.client().run(NetworkRequest<VoidRequest, Post>(method: .get))
        }
        #expect(Self.transportCode(error) != nil, "\(error)")
        #if canImport(FoundationNetworking)
        // corelibs: "Empty reply from server" surfaces as URLError.badServerResponse (-1011).
        #expect(Self.transportCode(error) == .badServerResponse, "\(error)")
        #endif
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A final 1xx cannot be seen: an interim 100 is skipped, and 100 then close is transportFailed")
    func informationalStatus() async throws {
        // URLSession treats 1xx as interim and waits for the final response, so no request can end with status 100.
        let interim = try LoopbackServer { _ in
            .raw(Data("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8))
        }
        let response = try await interim.client().run(NetworkRequest<VoidRequest, String>(method: .get))
        #expect(response.statusCode == 200)
        #expect(response.value == "ok")

        let lonely = try LoopbackServer { _ in .raw(Data("HTTP/1.1 100 Continue\r\n\r\n".utf8)) }
        let error = try await #require(throws: NetworkClientError.self) {
            _ = try await lonely.client().run(NetworkRequest<VoidRequest, String>(method: .get))
        }
        #expect(Self.transportCode(error) != nil, "\(error)")
        #if canImport(FoundationNetworking)
        // corelibs: "Empty reply from server" surfaces as URLError.badServerResponse (-1011).
        #expect(Self.transportCode(error) == .badServerResponse, "\(error)")
        #endif
    }

    // MARK: Timeouts
    //
    // corelibs arms its timer with `Int(timeoutInterval) * 1000` ms: a timeout is truncated to whole seconds, so 0.5
    // becomes 0 and fires within about 10 ms, and 1.5 becomes 1. Courier rounds a request's `timeoutInterval` up on
    // Linux (0.5 waits 1 s), but not yet the session's `timeoutIntervalForRequest` (`subSecondSessionTimeout`).

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A server that never answers times out with the session's timeoutIntervalForRequest")
    func sessionTimeout() async throws {
        let server = try LoopbackServer { _ in .hang }
        let client = NetworkClient(configuration: Self.configuration(for: server, sessionTimeout: 0.5))
        var error: NetworkClientError?
        let duration = try await elapsed {
            error = try await #require(throws: NetworkClientError.self) {
                _ = try await client.run(NetworkRequest<VoidRequest, Post>(method: .get))
            }
        }
        #expect(Self.transportCode(try #require(error)) == .timedOut, "\(String(describing: error))")
        #expect(duration < Self.timeoutBound, "took \(duration)")
        // The timed-out connection is closed, not left hanging on the server. (corelibs truncates the session's 0.5 s
        // to 0, so the request may time out before it is even sent: then the server sees none.)
        #expect(await server.waitUntil { $0.inProgressRequests == 0 && $0.requestCount == $0.clientClosedCount })
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A server that never answers times out with the request's timeoutInterval")
    func requestTimeout() async throws {
        let server = try LoopbackServer { _ in .hang }
        var error: NetworkClientError?
        let duration = try await elapsed {
            error = try await #require(throws: NetworkClientError.self) {
                // The session allows 60 s: the request's 0.5 s must win, well under the bound.
                _ = try await NetworkClient(configuration: Self.configuration(for: server, sessionTimeout: 60))
                    .run(NetworkRequest<VoidRequest, Post>(method: .get, timeoutInterval: 0.5))
            }
        }
        #expect(Self.transportCode(try #require(error)) == .timedOut, "\(String(describing: error))")
        #expect(duration < Self.timeoutBound, "took \(duration)")
        #expect(await server.waitUntil { $0.inProgressRequests == 0 && $0.requestCount == $0.clientClosedCount })
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A whole-second timeout fires after its interval, not before")
    func wholeSecondTimeout() async throws {
        let server = try LoopbackServer { _ in .hang }
        let sessionClient = NetworkClient(configuration: Self.configuration(for: server, sessionTimeout: 1))
        let requestClient = NetworkClient(configuration: Self.configuration(for: server, sessionTimeout: 60))
        let cases: [(NetworkClient, NetworkRequest<VoidRequest, Post>)] = [
            (sessionClient, NetworkRequest(method: .get)),
            (requestClient, NetworkRequest(method: .get, timeoutInterval: 1)),
        ]
        for (client, request) in cases {
            var error: NetworkClientError?
            let duration = try await elapsed {
                error = try await #require(throws: NetworkClientError.self) { _ = try await client.run(request) }
            }
            #expect(Self.transportCode(try #require(error)) == .timedOut, "\(String(describing: error))")
            #expect(duration >= .milliseconds(900) && duration < Self.timeoutBound, "took \(duration)")
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A request's sub-second timeout waits for at least its interval")
    func subSecondRequestTimeout() async throws {
        let slow = try LoopbackServer { _ in .respond(status: 200, body: Data("ok".utf8), delay: .milliseconds(150)) }
        let request = NetworkRequest<VoidRequest, String>(method: .get, timeoutInterval: 0.5)
        #expect(try await slow.client().run(request).value == "ok")

        let hang = try LoopbackServer { _ in .hang }
        let hangClient = NetworkClient(configuration: Self.configuration(for: hang, sessionTimeout: 60))
        var error: NetworkClientError?
        let duration = try await elapsed {
            error = try await #require(throws: NetworkClientError.self) { _ = try await hangClient.run(request) }
        }
        #expect(Self.transportCode(try #require(error)) == .timedOut, "\(String(describing: error))")
        #expect(duration >= .milliseconds(450) && duration < Self.timeoutBound, "took \(duration)")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A session's sub-second timeout waits for at least its interval")
    func subSecondSessionTimeout() async throws {
        let slow = try LoopbackServer { _ in .respond(status: 200, body: Data("ok".utf8), delay: .milliseconds(150)) }
        let client = NetworkClient(configuration: Self.configuration(for: slow, sessionTimeout: 0.5))
        #expect(try await client.run(NetworkRequest<VoidRequest, String>(method: .get)).value == "ok")

        let hang = try LoopbackServer { _ in .hang }
        let hangClient = NetworkClient(configuration: Self.configuration(for: hang, sessionTimeout: 0.5))
        var error: NetworkClientError?
        let duration = try await elapsed {
            error = try await #require(throws: NetworkClientError.self) {
                _ = try await hangClient.run(NetworkRequest<VoidRequest, String>(method: .get))
            }
        }
        #expect(Self.transportCode(try #require(error)) == .timedOut, "\(String(describing: error))")
        #expect(duration >= .milliseconds(450) && duration < Self.timeoutBound, "took \(duration)")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A body dripped slower than the timeout in total, but faster than it per byte, is never a wrong value",
        arguments: [0.5, 1])
    func dripFeed(timeout: Double) async throws {
        let body = Data("abcdefghijklmnopqrst".utf8)
        let server = try LoopbackServer { _ in .drip(status: 200, body: body, interval: .milliseconds(300)) }
        let request = NetworkRequest<VoidRequest, String>(method: .get, timeoutInterval: timeout)
        let client = server.client()
        // 20 bytes, one every 300 ms: about 6 s in total, never idle for the timeout.
        let (outcome, duration) = try await withTimeLimit(.seconds(60)) {
            let clock = ContinuousClock()
            let start = clock.now
            let outcome: Result<String, any Error>
            do {
                outcome = .success(try await client.run(request).value)
            } catch {
                outcome = .failure(error)
            }
            return (outcome, clock.now - start)
        }
        switch outcome {
        case .success(let text):
            // An idle timeout, as NetworkRequest documents: the whole body, after the last byte.
            #expect(text == "abcdefghijklmnopqrst")
            #expect(duration >= .seconds(5), "took \(duration)")
        case .failure(let error):
            // What a total (not idle) timeout would give: timedOut, never a truncated body.
            #expect(Self.transportCode(error) == .timedOut, "\(error)")
        }
        #if canImport(FoundationNetworking)
        // corelibs restarts the timer with every byte received: an idle timeout. The body arrives after about 6 s,
        // with 0.5 s too, which Courier rounds up to 1 s (corelibs alone would truncate it to 0 and fail at once).
        #expect(throws: Never.self) { try outcome.get() }
        #endif
    }

    // MARK: Bodies that do not decode

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A 2xx with an empty body for a Decodable model is decodingFailed with empty data")
    func emptyBody() async throws {
        let server = try LoopbackServer { _ in .respond(status: 200) }
        let error = try await #require(throws: NetworkClientError.self) {
            _ = try await server.client().run(NetworkRequest<VoidRequest, Post>(method: .get))
        }
        guard case .decodingFailed(_, let data) = error else {
            Issue.record("expected decodingFailed, got \(error)")
            return
        }
        #expect(data.isEmpty)
        #expect(error.description.contains("the body is empty"), "\(error)")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Invalid JSON is decodingFailed, keeping the body")
    func invalidJSON() async throws {
        let body = Data(#"{"id": 1, "title": "unterminated"#.utf8)
        let server = try LoopbackServer { _ in .respond(status: 200, body: body) }
        let error = try await #require(throws: NetworkClientError.self) {
            _ = try await server.client().run(NetworkRequest<VoidRequest, Post>(method: .get))
        }
        guard case .decodingFailed(let underlying, let data) = error else {
            Issue.record("expected decodingFailed, got \(error)")
            return
        }
        #expect(underlying is DecodingError)
        #expect(data == body)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("JSON of the wrong shape is decodingFailed whose description names the coding path")
    func wrongShape() async throws {
        let body = Data(#"{"items":[{"id":1},{"id":"two"},{"id":3}]}"#.utf8)
        let server = try LoopbackServer { _ in .respond(status: 200, body: body) }
        let error = try await #require(throws: NetworkClientError.self) {
            _ = try await server.client().run(NetworkRequest<VoidRequest, Page>(method: .get))
        }
        guard case .decodingFailed(let underlying, let data) = error else {
            Issue.record("expected decodingFailed, got \(error)")
            return
        }
        #expect(underlying is DecodingError)
        #expect(data == body)
        #expect(error.description.contains("items[1].id"), "\(error)")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Bytes that are not UTF-8 for a String model are decodingFailed, keeping the body")
    func notUTF8() async throws {
        let body = Data([0x6F, 0x6B, 0xFF, 0xFE, 0xC3, 0x28])
        let server = try LoopbackServer { _ in .respond(status: 200, body: body) }
        let error = try await #require(throws: NetworkClientError.self) {
            _ = try await server.client().run(NetworkRequest<VoidRequest, String>(method: .get))
        }
        guard case .decodingFailed(_, let data) = error else {
            Issue.record("expected decodingFailed, got \(error)")
            return
        }
        #expect(data == body)
    }

    // MARK: Redirects

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A redirect loop fails after a bound with transportFailed(.httpTooManyRedirects)")
    func redirectLoop() async throws {
        let server = try LoopbackServer { _ in .redirect(status: 302, location: "/loop") }
        let client = server.client()
        let error = try await withTimeLimit(.seconds(60)) {
            try await #require(throws: NetworkClientError.self) {
                _ = try await client.run(NetworkRequest<VoidRequest, Post>(path: "loop", method: .get))
            }
        }
        #expect(Self.transportCode(error) == .httpTooManyRedirects, "\(error)")
        #expect(error.description.contains("too many redirects"), "\(error)")
        // Bounded: corelibs follows 20 redirects, like Apple platforms, so the server sees 21 requests.
        #expect(server.requestCount > 1 && server.requestCount <= 21, "\(server.requestCount) requests")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A redirect to an absolute path is followed and the final 200 returned",
        arguments: [301, 302, 303, 307, 308], ["/final", "/a/final?x=1"])
    func absolutePathRedirect(status: Int, location: String) async throws {
        let server = try LoopbackServer { request in
            request.path.hasSuffix("/old") ? .redirect(status: status, location: location) : .echo
        }
        let client = NetworkClient(configuration: server.configuration(path: "a"))
        let response = try await client.run(Echo(path: "b/old", method: .get))
        #expect(response.statusCode == 200)
        #expect(response.value.method == "GET")
        #expect(response.value.target == location)
        #expect(server.requestCount == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A redirect to a path-relative location resolves against the redirecting URL",
        arguments: [("final", "/a/b/final"), ("./final", "/a/b/final"), ("../final?x=1", "/a/final?x=1")])
    func pathRelativeRedirect(location: String, target: String) async throws {
        let server = try LoopbackServer { request in
            request.path.hasSuffix("/old") ? .redirect(status: 302, location: location) : .echo
        }
        let client = NetworkClient(configuration: server.configuration(path: "a"))
        let response = try await client.run(Echo(path: "b/old", method: .get))
        #expect(response.statusCode == 200)
        // RFC 3986 §5.2: relative to /a/b/old.
        #expect(response.value.target == target)
    }

    // MARK: Status codes

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A non-2xx status is unacceptableStatusCode with the body kept byte for byte",
        arguments: [304, 400, 401, 404, 429, 500, 503])
    func unacceptableStatus(status: Int) async throws {
        // JSON, then bytes that are neither UTF-8 nor harmless: NUL, 0xFF, CR LF.
        let body = Data(#"{"error":"status \#(status)"}"#.utf8) + Data([0x00, 0xFF, 0x0D, 0x0A])
        let headers: [ServerHeader] =
            switch status {
            case 401: [ServerHeader(name: "WWW-Authenticate", value: #"Bearer realm="api""#)]
            case 429: [ServerHeader(name: "Retry-After", value: "120")]
            default: []
            }
        let server = try LoopbackServer { _ in .respond(status: status, headers: headers, body: body) }
        let error = try await #require(throws: NetworkClientError.self) {
            _ = try await server.client().run(NetworkRequest<VoidRequest, Post>(path: "thing", method: .get))
        }
        guard case .unacceptableStatusCode(let statusCode, let response, let data) = error else {
            Issue.record("expected unacceptableStatusCode, got \(error)")
            return
        }
        #expect(statusCode == status)
        #expect(response.statusCode == status)
        if status == 304 {
            // 304 Not Modified has no body by definition (the server sends none).
        } else {
            #expect(data == body)
        }
        if status == 429 { #expect(response.value(forHTTPHeaderField: "Retry-After") == "120") }
        #expect(error.description.contains("\(status)"))
        #expect(server.requestCount == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A HEAD request with VoidResponse succeeds, with no body")
    func head() async throws {
        let server = try LoopbackServer { _ in .respond(status: 200, body: Data(repeating: 0x41, count: 1_000)) }
        let response = try await server.client().run(NetworkRequest<VoidRequest, VoidResponse>(method: .head))
        #expect(response.statusCode == 200)
        #expect(response.data.isEmpty)
        #expect((response.response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Length") == "1000")
        #expect(server.recordedRequests.map(\.method) == ["HEAD"])
    }

    // MARK: Helpers

    /// A configuration for `server` whose session has the given `timeoutIntervalForRequest`.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    /// The bound of a timeout that must fire: 30 s, far above the timeouts tested (at most 1 s) and below the 60 s of
    /// the sessions they must win over, so that it tells "fired" from "hung" or "the other timeout won", and never
    /// reads a starved machine as a failure (the parallel suite has delayed a 0.5 s timeout to 5 s).
    static let timeoutBound: Duration = .seconds(30)

    static func configuration(for server: LoopbackServer, sessionTimeout: TimeInterval) -> NetworkConfiguration {
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.timeoutIntervalForRequest = sessionTimeout
        return NetworkConfiguration(sessionConfiguration: sessionConfiguration, baseURL: server.baseURL)
    }

    /// The URLError code of a `transportFailed` error, or `nil` for any other error.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func transportCode(_ error: any Error) -> URLError.Code? {
        guard case NetworkClientError.transportFailed(let urlError) = error else { return nil }
        return urlError.code
    }
}

/// The error thrown by ``withTimeLimit(_:_:)`` when the operation did not finish in time.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct TimeLimitExceeded: Error, CustomStringConvertible {
    let limit: Duration
    var description: String { "the operation did not finish within \(limit)" }
}

/// Runs `operation`, or throws ``TimeLimitExceeded`` once `limit` has passed, without waiting for it, so that a
/// deadlock fails the test instead of hanging it; the operation is then cancelled.
///
/// The watchdog is a plain thread, not a task: a deadlock can block every thread of the Swift concurrency pool (a
/// cancellation handler waiting for a queue that waits for the task), and then no task, timer or test can run again.
/// If the caller has still not resumed 30 s after the limit, the watchdog stops the process with a message rather
/// than let the run hang until CI's limit without saying which test it was.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func withTimeLimit<T: Sendable>(
    _ limit: Duration, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = Race<T>()
    defer { race.markReturned() }
    return try await withCheckedThrowingContinuation { continuation in
        race.set(continuation)
        let work = Task {
            let result: Result<T, any Error>
            do { result = .success(try await operation()) } catch { result = .failure(error) }
            race.finish(result)
        }
        let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
        let watchdog = Thread {
            guard !race.waitForOutcome(seconds: seconds) else { return }
            if race.finish(.failure(TimeLimitExceeded(limit: limit))) {
                // Cancellation handlers run on the cancelling thread and may block: not on this one.
                Thread.detachNewThread { work.cancel() }
            }
            guard !race.waitForReturn(seconds: 30) else { return }
            fatalError(
                "\(TimeLimitExceeded(limit: limit)), and 30 s later the caller has still not resumed: every thread "
                    + "of the Swift concurrency pool is blocked (a deadlock). Stopping the test process.")
        }
        watchdog.name = "withTimeLimit watchdog"
        watchdog.start()
    }
}

/// The first outcome, the operation's or the watchdog's, resumes the continuation.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private final class Race<T: Sendable>: @unchecked Sendable {  // State is guarded by `condition`.
    private let condition = NSCondition()
    private var continuation: CheckedContinuation<T, any Error>?
    private var hasOutcome = false
    private var hasReturned = false

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func set(_ continuation: CheckedContinuation<T, any Error>) {
        condition.withLock { self.continuation = continuation }
    }

    /// Resumes with `result` if nothing did before; returns whether it did.
    @discardableResult
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func finish(_ result: Result<T, any Error>) -> Bool {
        let continuation = condition.withLock { () -> CheckedContinuation<T, any Error>? in
            guard !hasOutcome else { return nil }
            hasOutcome = true
            condition.broadcast()
            defer { self.continuation = nil }
            return self.continuation
        }
        continuation?.resume(with: result)
        return continuation != nil
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func markReturned() {
        condition.withLock {
            hasReturned = true
            condition.broadcast()
        }
    }

    /// Waits up to `seconds` for an outcome; returns whether there is one.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func waitForOutcome(seconds: Double) -> Bool {
        wait(seconds: seconds) { $0.hasOutcome }
    }

    /// Waits up to `seconds` for the caller to resume; returns whether it did.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func waitForReturn(seconds: Double) -> Bool {
        wait(seconds: seconds) { $0.hasReturned }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    private func wait(seconds: Double, until done: (Race) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while !done(self) {
            if !condition.wait(until: deadline) { return done(self) }
        }
        return true
    }
}
