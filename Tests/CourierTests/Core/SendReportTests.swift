import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// A decorator written as the "Writing a decorator" article shows it: it runs the request it forwards with
/// `runReporting` and hands on the request as the client at the bottom sent it, secrets redacted. It knows nothing of
/// Courier's other decorators.
final class AuditingClient: NetworkClientProtocol {
    struct Record: Sendable {
        let method: String
        let url: URL?
        let headers: [String: String]
        let failed: Bool
    }

    let wrapped: any NetworkClientProtocol
    private let record: @Sendable (Record) -> Void

    init(wrapping client: any NetworkClientProtocol, record: @escaping @Sendable (Record) -> Void) {
        wrapped = client
        self.record = record
    }

    func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        let (result, sent) = await wrapped.runReporting(networkRequest)
        audit(sent, failed: (try? result.get()) == nil)
        return try result.get()
    }

    private func audit(_ report: SendReport?, failed: Bool) {
        guard let report else { return }
        let secrets = report.sensitiveHeaders
        var headers: [String: String] = [:]
        for (name, value) in report.headers {
            headers[name] = secrets.contains(name.lowercased()) ? "<redacted>" : value
        }
        record(
            Record(
                method: report.request?.httpMethod ?? "?", url: report.request?.url, headers: headers, failed: failed))
    }
}

/// What auditing decorators wrote.
final class AuditLog: Sendable {
    private let records = Locked<[AuditingClient.Record]>([])

    var all: [AuditingClient.Record] { records.withLock { $0 } }

    var sink: @Sendable (AuditingClient.Record) -> Void {
        { record in self.records.withLock { $0.append(record) } }
    }
}

/// A header field by name, in any case.
private func field(_ name: String, in headers: [String: String]) -> String? {
    headers.first { $0.key.lowercased() == name.lowercased() }?.value
}

