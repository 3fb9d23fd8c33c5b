import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// Streams through the decorators, the outbox, the stub and the in-memory transport.
@Suite("Streams with decorators, the outbox and the test doubles")
struct StreamCompositionTests {
    /// A server whose every request gets one event, then a stream held open until `gate` opens, the client goes away
    /// or the server stops.
    func heldStream(_ gate: Gate) throws -> LoopbackServer {
        try LoopbackServer { _ in
            .writer(headers: [ServerHeader(name: "Content-Type", value: "text/event-stream")]) { writer in
                writer.send("data: hello\n\n")
                while !gate.wait(timeout: 0.005) && writer.wait(.milliseconds(5)) {}
                return .finish
            }
        }
    }

    @Test("deduplicated() never shares a stream: two identical calls get two connections")
    func deduplicatedNeverShares() async throws {
        let gate = Gate()
        defer { gate.open() }
        let server = try heldStream(gate)
        let client = server.client().deduplicated()
        async let first = client.run(EventsRequest(path: "/feed", method: .get))
        async let second = client.run(EventsRequest(path: "/feed", method: .get))
        let (a, b) = try await (first, second)
        var one = a.value.makeAsyncIterator()
        var two = b.value.makeAsyncIterator()
        #expect(try await one.next() == ServerSentEvent(data: "hello"))
        #expect(try await two.next() == ServerSentEvent(data: "hello"))
        #expect(server.connectionCount == 2)
        #expect(!a.metrics.shared && !b.metrics.shared)
    }

    @Test("logged() writes the opening (status, headers, redacted) and the end (items, bytes, duration, error)")
    func logged() async throws {
        let server = try eventServer(pieces: [Data("data: a\n\n".utf8), Data("data: b\n\n".utf8)])
        let collector = LogCollector()
        let client = loggingClient(server.client(), level: .debug, to: collector)
        let request = EventsRequest(
            path: "/events", method: .get, additionalHeaders: ["Authorization": "Bearer secret-token"])
        let stream = try await client.run(request).value
        #expect(collector.all.count == 1)
        let opened = try #require(collector.all.first)
        #expect(opened.stream == .opened)
        #expect(opened.statusCode == 200)
        #expect(opened.description.contains("stream opened"))
        #expect(opened.responseBody == "<ServerSentEvents stream, read as it arrives>")
        #expect(opened.requestHeaders.contains { $0.name == "Authorization" && $0.value == "<redacted>" })
        #expect(opened.responseHeaders.contains { $0.name == "Content-Type" && $0.value == "text/event-stream" })

        var count = 0
        for try await _ in stream { count += 1 }
        #expect(count == 2)
        #expect(collector.all.count == 2)
        let ended = try #require(collector.all.last)
        #expect(ended.stream == .ended(items: 2, reconnections: 0, endedByReader: false))
        #expect(ended.responseSize == 18)
        #expect(ended.error == nil)
        #expect(ended.description.contains("stream ended after"))
        #expect(ended.description.contains("2 items"))
        #expect(!collector.everything.contains("secret-token"))
    }

