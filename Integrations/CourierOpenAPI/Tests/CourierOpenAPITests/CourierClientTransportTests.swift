import Courier
import CourierOpenAPI
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Hands out canned answers in order, the last one again once they run out.
private final class AnswerSequence: @unchecked Sendable {  // `index` is read and written under `lock` only.
    private let answers: [InMemoryTransport.Response]
    private let lock = NSLock()
    private var index = 0

    init(_ answers: [InMemoryTransport.Response]) {
        self.answers = answers
    }

    func next() -> InMemoryTransport.Response {
        lock.lock()
        defer { lock.unlock() }
        defer { index += 1 }
        return answers[min(index, answers.count - 1)]
    }
}

/// The recommended stack over `transport`: a bearer token, retries of transient failures, logging.
private func generatedClient(
    over transport: InMemoryTransport, log: @escaping @Sendable (LogEntry) -> Void = { _ in }
) throws -> Client {
    // The configuration's base URL is the API's: the credential is sent to its origin only.
    let configuration = NetworkConfiguration(transport: transport, baseURL: try Servers.Server1.url())
    let courier = NetworkClient(configuration: configuration)
        .logged(to: log)
        .retrying(RetryPolicy(maxAttempts: 3, baseDelay: 0))
        .authenticated(by: BearerTokenAuthenticator(token: { "t0ken" }, refresh: { _ in "t0ken-2" }))
    return Client(serverURL: try Servers.Server1.url(), transport: CourierClientTransport(client: courier))
}

