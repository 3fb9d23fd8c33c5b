import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

typealias EventsRequest = NetworkRequest<VoidRequest, ServerSentEvents>
typealias BytesRequest = NetworkRequest<VoidRequest, ByteStream>

/// A server that answers every request with `body` as a `text/event-stream`, each piece its own chunk, sent 2 ms apart
/// so that the client receives them apart.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func eventServer(pieces: [Data], contentType: String = "text/event-stream") throws -> LoopbackServer {
    try LoopbackServer { _ in
        .writer(headers: [ServerHeader(name: "Content-Type", value: contentType)]) { writer in
            for piece in pieces {
                guard writer.send(piece), writer.wait(.milliseconds(2)) else { return .close }
            }
            return .finish
        }
    }
}

/// Every event of `request`'s stream, read to its end.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func events(
    _ client: some NetworkClientProtocol, _ request: EventsRequest = EventsRequest(path: "/events", method: .get)
) async throws -> [ServerSentEvent] {
    var events: [ServerSentEvent] = []
    for try await event in try await client.run(request).value { events.append(event) }
    return events
}

/// A case of the event stream interpretation, as a server sends it: its bytes cut where the case says.
struct EventStreamCase: Sendable, CustomTestStringConvertible {
    let name: String
    let pieces: [Data]
    let expected: [ServerSentEvent]

    var testDescription: String { name }

    init(_ name: String, _ pieces: [String], _ expected: [ServerSentEvent]) {
        self.init(name, bytes: pieces.map { Data($0.utf8) }, expected)
    }

    init(_ name: String, bytes: [Data], _ expected: [ServerSentEvent]) {
        self.name = name
        self.pieces = bytes
        self.expected = expected
    }

    /// `text` one byte per piece.
    static func bytewise(_ name: String, _ text: String, _ expected: [ServerSentEvent]) -> EventStreamCase {
        EventStreamCase(name, bytes: Array(text.utf8).map { Data([$0]) }, expected)
    }

    static let all: [EventStreamCase] = [
        EventStreamCase(
            "Comments are ignored", [": hello\n", "data: a\n", ": between\n\n"], [ServerSentEvent(data: "a")]),
        EventStreamCase(
            "An event field names the event; without one it is a message",
            ["event: add\ndata: 1\n\n", "data: 2\n\n"],
            [ServerSentEvent(event: "add", data: "1"), ServerSentEvent(data: "2")]),
        EventStreamCase(
            "Data lines are joined with LF, one trailing LF removed", ["data: a\ndata:\ndata:  b\n\n"],
            [ServerSentEvent(data: "a\n\n b")]),
        EventStreamCase(
            "An id persists as the last event ID; one with NUL is ignored; an empty one clears it",
            ["id: 7\ndata: a\n\n", "data: b\n\n", "id: x\u{0}y\ndata: c\n\n", "id\ndata: d\n\n"],
            [
                ServerSentEvent(data: "a", id: "7"), ServerSentEvent(data: "b", id: "7"),
                ServerSentEvent(data: "c", id: "7"), ServerSentEvent(data: "d", id: nil),
            ]),
        EventStreamCase(
            "An id with a control character other than tab is ignored, as one with NUL: Last-Event-ID could not carry it",
            ["id: 7\ndata: a\n\n", "id: 8\u{1}\ndata: b\n\n", "id: 9\u{7F}\ndata: c\n\n", "id: 1\t0\ndata: d\n\n"],
            [
                ServerSentEvent(data: "a", id: "7"), ServerSentEvent(data: "b", id: "7"),
                ServerSentEvent(data: "c", id: "7"), ServerSentEvent(data: "d", id: "1\t0"),
            ]),
        EventStreamCase(
            "A block with no data dispatches nothing", ["event: ping\n\n", "id: 3\n\n", "data: x\n\n"],
            [ServerSentEvent(data: "x", id: "3")]),
        EventStreamCase(
            "Retry and unknown fields dispatch nothing", ["retry: 10\nfoo: bar\n\n", "retry: 1x\ndata: y\n\n"],
            [ServerSentEvent(data: "y")]),
        EventStreamCase(
            "A field without a colon has an empty value", ["data\n\n", "data:z\n\n"],
            [ServerSentEvent(data: ""), ServerSentEvent(data: "z")]),
        EventStreamCase(
            "A last block without its blank line is discarded", ["data: kept\n\n", "data: lost\n"],
            [ServerSentEvent(data: "kept")]),
        EventStreamCase(
            "CRLF, LF and CR end lines", ["data: a\r\n\r\n", "data: b\n\n", "data: c\r\r", "data: d\r\n\n"],
            [
                ServerSentEvent(data: "a"), ServerSentEvent(data: "b"), ServerSentEvent(data: "c"),
                ServerSentEvent(data: "d"),
            ]),
        EventStreamCase("A leading BOM is removed", ["\u{FEFF}data: bom\n\n"], [ServerSentEvent(data: "bom")]),
        EventStreamCase(
            "A chunk boundary inside CRLF is one line end", ["data: a\r", "\n", "\r", "\ndata: b\r\n\r\n"],
            [ServerSentEvent(data: "a"), ServerSentEvent(data: "b")]),
        EventStreamCase(
            "A chunk boundary inside a multi-byte UTF-8 character",
            bytes: [
                Data("data: caf".utf8), Data([0xC3]), Data([0xA9, 0x20, 0xF0, 0x9F]), Data([0x98, 0x80, 0x0A, 0x0A]),
            ],
            [ServerSentEvent(data: "café 😀")]),
        EventStreamCase(
            "A chunk boundary inside the BOM",
            bytes: [Data([0xEF]), Data([0xBB]), Data([0xBF]), Data("data: x\n\n".utf8)], [ServerSentEvent(data: "x")]),
        .bytewise(
            "Three events, one byte per chunk", "event: a\ndata: 1\n\nid: 2\ndata: 2\r\n\r\n: c\ndata: 3\rdata: 4\r\r",
            [
                ServerSentEvent(event: "a", data: "1"), ServerSentEvent(data: "2", id: "2"),
                ServerSentEvent(data: "3\n4", id: "2"),
            ]),
    ]
}

