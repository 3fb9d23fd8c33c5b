import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A decorator of the user's, written as the *Writing a decorator* article shows: it reports every call it runs.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private final class CountingClient: NetworkClientProtocol {
    struct Call: Sendable, Equatable {
        let method: String
        let path: String
        let idempotencyKey: String?
    }

    let wrapped: any NetworkClientProtocol
    private let calls = Locked<[Call]>([])

    init(wrapping client: any NetworkClientProtocol) {
        self.wrapped = client
    }

    /// The calls it ran, in order.
    var seen: [Call] { calls.withLock { $0 } }

    func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        let path = networkRequest.path.map { $0.hasPrefix("/") ? $0 : "/" + $0 } ?? "/"
        let key = networkRequest.additionalHeaders?.first {
            $0.key.caseInsensitiveCompare("Idempotency-Key") == .orderedSame
        }?.value
        calls.withLock { $0.append(Call(method: networkRequest.method.rawValue, path: path, idempotencyKey: key)) }
        return try await wrapped.run(networkRequest)
    }
}

private struct Draft: Codable, Sendable {
    let postTitle: String
}

/// Opens an outbox with the deprecated initializer, through a protocol requirement so that this test's call is not
/// itself a deprecation warning.
private protocol OpensWithoutRules {
    static func open(directory: URL, client: any NetworkClientProtocol) throws -> Outbox
}

private enum DeprecatedOpening: OpensWithoutRules {
    @available(*, deprecated)
    static func open(directory: URL, client: any NetworkClientProtocol) throws -> Outbox {
        try Outbox(directory: directory, client: client, paused: true)
    }
}

@Suite("Outbox rules")
struct OutboxRulesTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A counting decorator under the outbox sees exactly the requests the server receives, also across a restart")
    func decoratorSeesOnlyRealRequests() async throws {
        let answered = Locked(0)
        // The second request fails once with a 503: the retry is a real request too.
        let server = try LoopbackServer { _ in
            let count = answered.withLock { count -> Int in
                count += 1
                return count
            }
            return count == 2 ? .respond(status: 503) : .echo()
        }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = server.configuration(sensitiveHeaders: ["X-Session"])
        let counting = CountingClient(wrapping: NetworkClient(configuration: configuration))
        let time = VirtualTime()
        let first = try Outbox(
            directory: directory, client: counting, rules: Outbox.Rules(configuration), paused: true,
            environment: time.environment)
        // Everything that used to ask the client for its configuration: enqueues, a handler, a ticket, a restart.
        await #expect(throws: OutboxError.secretHeader(name: "x-session")) {
            try await first.enqueue(
                NetworkRequest<VoidRequest, VoidResponse>(
                    path: "/refused", method: .post, additionalHeaders: ["x-session": "S-1"]),
                kind: "write")
        }
        let a = try await first.enqueue(
            NetworkRequest<Draft, EchoedRequest>(path: "/a", method: .post, body: Draft(postTitle: "a")), kind: "write")
        let b = try await first.enqueue(
            NetworkRequest<VoidRequest, VoidResponse>(path: "/b", method: .post), kind: "write")
        let unhandled = try await first.enqueue(
            NetworkRequest<VoidRequest, VoidResponse>(path: "/c", method: .put), kind: "later")
        first.onResult(kind: "write", as: EchoedRequest.self) { _, _ in }
        _ = first.pending()
        first.resume()
        _ = try await first.result(of: a, as: EchoedRequest.self)
        _ = try await first.result(of: b, as: VoidResponse.self)
        _ = try await first.result(of: unhandled, as: VoidResponse.self)
        #expect(await eventually { first.pendingCount == 1 })
        await first.close()

        let second = try Outbox(
            directory: directory, client: counting, rules: Outbox.Rules(configuration), environment: time.environment)
        let handled = Locked(false)
        second.onResult(kind: "later", as: VoidResponse.self) { _, _ in handled.withLock { $0 = true } }
        _ = try await second.result(of: unhandled, as: VoidResponse.self)
        #expect(await eventually { second.pendingCount == 0 })
        await second.close()

        let received = server.recordedRequests.map {
            CountingClient.Call(method: $0.method, path: $0.path, idempotencyKey: $0.header("Idempotency-Key"))
        }
        #expect(received.map(\.path) == ["/a", "/b", "/b", "/c"])
        #expect(counting.seen == received)
        #expect(handled.withLock { $0 })
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "Rules(configuration) under decorators: its sensitive header is refused and kept off disk, its encoder encodes")
    func configurationRules() async throws {
        let server = try LoopbackServer { _ in
            .respond(status: 201, headers: [ServerHeader(name: "X-Session", value: "RS-7")], body: Data("{}".utf8))
        }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let configuration = NetworkConfiguration(
            sessionConfiguration: .ephemeral, defaultEncoder: encoder, baseURL: server.baseURL,
            sensitiveHeaders: ["X-Session"])
        let client = ForwardingClient(wrapped: NetworkClient(configuration: configuration).retrying())
        let outbox = try Outbox(directory: directory, client: client, rules: Outbox.Rules(configuration))
        #expect(outbox.rules.sensitiveHeaders.contains("x-session"))
        await #expect(throws: OutboxError.secretHeader(name: "X-SESSION")) {
            try await outbox.enqueue(
                NetworkRequest<VoidRequest, VoidResponse>(
                    path: "/w", method: .post, additionalHeaders: ["X-SESSION": "QS-1"]),
                kind: "w")
        }
        let events = outbox.events()
        try await outbox.enqueue(
            NetworkRequest<Draft, VoidResponse>(path: "/w", method: .post, body: Draft(postTitle: "t")), kind: "w")
        _ = await firstEvent(events) { if case .sent = $0 { true } else { false } }
        let onDisk = { String(decoding: everyByte(under: directory), as: UTF8.self) }
        // No handler: the result waits in the journal, without the sensitive response header.
        #expect(await eventually { onDisk().contains(#""statusCode":201"#) })
        await outbox.close()
        #expect(server.recordedRequests.map { String(decoding: $0.body, as: UTF8.self) } == [#"{"post_title":"t"}"#])
        #expect(!onDisk().contains("RS-7"))
        #expect(!onDisk().contains("QS-1"))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "Outbox.Rules() are a plain configuration's; the deprecated opening reads a bare NetworkClient's configuration")
    func defaultsAndDeprecatedOpening() async throws {
        let plain = Outbox.Rules()
        #expect(plain.sensitiveHeaders.isEmpty)
        #expect(plain.allSensitiveHeaders == ["authorization", "proxy-authorization", "cookie"])
        let server = try echoServer()
        let configuration = server.configuration(sensitiveHeaders: ["X-Session"])
        let opener: any OpensWithoutRules.Type = DeprecatedOpening.self
        for (client, refused) in [
            (NetworkClient(configuration: configuration) as any NetworkClientProtocol, true),
            (ForwardingClient(wrapped: NetworkClient(configuration: configuration)), false),
        ] {
            let directory = temporaryOutboxDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let outbox = try opener.open(directory: directory, client: client)
            let request = NetworkRequest<VoidRequest, VoidResponse>(
                path: "/w", method: .post, additionalHeaders: ["X-Session": "S-1"])
            if refused {
                await #expect(throws: OutboxError.secretHeader(name: "X-Session")) {
                    try await outbox.enqueue(request, kind: "w")
                }
            } else {
                // Under a decorator the deprecated opening cannot see the configuration: what the warning says.
                _ = try await outbox.enqueue(request, kind: "w")
            }
            await outbox.close()
        }
    }
}