@Suite("CourierClientTransport")
struct CourierClientTransportTests {
    @Test("A generated GET runs through the decorators: the credential sent, a 503 retried, the JSON decoded")
    func getThroughStack() async throws {
        let answers = AnswerSequence([.status(503), .json(#"{"id":42,"text":"generated"}"#)])
        let transport = InMemoryTransport { _ in answers.next() }
        let logged = LockedEntries()
        let api = try generatedClient(over: transport, log: logged.append)

        let response = try await api.getMemo(path: .init(id: "42"))

        #expect(try response.ok.body.json == Components.Schemas.Memo(id: 42, text: "generated"))
        let requests = transport.requests
        #expect(requests.map(\.description) == Array(repeating: "GET https://memos.test/api/memos/42", count: 2))
        #expect(requests.allSatisfy { $0.header("Authorization") == "Bearer t0ken" })
        #expect(requests.first?.header("Accept") == "application/json")
        // Each attempt logged, with the operation's ID as its tag: the 503, then the streamed 200 when it opened and
        // when the generated client had read its body.
        #expect(logged.tags == ["getMemo", "getMemo", "getMemo"])
        #expect(logged.phases == ["call", "opened", "ended"])
    }

    @Test("A streamed JSON body, which the generated client collects whole, is held to maximumJSONBodySize")
    func streamedJSONIsBounded() async throws {
        let memo = Data(#"{"id":42,"text":"\#(String(repeating: "x", count: 5_000))"}"#.utf8)
        let transport = InMemoryTransport { _ in
            InMemoryTransport.Response(headers: ["Content-Type": "application/json"], body: memo, pieces: 10)
        }
        let configuration = NetworkConfiguration(transport: transport, baseURL: try Servers.Server1.url())
        let courier = NetworkClient(configuration: configuration)
        let bounded = Client(
            serverURL: try Servers.Server1.url(),
            transport: CourierClientTransport(client: courier, maximumJSONBodySize: 1_000))
        let error = try await #require(throws: ClientError.self) {
            _ = try await bounded.getMemo(path: .init(id: "42")).ok.body.json
        }
        // The limit that applied, by its name.
        #expect(error.underlyingError as? CourierClientTransportError == .jsonBodyTooLarge(limit: 1_000))
        #expect("\(error.underlyingError)".contains("maximumJSONBodySize"))
        let roomy = Client(serverURL: try Servers.Server1.url(), transport: CourierClientTransport(client: courier))
        #expect(try await roomy.getMemo(path: .init(id: "42")).ok.body.json.id == 42)
    }

    @Test("Buffered bodies are read whole under Courier's size limit; streamed ones are handed over as they are")
    func bufferedAndStreamed() async throws {
        let bytes = Data((0..<5_000).map { UInt8($0 % 251) })
        let transport = InMemoryTransport { _ in
            InMemoryTransport.Response(
                headers: ["Content-Type": "application/octet-stream", "Content-Length": "5000"], body: bytes,
                pieces: 5)
        }
        let configuration = NetworkConfiguration(transport: transport, baseURL: try Servers.Server1.url())
        configuration.maximumResponseSize = 1_000
        let courier = NetworkClient(configuration: configuration)

        let buffered = Client(
            serverURL: try Servers.Server1.url(),
            transport: CourierClientTransport(client: courier, responseBodies: .buffered))
        let error = try await #require(throws: ClientError.self) {
            try await buffered.getAttachment(path: .init(id: "1"))
        }
        guard case .responseTooLarge(let limit) = error.underlyingError as? NetworkClientError else {
            Issue.record("expected responseTooLarge, got \(error.underlyingError)")
            return
        }
        #expect(limit == 1_000)

        let streamed = Client(serverURL: try Servers.Server1.url(), transport: CourierClientTransport(client: courier))
        let body = try await streamed.getAttachment(path: .init(id: "1")).ok.body.binary
        #expect(body.length == .known(5_000))
        var chunks = 0
        var received = Data()
        for try await chunk in body {
            chunks += 1
            received.append(contentsOf: chunk)
        }
        #expect(received == bytes)
        #expect(chunks == 5)  // As the transport received them.
    }

    @Test("A documented 404 reaches the generated client as its notFound case, with the body decoded")
    func documentedError() async throws {
        let transport = InMemoryTransport { _ in .json(#"{"message":"no memo 7"}"#, status: 404) }
        let api = try generatedClient(over: transport)

        let response = try await api.getMemo(path: .init(id: "7"))

        guard case .notFound(let notFound) = response else {
            Issue.record("expected notFound, got \(response)")
            return
        }
        #expect(try notFound.body.json.message == "no memo 7")
    }

    @Test("Query items arrive as the generator encoded them, and a path parameter stays one segment")
    func queryAndPath() async throws {
        let transport = InMemoryTransport { request in
            request.url.path.hasPrefix("/api/memos/") ? .json(#"{"id":1,"text":"slash"}"#) : .json("[]")
        }
        let api = try generatedClient(over: transport)

        _ = try await api.listMemos(query: .init(limit: 2, q: "a b&c=d/é"))
        _ = try await api.getMemo(path: .init(id: "x/y z"))

        let requests = transport.requests
        try #require(requests.count == 2)
        #expect(requests[0].query("limit") == "2")
        #expect(requests[0].query("q") == "a b&c=d/é")
        #expect(requests[1].url.absoluteString.hasPrefix("https://memos.test/api/memos/x%2Fy%20z"))
    }

    @Test("A JSON body goes out with its Content-Type; a 201 comes back as created")
    func postJSON() async throws {
        let transport = InMemoryTransport { request in
            request.method == "POST" ? .json(#"{"id":1,"text":"hi"}"#, status: 201) : .status(405)
        }
        let api = try generatedClient(over: transport)

        let response = try await api.createMemo(body: .json(.init(text: "hi")))

        #expect(try response.created.body.json == Components.Schemas.Memo(id: 1, text: "hi"))
        let request = try #require(transport.requests.first)
        #expect(request.header("Content-Type") == "application/json; charset=utf-8")
        #expect(try request.decodedBody(as: Components.Schemas.NewMemo.self) == .init(text: "hi"))
    }

    @Test("Binary bodies both ways: the bytes sent arrive as they are, the bytes answered come back whole")
    func binary() async throws {
        let bytes = (0..<70_000).map { UInt8($0 % 251) }
        let stored = LockedData()
        let transport = InMemoryTransport { request in
            if request.method == "PUT" {
                stored.set(request.body)
                return .status(204)
            }
            return InMemoryTransport.Response(
                headers: ["Content-Type": "application/octet-stream"], body: stored.get(), pieces: 4)
        }
        let api = try generatedClient(over: transport)

        _ = try await api.putAttachment(path: .init(id: "1"), body: .binary(HTTPBody(bytes))).noContent
        let response = try await api.getAttachment(path: .init(id: "1"))

        #expect(transport.requests.first?.header("Content-Type") == "application/octet-stream")
        #expect(stored.get() == Data(bytes))
        let received = try await [UInt8](collecting: response.ok.body.binary, upTo: 1_000_000)
        #expect(received == bytes)
    }

    @Test("A transport failure reaches the generated client's caller as Courier's error inside its ClientError")
    func transportFailure() async throws {
        let transport = InMemoryTransport { _ in throw URLError(.cannotConnectToHost) }
        let configuration = NetworkConfiguration(transport: transport, baseURL: URL(string: "https://unused.test")!)
        let api = Client(
            serverURL: try Servers.Server1.url(),
            transport: CourierClientTransport(client: NetworkClient(configuration: configuration)))

        let error = try await #require(throws: ClientError.self) { try await api.getMemo(path: .init(id: "1")) }
        guard case .transportFailed(let urlError) = error.underlyingError as? NetworkClientError else {
            Issue.record("expected transportFailed, got \(error.underlyingError)")
            return
        }
        #expect(urlError.code == .cannotConnectToHost)
        #expect(error.operationID == "getMemo")
    }

    @Test("Tests of a generated client swap in StubNetworkClient")
    func stubbed() async throws {
        // The stub's base URL is the API's server: an operation's URL is recorded as a path under it, so a path stub
        // matches it.
        let stub = StubNetworkClient(baseURL: try Servers.Server1.url())
        stub.stub(
            .get, "/memos/3", data: Data(#"{"id":3,"text":"stubbed"}"#.utf8),
            headers: ["Content-Type": "application/json"])
        let api = Client(serverURL: try Servers.Server1.url(), transport: CourierClientTransport(client: stub))

        let memo = try await api.getMemo(path: .init(id: "3")).ok.body.json

        #expect(memo == Components.Schemas.Memo(id: 3, text: "stubbed"))
        #expect(stub.requests.map(\.description) == ["GET /memos/3"])
    }
}

/// Log entries, under a lock.
private final class LockedEntries: @unchecked Sendable {  // `entries` is read and written under `lock` only.
    private let lock = NSLock()
    private var entries: [LogEntry] = []

    func append(_ entry: LogEntry) {
        lock.lock()
        defer { lock.unlock() }
        entries.append(entry)
    }

    var tags: [String?] {
        lock.lock()
        defer { lock.unlock() }
        return entries.map(\.tag)
    }

    /// What each entry is: `call` (not a stream's), or a stream's `opened` or `ended`.
    var phases: [String] {
        lock.lock()
        defer { lock.unlock() }
        return entries.map { entry in
            switch entry.stream {
            case nil: "call"
            case .opened: "opened"
            case .ended: "ended"
            }
        }
    }
}

/// Bytes under a lock.
private final class LockedData: @unchecked Sendable {  // `data` is read and written under `lock` only.
    private let lock = NSLock()
    private var data = Data()

    func set(_ value: Data) {
        lock.lock()
        defer { lock.unlock() }
        data = value
    }

    func get() -> Data {
        lock.lock()
        defer { lock.unlock() }
        return data
    }
}
