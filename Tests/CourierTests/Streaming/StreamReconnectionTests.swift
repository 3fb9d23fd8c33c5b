import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// Answers the `n`th request (counting from 0) with `answer(n, request)`.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func countingServer(_ answer: @escaping @Sendable (Int, ServerRequest) -> ServerResponse) throws -> LoopbackServer {
    let count = Locked(0)
    return try LoopbackServer { request in
        let index = count.withLock { value -> Int in
            defer { value += 1 }
            return value
        }
        return answer(index, request)
    }
}

/// A `text/event-stream` response that sends `text`, then ends as `ending` says.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func events(_ text: String, then ending: ResponseWriter.Ending = .finish) -> ServerResponse {
    .writer(headers: [ServerHeader(name: "Content-Type", value: "text/event-stream")]) { writer in
        writer.send(text)
        return ending
    }
}

/// `policy` waiting on `time`: nothing really sleeps, and `time.sleeps` lists the waits.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func onVirtualTime(_ policy: StreamReconnection, _ time: VirtualTime) -> StreamReconnection {
    var policy = policy
    policy.environment = time.environment
    return policy
}

@Suite("Stream reconnection")
struct StreamReconnectionTests {
    /// Three attempts, 1 s when the server sends no `retry`, on a virtual clock of its own.
    static func policy(_ time: VirtualTime = VirtualTime()) -> StreamReconnection {
        onVirtualTime(StreamReconnection(maxAttempts: 3, initialDelay: 1), time)
    }

    @Test(
        "A dropped connection and an ended body are opened again with Last-Event-ID after the server's retry: no gap, no repeat; a 204 stops"
    )
    func reconnects() async throws {
        let server = try countingServer { index, _ in
            switch index {
            case 0: events("retry: 3000\nid: 1\ndata: a\n\nid: 2\ndata: b\n\ndata: cut off", then: .close)
            case 1: events("id: 3\ndata: c\n\n")
            default: .respond(status: 204)
            }
        }
        let time = VirtualTime()
        let request = EventsRequest(method: .get, reconnection: Self.policy(time))
        let received = try await events(server.client(), request)
        #expect(
            received == [
                ServerSentEvent(data: "a", id: "1"), ServerSentEvent(data: "b", id: "2"),
                ServerSentEvent(data: "c", id: "3"),
            ])
        let requests = server.recordedRequests
        #expect(requests.count == 3)
        #expect(requests.map { $0.header("Last-Event-ID") } == [nil, "2", "3"])
        // Two waits of the server's retry (3 s), not the initial delay (1 s).
        #expect(time.sleeps == [3, 3])
    }

    @Test("Connections that fail to open or dispatch nothing end the sequence after maxAttempts in a row")
    func maxAttempts() async throws {
        let server = try countingServer { index, _ in
            index == 0 ? events("data: only\n\n", then: .close) : events(": nothing\n", then: .close)
        }
        var received: [ServerSentEvent] = []
        let error = await #expect(throws: NetworkClientError.self) {
            for try await event in try await server.client().run(
                EventsRequest(method: .get, reconnection: Self.policy())
            ).value {
                received.append(event)
            }
        }
        #expect(received == [ServerSentEvent(data: "only")])
        guard case .transportFailed? = error else {
            Issue.record("expected the last connection's failure, got \(String(describing: error))")
            return
        }
        // The first connection, then three that dispatched nothing.
        #expect(server.recordedRequests.count == 4)
    }

    @Test("A status outside the acceptable ones, or a wrong Content-Type, ends the sequence at once with its error")
    func statusEnds() async throws {
        let server = try countingServer { index, _ in
            index == 0 ? events("data: a\n\n") : .respond(status: 401)
        }
        let error = await #expect(throws: NetworkClientError.self) {
            for try await _ in try await server.client().run(EventsRequest(method: .get, reconnection: Self.policy()))
                .value
            {}
        }
        guard case .unacceptableStatusCode(401, _, _)? = error else {
            Issue.record("expected a 401, got \(String(describing: error))")
            return
        }
        #expect(server.recordedRequests.count == 2)

        let wrongType = try countingServer { index, _ in
            index == 0 ? events("data: a\n\n") : .json(["not": "events"])
        }
        let typeError = await #expect(throws: NetworkClientError.self) {
            for try await _ in try await wrongType.client().run(
                EventsRequest(method: .get, reconnection: Self.policy())
            ).value {}
        }
        guard case .invalidResponse? = typeError else {
            Issue.record("expected invalidResponse, got \(String(describing: typeError))")
            return
        }
    }

    @Test("A POST stream (a chat completion) is never sent twice: it ends with its connection")
    func postNeverReconnects() async throws {
        let server = try countingServer { _, _ in events("data: token\n\n", then: .close) }
        let request = NetworkRequest<Data, ServerSentEvents>(
            method: .post, body: Data("{}".utf8), reconnection: Self.policy())
        var received: [ServerSentEvent] = []
        await #expect(throws: NetworkClientError.self) {
            for try await event in try await server.client().run(request).value { received.append(event) }
        }
        #expect(received == [ServerSentEvent(data: "token")])
        #expect(server.recordedRequests.count == 1)
    }

    @Test("Cancelling the reader during the wait before a reconnection ends it at once; nothing more is sent")
    func cancelDuringWait() async throws {
        let server = try countingServer { _, _ in events("retry: 10000\ndata: a\n\n", then: .close) }
        let client = server.client()
        let firstEvent = Locked(false)
        let reader = Task {
            // The live clock: the wait is really slept, and cancelled.
            let live = StreamReconnection(maxAttempts: 3, initialDelay: 0.02)
            for try await _ in try await client.run(EventsRequest(method: .get, reconnection: live)).value {
                firstEvent.withLock { $0 = true }
            }
        }
        #expect(await eventually { firstEvent.withLock { $0 } })
        #expect(await server.waitUntil { $0.inProgressRequests == 0 })
        reader.cancel()
        let ended = await firstWithin(promptly) { await reader.result }
        guard case .failure(let error)? = ended else {
            Issue.record("the reader did not end promptly: \(String(describing: ended))")
            return
        }
        #expect(error is CancellationError)
        #expect(server.recordedRequests.count == 1)
    }
}

