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

@Suite("Stream reconnection")
struct StreamReconnectionTests {
    static let policy = StreamReconnection(maxAttempts: 3, initialDelay: 0.02)

    @Test(
        "A dropped connection and an ended body are opened again with Last-Event-ID after the server's retry: no gap, no repeat; a 204 stops"
    )
    func reconnects() async throws {
        let server = try countingServer { index, _ in
            switch index {
            case 0: events("retry: 300\nid: 1\ndata: a\n\nid: 2\ndata: b\n\ndata: cut off", then: .close)
            case 1: events("id: 3\ndata: c\n\n")
            default: .respond(status: 204)
            }
        }
        let request = EventsRequest(method: .get, reconnection: Self.policy)
        let clock = ContinuousClock()
        let start = clock.now
        let received = try await events(server.client(), request)
        let took = clock.now - start
        #expect(
            received == [
                ServerSentEvent(data: "a", id: "1"), ServerSentEvent(data: "b", id: "2"),
                ServerSentEvent(data: "c", id: "3"),
            ])
        let requests = server.recordedRequests
        #expect(requests.count == 3)
        #expect(requests.map { $0.header("Last-Event-ID") } == [nil, "2", "3"])
        // Two waits of the server's retry (300 ms), not the initial delay (20 ms).
        #expect(took >= .milliseconds(600))
    }

    @Test("Connections that fail to open or dispatch nothing end the sequence after maxAttempts in a row")
    func maxAttempts() async throws {
        let server = try countingServer { index, _ in
            index == 0 ? events("data: only\n\n", then: .close) : events(": nothing\n", then: .close)
        }
        var received: [ServerSentEvent] = []
        let error = await #expect(throws: NetworkClientError.self) {
            for try await event in try await server.client().run(
                EventsRequest(method: .get, reconnection: Self.policy)
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
            for try await _ in try await server.client().run(EventsRequest(method: .get, reconnection: Self.policy))
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
                EventsRequest(method: .get, reconnection: Self.policy)
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
            method: .post, body: Data("{}".utf8), reconnection: Self.policy)
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
            for try await _ in try await client.run(EventsRequest(method: .get, reconnection: Self.policy)).value {
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
