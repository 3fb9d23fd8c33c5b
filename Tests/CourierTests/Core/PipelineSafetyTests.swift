import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// An authenticator that sends an API key in `X-Api-Key` rather than `Authorization`.
struct APIKeyAuthenticator: Authenticator {
    let key: String

    func credential() async throws -> String { key }

    func apply(_ credential: String, to headers: inout [String: String]) {
        headers["X-Api-Key"] = credential
    }

    func refresh(rejected: String) async throws -> String { key }
}

/// A test double of the user's own: it answers every request with a 404 and reports nothing.
struct StubDouble: NetworkClientProtocol {
    func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        let response = HTTPURLResponse(
            url: URL(string: "https://double.invalid")!, statusCode: 404, httpVersion: nil, headerFields: [:])!
        throw NetworkClientError.unacceptableStatusCode(statusCode: 404, response: response, data: Data())
    }
}

/// A renewal that does not return until the test lets it. It waits without blocking a thread: a blocked thread of
/// the cooperative pool (two on this machine) stalls every other test running beside it.
final class StalledRenewal: Sendable {
    private let released = SharedOutcome<Void>()
    let started = Locked(0)

    var authenticator: BearerTokenAuthenticator {
        BearerTokenAuthenticator(
            token: { "expired" },
            refresh: { _ in
                self.started.withLock { $0 += 1 }
                try await self.released.value(until: nil)
                return "fresh"
            })
    }

    func release() { released.finish(.success(())) }
}

