import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

@Suite("DeduplicatingClient")
struct DeduplicatingClientTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("1,000 concurrent identical GETs reach the server once and every caller gets the value")
    func fanOut() async throws {
        let gate = Gate()
        let server = try gatedServer(gate, answering: .json(Post(id: 1, title: "shared")))
        let client = server.client().deduplicated()
        try await withThrowingTaskGroup(of: Post.self) { group in
            for _ in 0..<1_000 {
                group.addTask { try await client.run(NetworkRequest<VoidRequest, Post>(path: "p", method: .get)).value }
            }
            #expect(await eventually { client.waiterCount == 1_000 })
            gate.open()
            var received = 0
            for try await post in group {
                #expect(post == Post(id: 1, title: "shared"))
                received += 1
            }
            #expect(received == 1_000)
        }
        #expect(server.requestCount == 1)
        #expect(client.inFlightCount == 0)
        #expect(client.waiterCount == 0)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("1,000 concurrent GETs with distinct queries each reach the server")
    func distinctRequests() async throws {
        let server = try echoServer()
        let client = server.client().deduplicated()
        try await withThrowingTaskGroup(of: (Int, EchoedRequest).self) { group in
            for index in 0..<1_000 {
                group.addTask {
                    let request = Echo(
                        path: "p", method: .get, queryItems: [URLQueryItem(name: "i", value: "\(index)")])
                    return (index, try await client.run(request).value)
                }
            }
            for try await (index, echo) in group {
                #expect(echo.queryItems == [ServerQueryItem(name: "i", value: "\(index)")])
            }
        }
        #expect(server.requestCount == 1_000)
        #expect(client.inFlightCount == 0)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Callers differing only by Authorization get their own responses")
    func differentCredentialsNeverShare() async throws {
        let latch = Latch(count: 2)
        let server = try LoopbackServer { _ in
            // Both requests must be in progress at once, or this times out and the test fails.
            latch.arriveAndWait() ? .echo() : .respond(status: 500)
        }
        let client = server.client().deduplicated()
        func fetch(_ token: String) async throws -> String? {
            try await client.run(Echo(path: "me", method: .get, additionalHeaders: ["Authorization": token])).value
                .header("authorization")
        }
        async let alice = fetch("Bearer alice")
        async let bob = fetch("Bearer bob")
        #expect(try await alice == "Bearer alice")
        #expect(try await bob == "Bearer bob")
        #expect(server.requestCount == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Every waiter gets the same error")
    func sharedError() async throws {
        let gate = Gate()
        let server = try gatedServer(
            gate, answering: .json(APIErrorPayload(code: "down", message: "maintenance"), status: 503))
        let client = server.client().deduplicated()
        let tasks = (0..<10).map { _ in
            Task { try await client.run(NetworkRequest<VoidRequest, Post>(method: .get)) }
        }
        #expect(await eventually { client.waiterCount == 10 })
        gate.open()
        for task in tasks {
            await #expect {
                _ = try await task.value
            } throws: { error in
                guard case NetworkClientError.unacceptableStatusCode(503, _, let data) = error else { return false }
                return (try? JSONDecoder().decode(APIErrorPayload.self, from: data ?? Data()).code) == "down"
            }
        }
        #expect(server.requestCount == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Only GET and HEAD are shared by default; the shared methods are configurable")
    func sharedMethods() async throws {
        let latch = Latch(count: 2)
        let server = try LoopbackServer { _ in latch.arriveAndWait() ? .echo() : .respond(status: 500) }
        let client = server.client().deduplicated()
        async let first = client.run(Echo(path: "w", method: .post))
        async let second = client.run(Echo(path: "w", method: .post))
        _ = try await (first, second)
        #expect(server.requestCount == 2)

        let gate = Gate()
        let gated = try gatedServer(gate, answering: .echo())
        let sharingPosts = gated.client().deduplicated(sharing: [.post])
        let tasks = (0..<5).map { _ in Task { try await sharingPosts.run(Echo(path: "w", method: .post)) } }
        #expect(await eventually { sharingPosts.waiterCount == 5 })
        gate.open()
        for task in tasks { _ = try await task.value }
        #expect(gated.requestCount == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A request after the shared call finished starts a new call: this is not a cache")
    func notACache() async throws {
        let server = try echoServer()
        let client = server.client().deduplicated()
        _ = try await client.run(Echo(method: .get))
        _ = try await client.run(Echo(method: .get))
        #expect(server.requestCount == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Different response types never share a call")
    func responseTypeIsPartOfIdentity() async throws {
        let latch = Latch(count: 2)
        let server = try LoopbackServer { _ in latch.arriveAndWait() ? .echo() : .respond(status: 500) }
        let client = server.client().deduplicated()
        async let asEcho = client.run(Echo(path: "x", method: .get))
        async let asData = client.run(NetworkRequest<VoidRequest, Data>(path: "x", method: .get))
        let (echo, data) = try await (asEcho, asData)
        #expect(echo.value.path == "/x")
        #expect(!data.value.isEmpty)
        #expect(server.requestCount == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Requests that decode differently, or send a different body type, never share a call")
    func codersAreIdentity() async throws {
        struct Snake: Decodable, Sendable { let postId: Int }
        let latch = Latch(count: 2)
        let server = try LoopbackServer { _ in
            latch.arriveAndWait() ? .respond(status: 200, body: Data(#"{"post_id":7}"#.utf8)) : .respond(status: 500)
        }
        let client = server.client().deduplicated()
        let snakeCase = JSONDecoder()
        snakeCase.keyDecodingStrategy = .convertFromSnakeCase
        async let converted = client.run(
            NetworkRequest<VoidRequest, Snake>(path: "p", method: .get, decoder: snakeCase))
        let plain = Task { try await client.run(NetworkRequest<VoidRequest, Snake>(path: "p", method: .get)) }
        // Alone, the plain decoder fails on this body; sharing the converted call would hand it a value.
        #expect(try await converted.value.postId == 7)
        await #expect(throws: NetworkClientError.self) { _ = try await plain.value }
        #expect(server.requestCount == 2)

        let bytes = try JSONEncoder().encode([1, 2])
        let bodies = Latch(count: 2)
        let echo = try LoopbackServer { _ in bodies.arriveAndWait() ? .echo() : .respond(status: 500) }
        let sharing = echo.client().deduplicated(sharing: [.post])
        async let asData = sharing.run(NetworkRequest<Data, EchoedRequest>(path: "b", method: .post, body: bytes))
        async let asModel = sharing.run(NetworkRequest<[Int], EchoedRequest>(path: "b", method: .post, body: [1, 2]))
        #expect(try await asData.value.header("content-type") == "application/octet-stream")
        #expect(try await asModel.value.header("content-type") == "application/json")
        #expect(echo.requestCount == 2)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A NaN timeout still identifies its call: nothing hangs and the table drains", .timeLimit(.minutes(1)))
    func nanTimeout() async throws {
        let server = try LoopbackServer { _ in .json(Post(id: 1, title: "t")) }
        let client = server.client().deduplicated()
        let request = NetworkRequest<VoidRequest, Post>(method: .get, timeoutInterval: .nan)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    await #expect {
                        _ = try await client.run(request)
                    } throws: { error in
                        guard case NetworkClientError.invalidRequest = error else { return false }
                        return true
                    }
                }
            }
        }
        #expect(client.inFlightCount == 0)
        #expect(client.waiterCount == 0)
        #expect(server.requestCount == 0)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Cancelling a waiter throws CancellationError at once; the shared call goes on for the others")
    func oneWaiterCancels() async throws {
        let gate = Gate()
        let server = try gatedServer(gate, answering: .json(Post(id: 2, title: "kept")))
        let client = server.client().deduplicated()
        // The first caller runs the call; the two after it wait for it.
        let first = Task { try await client.run(NetworkRequest<VoidRequest, Post>(method: .get)).value }
        #expect(await server.waitUntil { $0.inProgressRequests == 1 })
        let waiters = (0..<2).map { _ in
            Task { try await client.run(NetworkRequest<VoidRequest, Post>(method: .get)).value }
        }
        #expect(await eventually { client.waiterCount == 3 })
        waiters[0].cancel()
        await #expect(throws: CancellationError.self) { try await waiters[0].value }
        #expect(client.waiterCount == 2)
        gate.open()
        #expect(try await first.value == Post(id: 2, title: "kept"))
        #expect(try await waiters[1].value == Post(id: 2, title: "kept"))
        #expect(server.requestCount == 1)
        #expect(server.clientClosedCount == 0)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Cancelling the caller that runs the call cancels its transfer; the call is sent again for those waiting")
    func runningCallerCancels() async throws {
        let gate = Gate()
        let server = try LoopbackServer { _ in
            gate.wait()
            return .json(Post(id: 5, title: "again"))
        }
        let client = server.client().deduplicated()
        let first = Task { try await client.run(NetworkRequest<VoidRequest, Post>(method: .get)).value }
        #expect(await server.waitUntil { $0.inProgressRequests == 1 })
        let waiters = (0..<2).map { _ in
            Task { try await client.run(NetworkRequest<VoidRequest, Post>(method: .get)).value }
        }
        #expect(await eventually { client.waiterCount == 3 })
        first.cancel()
        await #expect(throws: CancellationError.self) { try await first.value }
        // The waiters' call goes out again; both get its value.
        #expect(await server.waitUntil { $0.requestCount == 2 })
        gate.open()
        #expect(try await waiters[0].value == Post(id: 5, title: "again"))
        #expect(try await waiters[1].value == Post(id: 5, title: "again"))
        #expect(client.inFlightCount == 0)
        #expect(client.waiterCount == 0)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("When every waiter cancels, the shared call is cancelled and the server sees the connection close")
    func allWaitersCancel() async throws {
        let server = try LoopbackServer { _ in .hang }
        let client = server.client().deduplicated()
        let tasks = (0..<3).map { _ in
            Task { try await client.run(NetworkRequest<VoidRequest, Post>(method: .get)).value }
        }
        #expect(await server.waitUntil { $0.requestCount == 1 })
        #expect(await eventually { client.waiterCount == 3 })
        for task in tasks { task.cancel() }
        for task in tasks { await #expect(throws: CancellationError.self) { try await task.value } }
        #expect(client.inFlightCount == 0)
        #expect(await server.waitUntil { $0.clientClosedCount == 1 })
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A waiter cancelled before it joins throws CancellationError and sends nothing")
    func cancelledBeforeJoining() async throws {
        let server = try echoServer()
        let client = server.client().deduplicated()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await client.run(Echo(method: .get))
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(client.waiterCount == 0)
        #expect(client.inFlightCount == 0)
        #expect(server.requestCount == 0)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Racing finishes, new duplicates and cancellations never leave a waiter hanging")
    func finishJoinCancelRace() async throws {
        let server = try LoopbackServer { _ in .json(Post(id: 3, title: "r")) }
        let client = server.client().deduplicated()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<400 {
                group.addTask {
                    let task = Task { try await client.run(NetworkRequest<VoidRequest, Post>(method: .get)) }
                    if index % 3 == 0 { task.cancel() }
                    do {
                        let post = try await task.value.value
                        #expect(post == Post(id: 3, title: "r"))
                    } catch is CancellationError {
                        #expect(index % 3 == 0)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(client.inFlightCount == 0)
        #expect(client.waiterCount == 0)
    }
}