    @Test("logged() writes the end of a stream the reader broke off, and of one that failed, with the error")
    func loggedEnds() async throws {
        let gate = Gate()
        defer { gate.open() }
        let server = try heldStream(gate)
        let collector = LogCollector()
        let client = server.client().logged(to: collector.sink)
        for try await _ in try await client.run(EventsRequest(method: .get)).value { break }
        #expect(await eventually { collector.all.count == 2 })
        #expect(collector.all.last?.stream == .ended(items: 1, reconnections: 0, endedByReader: true))
        #expect(collector.all.last?.description.contains("stopped by the reader") == true)

        let dropping = try LoopbackServer { _ in
            .writer(headers: [ServerHeader(name: "Content-Type", value: "text/event-stream")]) { writer in
                writer.send("data: a\n\n")
                return .close
            }
        }
        let failures = LogCollector()
        await #expect(throws: NetworkClientError.self) {
            for try await _ in try await dropping.client().logged(to: failures.sink).run(EventsRequest(method: .get))
                .value
            {}
        }
        #expect(failures.all.last?.errorCase?.hasPrefix("transportFailed") == true)
    }

    @Test("A stream dropped unread through logged() closes its connection and logs its end")
    func loggedUnreadStreamCloses() async throws {
        let gate = Gate()
        defer { gate.open() }
        let server = try heldStream(gate)
        let collector = LogCollector()
        do {
            let response = try await server.client().logged(to: collector.sink).run(EventsRequest(method: .get))
            #expect(response.statusCode == 200)
        }
        #expect(await server.waitUntil(timeout: .seconds(1)) { $0.clientClosedCount == 1 })
        #expect(await eventually { collector.all.count == 2 })
        #expect(collector.all.last?.stream == .ended(items: 0, reconnections: 0, endedByReader: true))
    }

    @Test("A session with a delegate of its own cannot stream: invalidRequest, nothing sent")
    func callerSessionRefusesStreams() async throws {
        final class OwnDelegate: NSObject, URLSessionDataDelegate, Sendable {}
        let server = try eventServer(pieces: [Data("data: a\n\n".utf8)])
        let session = URLSession(configuration: .ephemeral, delegate: OwnDelegate(), delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let client = NetworkClient(configuration: NetworkConfiguration(session: session, baseURL: server.baseURL))
        let error = await #expect(throws: NetworkClientError.self) {
            _ = try await client.run(EventsRequest(method: .get))
        }
        guard case .invalidRequest(let reason)? = error else {
            Issue.record("expected invalidRequest, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("session Courier drives"))
        #expect(server.requestCount == 0)
    }

    @Test("Cancelling the reading task ends the loop even while read pieces wait, and closes the connection")
    func cancelWhileBuffered() async throws {
        let server = try LoopbackServer { _ in
            .writer(headers: [ServerHeader(name: "Content-Type", value: "text/event-stream")]) { writer in
                let burst = Data(String(repeating: "data: x\n\n", count: 10_000).utf8)
                while writer.send(burst), writer.wait(.milliseconds(1)) {}
                return .close
            }
        }
        let client = server.client()
        let reading = Locked(0)
        let reader = Task {
            for try await _ in try await client.run(EventsRequest(method: .get)).value {
                reading.withLock { $0 += 1 }
            }
        }
        #expect(await eventually { reading.withLock { $0 } > 1_000 })
        reader.cancel()
        let ended = await firstWithin(promptly) { await reader.result }
        guard case .failure(let error)? = ended else {
            Issue.record("the loop did not end: \(String(describing: ended))")
            return
        }
        #expect(error is CancellationError)
        #expect(await server.waitUntil(timeout: promptly) { $0.clientClosedCount == 1 })
    }

    @Test("retrying() retries the opening (a 503), never a stream that opened and then dropped")
    func retryingOpensOnly() async throws {
        let server = try countingServer { index, _ in
            switch index {
            case 0: .respond(status: 503)
            default: events("data: a\n\n", then: .close)
            }
        }
        let client = server.client().retrying(RetryPolicy(baseDelay: 0.01))
        var received: [ServerSentEvent] = []
        await #expect(throws: NetworkClientError.self) {
            for try await event in try await client.run(EventsRequest(method: .get)).value { received.append(event) }
        }
        #expect(received == [ServerSentEvent(data: "a")])
        #expect(server.recordedRequests.count == 2)
    }

    @Test("sequential() releases its slot when the head arrives: the next call runs while the stream is read")
    func sequentialReleasesAtHead() async throws {
        let gate = Gate()
        defer { gate.open() }
        let server = try LoopbackServer { request in
            if request.path == "/echo" { return .echo }
            return .writer(headers: [ServerHeader(name: "Content-Type", value: "text/event-stream")]) { writer in
                writer.send("data: hello\n\n")
                while !gate.wait(timeout: 0.005) && writer.wait(.milliseconds(5)) {}
                return .finish
            }
        }
        let client = server.client().sequential()
        let stream = try await client.run(EventsRequest(path: "/feed", method: .get)).value
        let echoed = try await client.run(Echo(path: "/echo", method: .get))
        #expect(echoed.statusCode == 200)
        var iterator = stream.makeAsyncIterator()
        #expect(try await iterator.next() == ServerSentEvent(data: "hello"))
        #expect(client.pendingCount == 0)
    }

    @Test("The outbox refuses a stream response type, with a clear error and nothing stored")
    func outboxRefuses() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(directory: directory, client: StubNetworkClient(), rules: Outbox.Rules())
        let error = await #expect(throws: OutboxError.self) {
            try await outbox.enqueue(EventsRequest(path: "/events", method: .get), kind: "feed")
        }
        guard case .invalidRequest(let reason)? = error else {
            Issue.record("expected invalidRequest, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("ServerSentEvents"))
        #expect(outbox.pending().isEmpty)
    }

    @Test(
        "StubNetworkClient answers a stream with canned events, lines and chunks, or with a canned body parsed as the server's"
    )
    func stub() async throws {
        let stub = StubNetworkClient()
        stub.stub(.get, "/events", returning: ServerSentEvents(replaying: [ServerSentEvent(event: "tick", data: "1")]))
        stub.stub(.get, "/lines", returning: JSONLines(replaying: [StreamingTests.Row(id: 1)]))
        stub.stub(.get, "/bytes", returning: ByteStream(replaying: [Data("ab".utf8), Data(), Data("c".utf8)]))
        stub.stub(
            .post, "/chat", body: "data: Hel\n\ndata: lo\n\n: done\n", headers: ["Content-Type": "text/event-stream"])

        #expect(
            try await events(stub, EventsRequest(path: "/events", method: .get)) == [
                ServerSentEvent(event: "tick", data: "1")
            ])
        var rows: [StreamingTests.Row] = []
        for try await row in try await stub.run(
            NetworkRequest<VoidRequest, JSONLines<StreamingTests.Row>>(path: "/lines", method: .get)
        ).value {
            rows.append(row)
        }
        #expect(rows == [StreamingTests.Row(id: 1)])
        var chunks: [Data] = []
        for try await chunk in try await stub.run(BytesRequest(path: "/bytes", method: .get)).value {
            chunks.append(chunk)
        }
        #expect(chunks == [Data("ab".utf8), Data("c".utf8)])
        let chat = NetworkRequest<Data, ServerSentEvents>(path: "/chat", method: .post, body: Data("{}".utf8))
        var tokens: [String] = []
        for try await event in try await stub.run(chat).value { tokens.append(event.data) }
        #expect(tokens == ["Hel", "lo"])
    }

    @Test("InMemoryTransport streams a body in pieces, and holds back while the reader has a full buffer")
    func inMemoryTransport() async throws {
        let body = Data((0..<4_000).map { "{\"id\":\($0)}\n" }.joined().utf8)
        let transport = InMemoryTransport { _ in
            InMemoryTransport.Response(
                headers: ["Content-Type": "application/x-ndjson"], body: body, pieces: 400)
        }
        let client = NetworkClient(
            configuration: NetworkConfiguration(transport: transport, baseURL: URL(string: "https://api.test")!))
        var ids: [Int] = []
        for try await row in try await client.run(
            NetworkRequest<VoidRequest, JSONLines<StreamingTests.Row>>(path: "/rows", method: .get)
        ).value {
            ids.append(row.id)
        }
        #expect(ids == Array(0..<4_000))
    }

    @Test("A stream type works as the page type of pages(of:): each page opens, is read, and its Link leads on")
    func streamPages() async throws {
        let transport = InMemoryTransport { request in
            let page = Int(request.query("page") ?? "1") ?? 1
            var headers = ["Content-Type": "text/event-stream"]
            if page < 3 { headers["Link"] = "</events?page=\(page + 1)>; rel=\"next\"" }
            return InMemoryTransport.Response(status: 200, headers: headers, body: Data("data: page \(page)\n\n".utf8))
        }
        let client = NetworkClient(
            configuration: NetworkConfiguration(transport: transport, baseURL: URL(string: "https://feed.test")!))
        var events: [String] = []
        for try await page in client.pages(of: EventsRequest(path: "/events", method: .get)) {
            for try await event in page.value { events.append(event.data) }
        }
        #expect(events == ["page 1", "page 2", "page 3"])
        #expect(
            transport.requests.map(\.description) == [
                "GET https://feed.test/events", "GET https://feed.test/events?page=2",
                "GET https://feed.test/events?page=3",
            ])
    }
}
