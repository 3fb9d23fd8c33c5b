import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The exchange between the state machine and a transport: what it does outside its lock, and in which order.
@Suite("HTTPExchange")
struct HTTPExchangeTests {
    /// A sink whose writes wait for a gate, and which records what happened to it.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    struct GatedSink: ResponseBodySink {
        let gate: Gate
        let writing: Locked<Bool>
        let events: Locked<[String]>
        var written: Int64 = 0

        mutating func open(for head: HTTPURLResponse) -> TransferStateMachine.SinkOpening {
            .writing(written: 0, total: nil)
        }

        mutating func write(_ piece: Data) throws -> Int64 {
            writing.withLock { $0 = true }
            gate.wait(timeout: 30)
            written += Int64(piece.count)
            events.withLock { $0.append("wrote \(piece.count)") }
            return written
        }

        mutating func finish(for head: HTTPURLResponse) -> Result<(byteCount: Int64, value: any Sendable), any Error> {
            events.withLock { $0.append("finished") }
            return .success((written, written))
        }

        func settle(keep: Bool) {
            events.withLock { $0.append("settled, keep: \(keep)") }
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A download stopped by its deadline while a piece is written is settled before the caller hears of it")
    func settledBeforeTheCallerHears() async throws {
        let gate = Gate()
        defer { gate.open() }
        let writing = Locked(false)
        let events = Locked<[String]>([])
        let exchange = HTTPExchange(
            request: URLRequest(url: URL(string: "https://files.example/big")!), body: .none, limit: 100,
            sink: GatedSink(gate: gate, writing: writing, events: events), reporter: nil)
        let head = HTTPURLResponse(
            url: URL(string: "https://files.example/big")!, statusCode: 200, httpVersion: "HTTP/1.1",
            headerFields: [:])!
        // The transport's thread: the head, then a piece whose write waits for the gate.
        let transport = Thread {
            _ = exchange.receive(head)
            _ = exchange.receive(Data(count: 10))
        }
        transport.start()
        #expect(await eventually { writing.withLock { $0 } })

        exchange.expire()  // The deadline, while the write runs.
        let ending = Task {
            let outcome = await exchange.end(nil)
            events.withLock { $0.append("caller resumed") }
            return outcome
        }
        #expect(await eventually { exchange.hasWaitingCaller })
        gate.open()
        let outcome = await ending.value

        guard case .timedOut = outcome else {
            Issue.record("expected timedOut, got \(outcome)")
            return
        }
        #expect(events.withLock { $0 } == ["wrote 10", "settled, keep: true", "caller resumed"])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("An upload redirected by a 303 to a GET: progress never goes back, the last report keeps the bytes sent")
    func progressAcrossARedirect() async throws {
        let body = Data(repeating: 1, count: 50_000)
        let transport = InMemoryTransport { request in
            request.method == "POST" ? .redirect(to: "/done", status: 303) : .text("ok")
        }
        let reports = Locked<[TransferProgress]>([])
        let request = NetworkRequest<Data, String>(
            path: "/uploads", method: .post, body: body,
            onProgress: { progress in reports.withLock { $0.append(progress) } })
        let client = NetworkClient(
            configuration: NetworkConfiguration(transport: transport, baseURL: URL(string: "https://up.example")!))

        #expect(try await client.run(request).value == "ok")

        #expect(transport.requests.map(\.method) == ["POST", "GET"])
        let sent = reports.withLock { $0 }.map(\.bytesSent)
        #expect(sent == sent.sorted(), "bytes sent never go back: \(sent)")
        let last = try #require(reports.withLock { $0.last })
        #expect(last.bytesSent == 50_000)
        #expect(last.bytesReceived == 2)
    }

    struct EngineFailure: Error, CustomStringConvertible {
        var description: String { "connect failed, Authorization: Bearer secret-token" }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Another engine's error is transportFailed(.unknown) naming its type, never its text")
    func foreignError() async throws {
        let transport = InMemoryTransport { _ in throw EngineFailure() }
        let client = NetworkClient(
            configuration: NetworkConfiguration(transport: transport, baseURL: URL(string: "https://e.example")!))
        let error = try await #require(throws: NetworkClientError.self) {
            _ = try await client.run(NetworkRequest<VoidRequest, String>(path: "/x", method: .get))
        }
        guard case .transportFailed(let urlError) = error else {
            Issue.record("expected transportFailed, got \(error)")
            return
        }
        #expect(urlError.code == .unknown)
        #expect(urlError.localizedDescription.contains("EngineFailure"))
        #expect(!"\(error)".contains("secret-token"))
        #expect(!urlError.localizedDescription.contains("secret-token"))
    }
}