@Suite("Pipeline safety: request options, credential scope, redaction, what the outbox stores")
struct PipelineSafetyTests {
    // MARK: Request options

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("allowsSharing false: identical requests in flight are each sent")
    func sharingOptOut() async throws {
        let gate = Gate()
        let server = try gatedServer(gate, answering: .echo())
        let client = server.client().deduplicated()
        let request = Echo(path: "side-effect", method: .get, options: RequestOptions(allowsSharing: false))
        let calls = (0..<3).map { _ in Task { try await client.run(request) } }
        #expect(await eventually { server.inProgressRequests == 3 })
        gate.open()
        for call in calls { _ = try await call.value }
        #expect(server.requestCount == 3)
        #expect(client.inFlightCount == 0)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("sendsCredential false: sent without the credential, and a 401 is the outcome, with no renewal")
    func credentialOptOut() async throws {
        let server = try authServer(accepting: "fresh-1")
        let store = TokenStore(token: "expired")
        let client = server.client().authenticated(by: store.authenticator)
        let signIn = Echo(path: "sign-in", method: .get, options: RequestOptions(sendsCredential: false))
        await #expect(throws: NetworkClientError.self) { try await client.run(signIn) }
        #expect(store.refreshes.isEmpty)
        #expect(server.requestCount == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("allowsRetry false: a 503 is sent once; a tag is written first in the log entry")
    func retryOptOutAndTag() async throws {
        let server = try LoopbackServer { _ in .respond(status: 503) }
        let log = LogCollector()
        let time = VirtualTime()
        let client = loggingClient(
            RetryingDecorator(wrapping: server.client(), policy: RetryPolicy(), environment: time.environment),
            level: .info, to: log)
        let once = Echo(path: "once", method: .get, options: RequestOptions(allowsRetry: false, tag: "health"))
        await #expect(throws: NetworkClientError.self) { try await client.run(once) }
        #expect(server.requestCount == 1)
        #expect(time.sleeps.isEmpty)
        #expect(log.all.map(\.tag) == ["health"])
        #expect(log.lines.first?.hasPrefix("[health] GET http://127.0.0.1:\(server.port)/once -> 503") == true)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Requests that differ only in their options never share a call")
    func optionsAreIdentity() async throws {
        let gate = Gate()
        let server = try gatedServer(gate, answering: .echo())
        let client = server.client().deduplicated()
        let plain = Echo(path: "me", method: .get)
        let tagged = Echo(path: "me", method: .get, options: RequestOptions(allowsRetry: false))
        let calls = [plain, tagged].map { request in Task { try await client.run(request) } }
        #expect(await eventually { server.inProgressRequests == 2 })
        gate.open()
        for call in calls { _ = try await call.value }
        #expect(server.requestCount == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Debug, with no report from below (a test double of your own): only harmless header values are shown")
    func loggerWithoutReport() async throws {
        let log = LogCollector()
        let client = loggingClient(ForwardingClient(wrapped: StubDouble()), level: .debug, to: log)
        _ = try? await client.run(
            Echo(path: "x", method: .get, additionalHeaders: ["X-Session": "SESS-1", "Accept": "application/json"]))
        #expect(!log.everything.contains("SESS-1"))
        #expect(
            log.all.first?.requestHeaders.map { "\($0.name): \($0.value)" }
                == ["Accept: application/json", "X-Session: <redacted>"])
    }

    // MARK: Credential scope

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A credential in a header of the authenticator's own never follows a redirect to another origin")
    func customCredentialAcrossRedirect() async throws {
        let other = try LoopbackServer(host: "localhost") { _ in .echo() }
        let main = try LoopbackServer { _ in .redirect(status: 302, location: other.baseURL.absoluteString + "/x") }
        let client = main.client().logged(level: .info) { _ in }.retrying()
            .authenticated(by: APIKeyAuthenticator(key: "KEY-1234"))
        let echoed = try await client.run(Echo(path: "go", method: .get)).value
        #expect(echoed.path == "/x")
        #expect(echoed.header("X-Api-Key") == nil)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Waiting for a renewal that never returns ends with the caller's cancellation or total timeout")
    func renewalWaitersStop() async throws {
        let server = try LoopbackServer { _ in .respond(status: 401) }
        let renewal = StalledRenewal()
        defer { renewal.release() }
        let client = server.client().authenticated(by: renewal.authenticator)
        let first = Task { try await client.run(Echo(path: "a", method: .get)) }
        #expect(await eventually { renewal.started.withLock { $0 } == 1 })
        // A caller that starts while the renewal runs waits for it, and stops waiting when cancelled.
        let cancelled = Task { try await client.run(Echo(path: "b", method: .get)) }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        // One with a total timeout stops when it passes, with the timeout error of a transfer.
        let timed = Task { try await client.run(Echo(path: "c", method: .get, totalTimeout: 0.3)) }
        do {
            _ = try await timed.value
            Issue.record("the call returned while the renewal was stalled")
        } catch NetworkClientError.transportFailed(let error) {
            #expect(error.code == .timedOut)
        }
        first.cancel()
        await #expect(throws: CancellationError.self) { try await first.value }
        #expect(renewal.started.withLock { $0 } == 1)
    }

    // MARK: Redaction in logs

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "Debug: an interceptor's key echoed by the server, a JSON-escaped token and password-like fields are redacted")
    func debugEchoes() async throws {
        let server = try echoServer()
        let configuration = server.configuration()
        configuration.interceptors = [
            RequestChange { request in
                request.setValue("IKEY-5678", forHTTPHeaderField: "X-Api-Key")
            }
        ]
        let log = LogCollector()
        let client = loggingClient(NetworkClient(configuration: configuration), level: .debug, to: log)
        let request = NetworkRequest<[String: String], EchoedRequest>(
            path: "account", method: .post,
            body: ["newPassword": "NEWPW-1", "password_confirmation": "NEWPW-1", "name": "ann"],
            additionalHeaders: ["Authorization": "Bearer AB/CD/EF"])
        _ = try await client.run(request)
        let written = log.everything
        // The echo writes the token as JSON does, "AB\/CD\/EF".
        for secret in ["IKEY-5678", "AB/CD/EF", #"AB\/CD\/EF"#, "NEWPW-1"] {
            #expect(!written.contains(secret), "the log holds \(secret)")
        }
        #expect(written.contains("ann"))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Info: a bare query name, which may be a token, is redacted as in error descriptions")
    func bareQueryToken() async throws {
        let server = try echoServer()
        let log = LogCollector()
        let client = loggingClient(server.client(), level: .info, to: log)
        _ = try await client.run(
            Echo(path: "feed", method: .get, queryItems: [URLQueryItem(name: "TOKEN-77", value: nil)]))
        #expect(
            log.lines == [
                "GET http://127.0.0.1:\(server.port)/feed?<redacted> -> 200, 12 ms, \(log.all[0].responseSize ?? 0) bytes"
            ])
    }

    // MARK: What the outbox stores

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The outbox refuses a secret in the query, the base URL, a header, a form or a JSON body")
    func outboxRefusesSecrets() async throws {
        let server = try echoServer()
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(
            directory: directory, client: server.client().retrying(), rules: Outbox.Rules(), paused: true)
        let withPassword = URL(string: "http://ann:PW-9@127.0.0.1:\(server.port)")!
        let refused: [(NetworkRequest<Data, VoidResponse>, OutboxError)] = [
            (
                NetworkRequest(
                    path: "w", method: .post, queryItems: [URLQueryItem(name: "access_token", value: "QT-1")]),
                .secretValue(name: "access_token", location: "the query")
            ),
            (
                NetworkRequest(path: "w", method: .post, baseURL: withPassword),
                .secretValue(name: "user info", location: "the base URL")
            ),
            (
                NetworkRequest(path: "w", method: .post, additionalHeaders: ["X-Api-Key": "HK-1"]),
                .secretHeader(name: "X-Api-Key")
            ),
            (
                NetworkRequest(path: "w", method: .post, formItems: [URLFormItem(name: "password", value: "FP-1")]),
                .secretValue(name: "password", location: "the form body")
            ),
            (
                NetworkRequest(path: "w", method: .post, body: Data(#"{"user":{"client_secret":"JS-1"}}"#.utf8)),
                .secretValue(name: "client_secret", location: "the JSON body")
            ),
        ]
        for (request, error) in refused {
            await #expect(throws: error) { try await outbox.enqueue(request, kind: "w") }
        }
        await outbox.close()
        let onDisk = String(decoding: everyByte(under: directory), as: UTF8.self)
        for secret in ["QT-1", "PW-9", "HK-1", "FP-1", "JS-1", "BQ-1"] { #expect(!onDisk.contains(secret)) }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A stored result keeps no secret-named response header")
    func outboxStoredResultHeaders() async throws {
        let server = try LoopbackServer { _ in
            .respond(
                status: 201, headers: [ServerHeader(name: "X-Auth-Token", value: "RT-4242")], body: Data("{}".utf8))
        }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules())
        let events = outbox.events()
        try await outbox.enqueue(
            NetworkRequest<Data, VoidResponse>(path: "w", method: .post, body: Data("{}".utf8)), kind: "w")
        _ = await firstEvent(events) { if case .sent = $0 { true } else { false } }
        // No handler is registered: the result is written to the journal to wait for one.
        let onDisk = { String(decoding: everyByte(under: directory), as: UTF8.self) }
        #expect(await eventually { onDisk().contains(#""statusCode":201"#) })
        await outbox.close()
        #expect(!onDisk().contains("RT-4242"))
        #expect(!onDisk().lowercased().contains("x-auth-token"))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The outbox over retrying(): one request on the wire per outbox attempt")
    func outboxIsTheRetryLayer() async throws {
        let server = try LoopbackServer { _ in .respond(status: 503) }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let time = VirtualTime()
        let client = RetryingDecorator(wrapping: server.client(), policy: RetryPolicy(), environment: time.environment)
        // The outbox's own backoff waits until the outbox is closed, so exactly one outbox attempt is made.
        let waitsForever = RetryEnvironment(
            sleep: { _ in try await Task.sleep(nanoseconds: 3_600_000_000_000) }, now: { Date() },
            random: { $0.upperBound })
        let outbox = try Outbox(directory: directory, client: client, environment: waitsForever)
        let events = outbox.events()
        try await outbox.enqueue(NetworkRequest<Data, VoidResponse>(path: "w", method: .post, body: Data()), kind: "w")
        let retrying = await firstEvent(events) { if case .retrying = $0 { true } else { false } }
        #expect(retrying != nil)
        #expect(server.requestCount == 1)
        #expect(time.sleeps.isEmpty)
        await outbox.close()
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("onResult decodes with the decoder of the rules given, the configuration's, under any decorator")
    func outboxDecoderFromConfiguration() async throws {
        struct Created: Decodable, Sendable { let postID: Int }
        let server = try LoopbackServer { _ in .json(["post_i_d": 7], status: 201) }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let configuration = NetworkConfiguration(
            sessionConfiguration: .ephemeral, defaultDecoder: decoder, baseURL: server.baseURL)
        let outbox = try Outbox(
            directory: directory, client: ForwardingClient(wrapped: NetworkClient(configuration: configuration)),
            rules: Outbox.Rules(configuration),
            paused: true)
        let received = Locked<Int?>(nil)
        outbox.onResult(kind: "create", as: Created.self) { _, result in
            received.withLock { $0 = (try? result.get())?.value.postID ?? -1 }
        }
        try await outbox.enqueue(
            NetworkRequest<Data, VoidResponse>(path: "p", method: .post, body: Data()), kind: "create")
        outbox.resume()
        #expect(await eventually { received.withLock { $0 } != nil })
        #expect(received.withLock { $0 } == 7)
        await outbox.close()
    }

    // MARK: The stub

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A stub matcher may read the recorded requests", .timeLimit(.minutes(1)))
    func stubMatcherReadsRequests() async throws {
        let client = StubNetworkClient()
        client.stub(label: "second call", where: { _ in client.requests.count == 2 }, answer: { _ in .json("{}") })
        client.stub(label: "first call", where: { _ in client.requests.count == 1 }, answer: { _ in .json("[]") })
        #expect(try await client.run(NetworkRequest<VoidRequest, [Int]>(method: .get)).value == [])
        _ = try await client.run(NetworkRequest<VoidRequest, [String: Int]>(method: .get))
        #expect(client.requests.count == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A stub answers a download from a canned body, at the destination, and reports progress")
    func stubDownload() async throws {
        let client = StubNetworkClient()
        client.stub(.get, "/report.csv", statusCode: 200, body: "a,b\n1,2\n")
        let destination = FileManager.default.temporaryDirectory.appendingPathComponent("stub-\(UUID().uuidString).csv")
        defer { try? FileManager.default.removeItem(at: destination) }
        let progress = Locked<[Int64]>([])
        let file = try await client.run(
            NetworkRequest<VoidRequest, DownloadedFile>(
                path: "/report.csv", method: .get, downloadDestination: destination,
                onProgress: { report in progress.withLock { $0.append(report.bytesReceived) } })
        ).value
        #expect(file.url == destination)
        #expect(file.byteCount == 8)
        #expect(try String(contentsOf: destination, encoding: .utf8) == "a,b\n1,2\n")
        #expect(progress.withLock { $0 } == [8])
    }
}
