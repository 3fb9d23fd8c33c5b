import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// What the *Streaming* article says of streams beside one another: a session's connections per host, and streams as
/// pages.
@Suite("Streams and connections")
struct StreamConnectionTests {
    /// A server whose every stream sends one event and then stays open until the client closes it. `arrived` gets,
    /// for each request as it arrives, what `flag` holds then.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    private func openStreams(flag: Locked<Bool> = Locked(false), arrived: Locked<[Bool]> = Locked([])) throws
        -> LoopbackServer
    {
        try LoopbackServer { _ in
            let now = flag.withLock { $0 }
            arrived.withLock { $0.append(now) }
            return .writer(headers: [ServerHeader(name: "Content-Type", value: "text/event-stream")]) { writer in
                writer.send("data: open\n\n")
                writer.wait(.seconds(30))
                return .close
            }
        }
    }

    /// Opens `count` streams on `client`, each in a task that reads its first event (and adds its index to
    /// `opened`), then holds the stream until the task is cancelled.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    private func holdStreams(
        _ count: Int, on client: NetworkClient, opened: Locked<[Int]>
    ) -> [Task<Void, any Error>] {
        (0..<count).map { index in
            Task {
                for try await _ in try await client.run(EventsRequest(path: "/s\(index)", method: .get)).value {
                    opened.withLock { $0.append(index) }
                    // Holds the connection open until cancelled.
                    try await Task.sleep(for: .seconds(60))
                }
            }
        }
    }

    @Test("On URLSession's default 6 connections per host a seventh stream waits for one to end; raising it opens it")
    func seventhStreamWaits() async throws {
        #if os(Linux) || os(macOS)
        #expect(URLSessionConfiguration.default.httpMaximumConnectionsPerHost == 6)
        #endif
        let firstEnded = Locked(false)
        let arrived = Locked<[Bool]>([])
        let server = try openStreams(flag: firstEnded, arrived: arrived)
        let opened = Locked<[Int]>([])
        let streams = holdStreams(7, on: server.client(), opened: opened)
        // Six open, and the seventh is not at the server: URLSession queues it.
        #expect(await eventually { opened.withLock { $0.count } == 6 && server.requestCount == 6 })
        // One open stream ends: the seventh reaches the server only then, and opens.
        firstEnded.withLock { $0 = true }
        let first = try #require(opened.withLock { $0.first })
        streams[first].cancel()
        #expect(await eventually { opened.withLock { $0.count } == 7 })
        #expect(arrived.withLock { $0 } == Array(repeating: false, count: 6) + [true])
        for stream in streams { stream.cancel() }

        let raised = try openStreams()
        let openedToo = Locked<[Int]>([])
        let client = NetworkClient(configuration: raised.configuration(connectionsPerHost: 7))
        let more = holdStreams(7, on: client, opened: openedToo)
        #expect(await eventually { openedToo.withLock { $0.count } == 7 })
        #expect(raised.maxConcurrentRequests == 7)
        for stream in more { stream.cancel() }
    }

    @Test("A stream type works as pages: each page's lines are read before the next page is asked for")
    func streamPages() async throws {
        let server = try LoopbackServer { request in
            let page = Int(request.queryItems.first { $0.name == "page" }?.value ?? "1") ?? 1
            var headers = [ServerHeader(name: "Content-Type", value: "application/x-ndjson")]
            if page < 3 {
                headers.append(ServerHeader(name: "Link", value: "</export?page=\(page + 1)>; rel=\"next\""))
            }
            return .writer(headers: headers) { writer in
                writer.send("{\"id\":\(page * 10)}\n{\"id\":\(page * 10 + 1)}\n")
                return .finish
            }
        }
        struct Line: Decodable, Sendable { let id: Int }
        var ids: [Int] = []
        let export = NetworkRequest<VoidRequest, JSONLines<Line>>(path: "/export", method: .get)
        for try await page in server.client().pages(of: export) {
            for try await line in page.value { ids.append(line.id) }
        }
        #expect(ids == [10, 11, 20, 21, 30, 31])
        #expect(server.recordedRequests.map(\.target) == ["/export", "/export?page=2", "/export?page=3"])
    }

    @Test("A page's stream left unread is closed when the loop moves on to the next page")
    func unreadPageCloses() async throws {
        let server = try LoopbackServer { request in
            let page = Int(request.queryItems.first { $0.name == "page" }?.value ?? "1") ?? 1
            var headers = [ServerHeader(name: "Content-Type", value: "text/event-stream")]
            if page < 3 { headers.append(ServerHeader(name: "Link", value: "</feed?page=\(page + 1)>; rel=\"next\"")) }
            return .writer(headers: headers) { writer in
                writer.send("data: \(page)\n\n")
                // Never ends on its own: only the client closing the connection ends it.
                writer.wait(.seconds(30))
                return .close
            }
        }
        var pages = 0
        for try await _ in server.client().pages(of: EventsRequest(path: "/feed", method: .get)) { pages += 1 }
        #expect(pages == 3)
        #expect(await server.waitUntil(timeout: promptly) { $0.clientClosedCount == 3 })
    }
}