@Suite("Streaming responses through a real URLSession")
struct StreamingTests {
    // MARK: The event stream interpretation, end to end

    @Test("The event stream interpretation, as the server's chunks arrive", arguments: EventStreamCase.all)
    func interpretation(_ example: EventStreamCase) async throws {
        let server = try eventServer(pieces: example.pieces)
        #expect(try await events(server.client()) == example.expected)
    }

    @Test("The request asks for text/event-stream; a Content-Type other than it fails run with invalidResponse")
    func contentType() async throws {
        let right = try eventServer(pieces: [Data("data: a\n\n".utf8)], contentType: "Text/Event-Stream; charset=utf-8")
        #expect(try await events(right.client()) == [ServerSentEvent(data: "a")])
        #expect(right.recordedRequests.first?.header("Accept") == "text/event-stream")

        let wrong = try eventServer(pieces: [Data("data: a\n\n".utf8)], contentType: "application/json")
        let error = try await #require(throws: NetworkClientError.self) {
            try await wrong.client().run(EventsRequest(path: "/events", method: .get))
        }
        guard case .invalidResponse(let response) = error else {
            Issue.record("expected invalidResponse, got \(error)")
            return
        }
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
    }

    @Test("A 204 opens an empty stream")
    func noContent() async throws {
        let server = try LoopbackServer { _ in .respond(status: 204) }
        #expect(try await events(server.client()).isEmpty)
    }

    @Test("A status outside the acceptable ones throws from run, with its body, before any event")
    func unacceptableStatus() async throws {
        let server = try LoopbackServer { _ in
            .respond(
                status: 503, headers: [ServerHeader(name: "Content-Type", value: "application/json")],
                body: Data(#"{"code":"busy"}"#.utf8))
        }
        let error = try await #require(throws: NetworkClientError.self) {
            try await server.client().run(EventsRequest(path: "/events", method: .get))
        }
        guard case .unacceptableStatusCode(503, _, let data) = error else {
            Issue.record("expected a 503, got \(error)")
            return
        }
        #expect(data == Data(#"{"code":"busy"}"#.utf8))
    }

    @Test("run returns at the head: the first event is read while the server still holds the rest")
    func returnsAtTheHead() async throws {
        let gate = Gate()
        let server = try LoopbackServer { _ in
            .writer(headers: [ServerHeader(name: "Content-Type", value: "text/event-stream")]) { writer in
                writer.send("data: first\n\n")
                while !gate.wait(timeout: 0.005) && writer.wait(.milliseconds(5)) {}
                writer.send("data: second\n\n")
                return .finish
            }
        }
        let response = try await server.client().run(EventsRequest(path: "/events", method: .get))
        #expect(response.statusCode == 200)
        #expect(response.metrics.responseStart != nil)
        var iterator = response.value.makeAsyncIterator()
        #expect(try await iterator.next() == ServerSentEvent(data: "first"))
        gate.open()
        #expect(try await iterator.next() == ServerSentEvent(data: "second"))
        #expect(try await iterator.next() == nil)
    }

    @Test("A stream is read once: a second iterator ends at once with invalidRequest")
    func readOnce() async throws {
        let server = try eventServer(pieces: [Data("data: a\n\n".utf8)])
        let stream = try await server.client().run(EventsRequest(path: "/events", method: .get)).value
        var first = stream.makeAsyncIterator()
        var second = stream.makeAsyncIterator()
        await #expect(throws: NetworkClientError.self) { try await second.next() }
        #expect(try await first.next() == ServerSentEvent(data: "a"))
    }

    // MARK: JSON lines and bytes

    struct Row: Codable, Sendable, Equatable {
        let id: Int
    }

    @Test("JSON lines: one value per non-blank line, the last one without a newline included")
    func jsonLines() async throws {
        let server = try eventServer(
            pieces: [Data("{\"id\":1}\n\n{\"i".utf8), Data("d\":2}\r\n".utf8), Data("{\"id\":3}".utf8)],
            contentType: "application/x-ndjson")
        var rows: [Row] = []
        let response = try await server.client().run(NetworkRequest<VoidRequest, JSONLines<Row>>(method: .get))
        for try await row in response.value { rows.append(row) }
        #expect(rows == [Row(id: 1), Row(id: 2), Row(id: 3)])
        #expect(server.recordedRequests.first?.header("Accept")?.hasPrefix("application/x-ndjson") == true)
    }

    @Test(
        "JSON lines: a line that does not decode ends the sequence with decodingFailed carrying it, after the good ones"
    )
    func jsonLinesDecodingFailure() async throws {
        let server = try eventServer(
            pieces: [Data("{\"id\":1}\n{\"id\":\"two\"}\n{\"id\":3}\n".utf8)], contentType: "application/x-ndjson")
        var rows: [Row] = []
        var failure: (any Error)?
        do {
            for try await row in try await server.client().run(
                NetworkRequest<VoidRequest, JSONLines<Row>>(method: .get)
            )
            .value {
                rows.append(row)
            }
        } catch {
            failure = error
        }
        #expect(rows == [Row(id: 1)])
        guard case NetworkClientError.decodingFailed(_, let line)? = failure else {
            Issue.record("expected decodingFailed, got \(String(describing: failure))")
            return
        }
        #expect(line == Data("{\"id\":\"two\"}".utf8))
    }

    @Test("Bytes: the chunks in arrival order, whatever maximumResponseSize says")
    func bytes() async throws {
        let server = try LoopbackServer { _ in .stream(length: 3 << 20, chunked: true) }
        var received = Data()
        let request = BytesRequest(method: .get, maximumResponseSize: 1_024)
        for try await chunk in try await server.client().run(request).value { received.append(chunk) }
        #expect(received.count == 3 << 20)
        #expect(received.enumerated().allSatisfy { $0.element == UInt8($0.offset % 251) })
    }

    // MARK: Limits

    @Test("A line longer than the item limit ends the sequence with responseTooLarge, the events before it kept")
    func itemLimit() async throws {
        let server = try LoopbackServer { _ in
            .writer(headers: [ServerHeader(name: "Content-Type", value: "text/event-stream")]) { writer in
                writer.send("data: small\n\n")
                // A server that never ends its line: 4 MiB (past the item limit, within the buffer and backlog, so
                // that only the reader's stop can end the transfer), then it waits, watching the connection, without
                // ending the body.
                let noNewline = Data(repeating: UInt8(ascii: "x"), count: 64 * 1_024)
                for _ in 0..<64 where writer.send(noNewline) {}
                _ = writer.wait(.seconds(60))
                return .close
            }
        }
        // An idle timeout past the bound below, so that only the transfer's stop can close the connection in time.
        let request = EventsRequest(method: .get, timeoutInterval: 120, maximumStreamItemSize: 100_000)
        var received: [ServerSentEvent] = []
        let error = await #expect(throws: NetworkClientError.self) {
            for try await event in try await server.client().run(request).value { received.append(event) }
        }
        #expect(received == [ServerSentEvent(data: "small")])
        guard case .responseTooLarge(100_000)? = error else {
            Issue.record("expected responseTooLarge(100000), got \(String(describing: error))")
            return
        }
        // The transfer stopped: the client closed the connection, which the server never ends. How soon depends on
        // the load: `URLSessionTask.cancel()` waits for corelibs' one work queue, shared by every session in the
        // process. Under the whole parallel suite a cancel once landed only after 6 s (libcurl read a 1 GiB body
        // meanwhile; the cause is inferred, not traced). The bound is for that, not for a quiet process, where the
        // connection closes within milliseconds.
        #expect(await server.waitUntil(timeout: .seconds(30)) { $0.clientClosedCount == 1 })
    }

    // MARK: Ending a stream

    /// A server that sends one event, then waits (watching the connection) for up to 30 s: a stream that only ends
    /// when the client closes it.
    func longStream() throws -> LoopbackServer {
        try LoopbackServer { _ in
            .writer(headers: [ServerHeader(name: "Content-Type", value: "text/event-stream")]) { writer in
                writer.send("data: one\n\n")
                writer.wait(.seconds(30))
                return .finish
            }
        }
    }

    @Test("Breaking out of the loop closes the connection within 1 s")
    func breakCloses() async throws {
        let server = try longStream()
        for try await event in try await server.client().run(EventsRequest(method: .get)).value {
            #expect(event.data == "one")
            break
        }
        #expect(await server.waitUntil(timeout: .seconds(1)) { $0.clientClosedCount == 1 })
    }

    @Test("Cancelling the task that iterates closes the connection within 1 s, and the loop throws CancellationError")
    func cancellationCloses() async throws {
        let server = try longStream()
        let client = server.client()
        let firstEvent = Locked(false)
        let reader = Task {
            for try await _ in try await client.run(EventsRequest(method: .get)).value {
                firstEvent.withLock { $0 = true }
            }
        }
        #expect(await eventually { firstEvent.withLock { $0 } })
        reader.cancel()
        await #expect(throws: CancellationError.self) { try await reader.value }
        #expect(await server.waitUntil(timeout: .seconds(1)) { $0.clientClosedCount == 1 })
    }

    @Test("Dropping the sequence unread closes the connection within 1 s")
    func droppingCloses() async throws {
        let server = try longStream()
        do {
            let response = try await server.client().run(EventsRequest(method: .get))
            #expect(response.statusCode == 200)
        }
        #expect(await server.waitUntil(timeout: .seconds(1)) { $0.clientClosedCount == 1 })
    }

    @Test("A connection that drops mid-stream ends the sequence with transportFailed, the events before it kept")
    func droppedConnection() async throws {
        let server = try LoopbackServer { _ in
            .writer(headers: [ServerHeader(name: "Content-Type", value: "text/event-stream")]) { writer in
                writer.send("data: a\n\ndata: cut")
                return .close
            }
        }
        var received: [ServerSentEvent] = []
        let error = await #expect(throws: NetworkClientError.self) {
            for try await event in try await server.client().run(EventsRequest(method: .get)).value {
                received.append(event)
            }
        }
        #expect(received == [ServerSentEvent(data: "a")])
        guard case .transportFailed? = error else {
            Issue.record("expected transportFailed, got \(String(describing: error))")
            return
        }
    }

    // MARK: Timeouts

    @Test("The idle timeout counts silence between bytes; the session's resource timeout does not end a stream")
    func timeouts() async throws {
        let server = try LoopbackServer { request in
            .writer(headers: [ServerHeader(name: "Content-Type", value: "text/event-stream")]) { writer in
                // Six events 400 ms apart: 2.4 s in all, never silent for a whole second.
                for index in 0..<6 {
                    guard writer.send("data: \(index)\n\n"), writer.wait(.milliseconds(400)) else { return .close }
                }
                if request.path == "/silent" { writer.wait(.seconds(5)) }
                return .finish
            }
        }
        let session = URLSessionConfiguration.ephemeral
        session.timeoutIntervalForResource = 1
        let client = NetworkClient(
            configuration: NetworkConfiguration(sessionConfiguration: session, baseURL: server.baseURL))
        let steady = try await events(client, EventsRequest(path: "/steady", method: .get, timeoutInterval: 1))
        #expect(steady.count == 6)

        var received = 0
        let error = await #expect(throws: NetworkClientError.self) {
            for try await _ in try await client.run(EventsRequest(path: "/silent", method: .get, timeoutInterval: 1))
                .value
            {
                received += 1
            }
        }
        #expect(received == 6)
        guard case .transportFailed(let failure)? = error else {
            Issue.record("expected a timeout, got \(String(describing: error))")
            return
        }
        #expect(failure.code == .timedOut)
    }

    @Test("A request's totalTimeout ends a stream that is never silent")
    func totalTimeout() async throws {
        let server = try LoopbackServer { _ in
            .writer(headers: [ServerHeader(name: "Content-Type", value: "text/event-stream")]) { writer in
                while writer.send(": keep-alive\n"), writer.wait(.milliseconds(50)) {}
                return .close
            }
        }
        let request = EventsRequest(method: .get, totalTimeout: 0.5)
        let error = await #expect(throws: NetworkClientError.self) {
            for try await _ in try await server.client().run(request).value {}
        }
        guard case .transportFailed(let failure)? = error else {
            Issue.record("expected a timeout, got \(String(describing: error))")
            return
        }
        #expect(failure.code == .timedOut)
        #expect(await server.waitUntil { $0.clientClosedCount == 1 })
    }
}
