import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

@Suite("Outbox tickets")
struct OutboxTicketTests {
    private func post(_ title: String) -> CreatePost {
        CreatePost(path: "/posts", method: .post, body: NewPost(title: title))
    }

    @Test("result(of:as:) returns the entry's response, waiting for it or after it arrived")
    func resultOfTicket() async throws {
        let server = try echoServer()
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules(), paused: true)
        let handled = Locked<[OutboxTicket]>([])
        outbox.onResult(kind: "create", as: EchoedRequest.self) { entry, _ in
            handled.withLock { $0.append(entry.ticket) }
        }
        let ticket = try await outbox.enqueue(post("waited"), kind: "create")
        let waiting = Task { try await outbox.result(of: ticket, as: EchoedRequest.self) }
        outbox.resume()
        let echoed = try await waiting.value
        #expect(echoed.statusCode == 200)
        #expect(try JSONDecoder().decode(NewPost.self, from: echoed.value.bodyData).title == "waited")
        // Asked again after the fact: the same result, from memory.
        let again = try await outbox.result(of: ticket, as: EchoedRequest.self)
        #expect(again.value == echoed.value)
        #expect(await eventually { handled.withLock { $0 } == [ticket] })
        await #expect(throws: OutboxError.unknownTicket) {
            _ = try await outbox.result(of: OutboxTicket(id: UUID()), as: EchoedRequest.self)
        }
        await outbox.close()
    }

    @Test("result(of:as:) throws the entry's permanent failure")
    func failureOfTicket() async throws {
        let server = try LoopbackServer { _ in .respond(status: 422, body: Data("bad".utf8)) }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules())
        let ticket = try await outbox.enqueue(post("rejected"), kind: "create")
        do {
            _ = try await outbox.result(of: ticket, as: EchoedRequest.self)
            Issue.record("a 422 must throw")
        } catch NetworkClientError.unacceptableStatusCode(let status, _, let data) {
            #expect(status == 422)
            #expect(data == Data("bad".utf8))
        }
        await outbox.close()
    }

    @Test("A cancelled entry is never sent, also after a restart; its waiter learns it")
    func cancelledNeverSent() async throws {
        let server = try echoServer()
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules(), paused: true)
        let kept = try await first.enqueue(post("kept"), kind: "create")
        let dropped = try await first.enqueue(post("dropped"), kind: "create")
        let waiter = Task { try await first.result(of: dropped, as: EchoedRequest.self) }
        #expect(await eventually { first.ticketWaiterCount(dropped) == 1 })
        #expect(try await first.cancel(dropped))
        #expect(try await first.cancel(dropped) == false)
        await #expect(throws: OutboxError.entryCancelled) { _ = try await waiter.value }
        #expect(first.pending().map(\.ticket) == [kept])
        await first.close()

        let second = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules())
        second.onResult(kind: "create", as: EchoedRequest.self) { _, _ in }
        _ = try await second.result(of: kept, as: EchoedRequest.self)
        #expect(await eventually { second.pendingCount == 0 })
        let titles = try server.recordedRequests.map { try JSONDecoder().decode(NewPost.self, from: $0.body).title }
        #expect(titles == ["kept"])
        await second.close()
    }

    @Test("An entry in flight is not cancelled: it finishes")
    func inFlightFinishes() async throws {
        let gate = Gate()
        let server = try gatedServer(gate, answering: .echo)
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules())
        let ticket = try await outbox.enqueue(post("flying"), kind: "create")
        #expect(await eventually { server.inProgressRequests == 1 })
        #expect(outbox.pending().first?.inFlight == true)
        #expect(try await outbox.cancel(ticket) == false)
        gate.open()
        #expect(try await outbox.result(of: ticket, as: EchoedRequest.self).statusCode == 200)
        await outbox.close()
    }

    @Test("pending() lists the waiting entries, also after a restart, with their last error while retried")
    func pendingAfterRestart() async throws {
        let server = try LoopbackServer { _ in .respond(status: 503) }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try Outbox(directory: directory, client: server.client(), rules: Outbox.Rules(), paused: true)
        let one = try await first.enqueue(post("one"), kind: "a", orderingKey: "k")
        let two = try await first.enqueue(post("two"), kind: "b")
        let listed = first.pending()
        #expect(listed.map(\.ticket) == [one, two])
        #expect(listed.map(\.kind) == ["a", "b"])
        #expect(listed.map(\.orderingKey) == ["k", nil])
        #expect(listed.allSatisfy { $0.attempts == 0 && $0.lastError == nil && !$0.inFlight })
        await first.close()

        let second = try Outbox(
            directory: directory, client: server.client(), rules: Outbox.Rules(),
            retryPolicy: RetryPolicy(baseDelay: 60, maxDelay: 60))
        #expect(Set(second.pending().map(\.ticket)) == [one, two])
        for (after, before) in zip(second.pending(), listed) {
            #expect(abs(after.created.timeIntervalSince(before.created)) < 0.001)
        }
        #expect(await eventually { second.pending().allSatisfy { $0.lastError != nil } })
        let retried = try #require(second.pending().first)
        #expect(retried.attempts >= 1)
        #expect(retried.lastError?.contains("503") == true)
        #expect(retried.nextAttempt != nil)
        await second.close()
    }
}