@Suite("SendReport: what the client at the bottom sent, for any decorator")
struct SendReportTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A decorator of the user's own sees the request as sent, after interceptors and credential, secrets named")
    func seesTheRequestAsSent() async throws {
        let server = try echoServer()
        let configuration = server.configuration(sensitiveHeaders: ["X-Session"])
        configuration.interceptors = [RequestChange { $0.setValue("t-1", forHTTPHeaderField: "X-Trace") }]
        let store = TokenStore(token: "tok-1")
        let log = AuditLog()
        // Above the authenticator and below it: the report is the bottom client's, wherever the decorator sits.
        let above = AuditingClient(
            wrapping: NetworkClient(configuration: configuration).authenticated(by: store.authenticator),
            record: log.sink)
        let below = AuditingClient(wrapping: NetworkClient(configuration: configuration), record: log.sink)
            .authenticated(by: store.authenticator)
        for client in [above, below] as [any NetworkClientProtocol] {
            _ = try await client.run(Echo(path: "me", method: .get, additionalHeaders: ["X-Session": "s-1"]))
        }
        let records = log.all
        #expect(records.count == 2)
        for record in records {
            #expect(record.method == "GET")
            #expect(record.url?.absoluteString == "http://127.0.0.1:\(server.port)/me")
            #expect(field("X-Trace", in: record.headers) == "t-1")
            #expect(field("Authorization", in: record.headers) == "<redacted>")
            #expect(field("X-Session", in: record.headers) == "<redacted>")
            #expect(field("Accept", in: record.headers) == "application/json")
            #expect(!record.failed)
        }
        // And the server got them, credential included: the redaction is the decorator's, not a change to the request.
        #expect(server.recordedRequests.map { $0.header("Authorization") } == ["Bearer tok-1", "Bearer tok-1"])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The report names the configuration's and the credential's secrets, and the base URL")
    func reportFields() async throws {
        let server = try echoServer()
        let configuration = server.configuration(sensitiveHeaders: ["X-Session"])
        let client = NetworkClient(configuration: configuration).authenticated(by: KeyAuthenticator())
        let request = Echo(path: "a", method: .post, additionalHeaders: ["X-Session": "s-1"])
        #expect(!request.wantsSendReport)
        let (result, sent) = await client.runReporting(request)
        _ = try result.get()
        let report = try #require(sent)
        #expect(report.sensitiveHeaders.isSuperset(of: ["authorization", "cookie", "x-session", "x-api-key"]))
        #expect(report.baseURL == configuration.baseURL)
        #expect(report.request?.httpMethod == "POST")
        #expect(field("X-Api-Key", in: report.headers) == "k-1")
        #expect(!report.credentialWithheld)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A failure reports too: an error status, and a request refused before anything was sent")
    func failures() async throws {
        let server = try LoopbackServer { _ in .respond(status: 503) }
        let log = AuditLog()
        let client = AuditingClient(wrapping: server.client(), record: log.sink)
        await #expect(throws: NetworkClientError.self) { try await client.run(Echo(path: "busy", method: .get)) }

        let refused = Echo(path: "x", method: .get, additionalHeaders: ["X-Bad": "line\r\nbreak", "X-Ok": "1"])
        let plain = server.client()
        let (result, sent) = await plain.runReporting(refused)
        #expect(throws: NetworkClientError.self) { try result.get() }

        #expect(log.all.map(\.failed) == [true])
        #expect(log.all.first?.url?.path == "/busy")
        // Nothing was sent: no request, the request's own headers, and still the configuration's base URL.
        let report = try #require(sent)
        #expect(report.request == nil)
        #expect(report.headers == ["X-Bad": "line\r\nbreak", "X-Ok": "1"])
        #expect(report.baseURL == plain.configuration.baseURL)
        #expect(server.requestCount == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A credential withheld from another origin says so; the server there never sees it")
    func withheld() async throws {
        let main = try echoServer()
        let other = try echoServer(host: "localhost")
        let store = TokenStore(token: "tok-1")
        let client = main.client().authenticated(by: store.authenticator)
        let (result, sent) = await client.runReporting(Echo(path: "o", method: .get, baseURL: other.baseURL))
        _ = try result.get()
        let report = try #require(sent)
        #expect(report.credentialWithheld)
        #expect(field("Authorization", in: report.headers) == nil)
        #expect(report.baseURL == other.baseURL)
        #expect(other.recordedRequests.first?.header("Authorization") == nil)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Every order: the user's decorator at each position of the recommended stack sees every call as sent")
    func everyPosition() async throws {
        let server = try LoopbackServer { request in
            request.header("Authorization") == "Bearer fresh-1" ? .echo() : .respond(status: 401)
        }
        let recommended: [Layer] = [.logged, .retrying, .authenticated, .deduplicated]
        for position in 0...recommended.count {
            let store = TokenStore(token: "expired")
            let audit = AuditLog()
            var client: any NetworkClientProtocol = NetworkClient(
                configuration: server.configuration(sensitiveHeaders: ["X-Session"]))
            var layers = recommended
            layers.insert(.forwarding, at: position)
            for layer in layers {
                switch layer {
                case .logged: client = client.logged(level: .debug) { _ in }
                case .retrying: client = client.retrying()
                case .authenticated: client = client.authenticated(by: store.authenticator)
                case .deduplicated: client = client.deduplicated()
                case .sequential: client = client.sequential()
                case .forwarding: client = AuditingClient(wrapping: client, record: audit.sink)
                }
            }
            _ = try await client.run(Echo(path: "me", method: .get, additionalHeaders: ["X-Session": "s-1"]))
            let records = audit.all
            // Below the authenticator the decorator sees the rejected call and the renewed one; above it, the one
            // call that returned, whose last attempt was the renewed one.
            #expect(records.isEmpty == false, "\(layers)")
            for record in records {
                #expect(field("Authorization", in: record.headers) == "<redacted>", "\(layers)")
                #expect(field("X-Session", in: record.headers) == "<redacted>", "\(layers)")
                #expect(record.url?.path == "/me", "\(layers)")
            }
            #expect(records.last?.failed == false, "\(layers)")
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A shared call's report reaches every caller's recorders, whatever recorders their requests carry")
    func sharedCall() async throws {
        let gate = Gate()
        let server = try gatedServer(gate, answering: .echo())
        let shared = NetworkClient(configuration: server.configuration(sensitiveHeaders: ["X-Session"])).deduplicated()
        let logs = (0..<3).map { _ in AuditLog() }
        let callers = logs.map { log in
            Task {
                try await AuditingClient(wrapping: shared, record: log.sink).run(
                    Echo(path: "same", method: .get, additionalHeaders: ["X-Session": "s-1"]))
            }
        }
        #expect(await eventually { shared.waiterCount == 3 })
        gate.open()
        for caller in callers { _ = try await caller.value }
        #expect(server.requestCount == 1)
        for log in logs {
            #expect(log.all.count == 1)
            #expect(log.all.first?.url?.path == "/same")
            #expect(log.all.first.map { field("X-Session", in: $0.headers) } == "<redacted>")
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The stub reports what it recorded; a test double of the user's own reports with the public initializer")
    func doubles() async throws {
        let stub = StubNetworkClient()
        stub.stub(.get, "/me", statusCode: 204)
        let log = AuditLog()
        let client = AuditingClient(
            wrapping: stub.authenticated(by: TokenStore(token: "tok-1").authenticator), record: log.sink)
        _ = try await client.run(NetworkRequest<VoidRequest, VoidResponse>(path: "me", method: .get))
        #expect(log.all.first.map { field("Authorization", in: $0.headers) } == "<redacted>")

        // A double that reports a header its configuration would call secret: a logger above it redacts it.
        let lines = LogCollector()
        let double = ReportingDouble()
        let logged = loggingClient(double, level: .debug, to: lines)
        _ = try await logged.run(
            NetworkRequest<VoidRequest, VoidResponse>(
                path: "p", method: .get, additionalHeaders: ["X-Custom": "c-1", "X-Plain": "shown"]))
        let entry = try #require(lines.all.first)
        #expect(entry.requestHeaders.first { $0.name == "X-Custom" }?.value == "<redacted>")
        #expect(entry.requestHeaders.first { $0.name == "X-Plain" }?.value == "shown")
        #expect(entry.url.hasPrefix("https://double.invalid/v1/p"))

        // Straight over the double: runReporting hands back what it reported.
        let (result, sent) = await double.runReporting(
            NetworkRequest<VoidRequest, VoidResponse>(path: "p", method: .get, additionalHeaders: ["X-Custom": "c-2"]))
        #expect((try? result.get())?.statusCode == 204)
        #expect(sent?.headers == ["X-Custom": "c-2"])
        #expect(sent?.sensitiveHeaders.contains("x-custom") == true)
        #expect(sent?.baseURL == URL(string: "https://double.invalid/v1"))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A counting decorator under an outbox sees exactly the real requests")
    func countingUnderAnOutbox() async throws {
        let server = try LoopbackServer { _ in .respond(status: 204) }
        let counted = Locked<[String]>([])
        let configuration = server.configuration()
        let counting = CountingClient(wrapped: NetworkClient(configuration: configuration)) { path in
            counted.withLock { $0.append(path) }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("counting-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(directory: directory, client: counting, rules: Outbox.Rules(configuration))
        var tickets: [OutboxTicket] = []
        for index in 0..<3 {
            tickets.append(
                try await outbox.enqueue(
                    NetworkRequest<[String: Int], VoidResponse>(path: "w\(index)", method: .post, body: ["n": index]),
                    kind: "write"))
        }
        for ticket in tickets { _ = try await outbox.result(of: ticket, as: VoidResponse.self) }
        await outbox.close()
        #expect(counted.withLock { $0 } == server.recordedRequests.map(\.path))
        #expect(counted.withLock { $0 }.sorted() == ["/w0", "/w1", "/w2"])
    }
}

/// A counting decorator as the "Writing a decorator" article shows one: it only forwards `run`.
private struct CountingClient: NetworkClientProtocol {
    let wrapped: any NetworkClientProtocol
    let count: @Sendable (String) -> Void

    func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        count("/" + (networkRequest.path ?? ""))
        return try await wrapped.run(networkRequest)
    }
}

/// An API key in a header of its own.
private struct KeyAuthenticator: Authenticator {
    func credential() async throws -> String { "k-1" }
    func apply(_ credential: String, to headers: inout [String: String]) { headers["X-Api-Key"] = credential }
    func refresh(rejected: String) async throws -> String { rejected }
}

/// A test double of the user's own that reports what it would send, naming `X-Custom` a secret.
private struct ReportingDouble: NetworkClientProtocol {
    func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        let base = URL(string: "https://double.invalid/v1")!
        networkRequest.report(
            SendReport(
                request: nil, headers: networkRequest.additionalHeaders ?? [:], sensitiveHeaders: ["X-Custom"],
                baseURL: base))
        let head = HTTPURLResponse(url: base, statusCode: 204, httpVersion: "HTTP/1.1", headerFields: [:])!
        guard let value = VoidResponse() as? ResponseModel else { throw NetworkClientError.invalidResponse(head) }
        return NetworkResponse(value: value, response: head)
    }
}