@Suite("Stream reconnection limits")
struct StreamReconnectionLimitTests {
    @Test("A 204 on the first connection ends the sequence: nothing is sent again")
    func noContentFirst() async throws {
        let server = try countingServer { _, _ in .respond(status: 204) }
        let received = try await events(
            server.client(),
            EventsRequest(method: .get, reconnection: StreamReconnection(maxAttempts: 5, initialDelay: 0.01)))
        #expect(received.isEmpty)
        #expect(server.recordedRequests.count == 1)
    }

    @Test("The request's totalTimeout bounds the wait before a reconnection: the sequence ends with it")
    func totalTimeoutBoundsTheWait() async throws {
        let server = try countingServer { _, _ in events("retry: 60000\ndata: a\n\n") }
        // 20 s: room for a loaded machine to open the stream (8 s once was not); far below the server's 60 s retry.
        let request = EventsRequest(
            method: .get, totalTimeout: 20, reconnection: StreamReconnection(maxAttempts: 5, initialDelay: 0.01))
        let clock = ContinuousClock()
        let start = clock.now
        var received: [ServerSentEvent] = []
        let error = await #expect(throws: NetworkClientError.self) {
            for try await event in try await server.client().run(request).value { received.append(event) }
        }
        #expect(received == [ServerSentEvent(data: "a")])
        guard case .transportFailed(let failure)? = error else {
            Issue.record("expected a timeout, got \(String(describing: error))")
            return
        }
        #expect(failure.code == .timedOut)
        // Not the server's 60 s retry.
        #expect(clock.now - start < .seconds(50))
        #expect(server.recordedRequests.count == 1)
    }
}

@Suite("Stream reconnection storms")
struct StreamReconnectionStormTests {
    /// A reconnecting `GET` of events with `maxAttempts` and no initial delay, waiting on `time`.
    private func reconnecting(maxAttempts: Int, on time: VirtualTime) -> EventsRequest {
        EventsRequest(
            method: .get,
            reconnection: onVirtualTime(StreamReconnection(maxAttempts: maxAttempts, initialDelay: 0), time))
    }

    @Test(
        "retry: 0 and one event per connection: the waits never go below the floor, double, and the stream ends with a typed error"
    )
    func oneEventThenClose() async throws {
        let server = try countingServer { index, _ in events("retry: 0\nid: \(index)\ndata: \(index)\n\n") }
        let time = VirtualTime()
        let request = reconnecting(maxAttempts: 5, on: time)
        var received: [String] = []
        let log = LogCollector()
        let error = await #expect(throws: StreamError.self) {
            for try await event in try await server.client().logged(to: log.sink).run(request).value {
                received.append(event.data)
            }
        }
        #expect(error == .gaveUpReconnecting(attempts: 5))
        #expect(received == ["0", "1", "2", "3", "4"])
        #expect(server.requestCount == 5)
        // The log's end entry names it, with the reconnections made.
        #expect(await eventually { log.all.last?.errorCase == "gaveUpReconnecting(5)" })
        guard case .ended(_, let reconnections, _)? = log.all.last?.stream else {
            Issue.record("no end entry")
            return
        }
        #expect(reconnections == 4)
        // The floor (0.5 s), doubled for each connection in a row that ended at once after asking for less.
        #expect(time.sleeps == [1, 2, 4, 8])
        #expect(time.sleeps.allSatisfy { $0 >= StreamReconnection.minimumDelay })
    }

    @Test("The same server dropping the connection after its event ends the stream with the drop")
    func oneEventThenDrop() async throws {
        let server = try countingServer { index, _ in events("retry: 0\ndata: \(index)\n\n", then: .close) }
        let time = VirtualTime()
        let request = reconnecting(maxAttempts: 3, on: time)
        let error = await #expect(throws: NetworkClientError.self) {
            for try await _ in try await server.client().run(request).value {}
        }
        guard case .transportFailed? = error else {
            Issue.record("expected the last connection's drop, got \(String(describing: error))")
            return
        }
        #expect(server.requestCount == 3)
        #expect(time.sleeps == [1, 2])
    }

    @Test("A poll written as an event stream (one event, close, retry: 2000) is followed for as long as it goes on")
    func poll() async throws {
        let server = try countingServer { index, _ in events("retry: 2000\nid: \(index)\ndata: \(index)\n\n") }
        let time = VirtualTime()
        let request = reconnecting(maxAttempts: 2, on: time)
        var received: [String] = []
        for try await event in try await server.client().run(request).value {
            received.append(event.data)
            if received.count == 12 { break }
        }
        #expect(received == (0..<12).map(String.init))
        #expect(server.recordedRequests.map { $0.header("Last-Event-ID") } == [nil] + (0..<11).map(String.init))
        // The server's wait each time: no doubling, no end.
        #expect(time.sleeps == Array(repeating: 2, count: 11))
    }

    @Test("A connection that stays open goes on reconnecting after retry: 0, at the floor, without end")
    func longConnections() async throws {
        let server = try countingServer { index, _ in events("retry: 0\ndata: \(index)\n\n") }
        let time = VirtualTime()
        let request = reconnecting(maxAttempts: 2, on: time)
        var received = 0
        for try await _ in try await server.client().run(request).value {
            // Each connection is open for a second before it ends.
            time.advance(by: 1)
            received += 1
            if received == 10 { break }
        }
        #expect(server.requestCount == 10)
        #expect(time.sleeps == Array(repeating: StreamReconnection.minimumDelay, count: 9))
    }

    @Test("An id with a control character is not sent: the reconnection carries the last id that can be")
    func controlCharacterID() async throws {
        let server = try countingServer { index, _ in
            switch index {
            case 0: events("id: 7\ndata: a\n\nid: 8\u{1}\ndata: b\n\n")
            case 1: events("data: c\n\n")
            default: .respond(status: 204)
            }
        }
        let request = EventsRequest(method: .get, reconnection: StreamReconnectionTests.policy())
        let received = try await events(server.client(), request)
        #expect(received.map(\.data) == ["a", "b", "c"])
        #expect(server.recordedRequests.map { $0.header("Last-Event-ID") } == [nil, "7", "7"])
    }
}
