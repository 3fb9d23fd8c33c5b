import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// One page of a list endpoint: its rows and, for cursor pagination, the cursor of the next page.
struct RowsPage: Codable, Sendable, Equatable {
    let rows: [Int]
    let next: String?
}

@Suite("Pages")
struct PagesTests {
    /// A server of three pages at `/items?page=N`, each linking to the next with `link(N + 1)`.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    private func pagedServer(
        host: String = "127.0.0.1", pages: Int = 3, gate: Gate? = nil,
        link: @escaping @Sendable (_ server: URL, _ page: Int) -> String?
    ) throws -> LoopbackServer {
        let base = Locked<URL?>(nil)
        let server = try LoopbackServer(host: host) { request in
            let page = Int(request.queryItems.first { $0.name == "page" }?.value ?? "1") ?? 1
            if page > 1 { gate?.wait() }
            var headers = [ServerHeader(name: "Content-Type", value: "application/json")]
            if page < pages, let url = base.withLock({ $0 }), let target = link(url, page + 1) {
                headers.append(ServerHeader(name: "Link", value: target))
            }
            let body = try! JSONEncoder().encode(RowsPage(rows: [page * 10, page * 10 + 1], next: nil))
            return .respond(status: 200, headers: headers, body: body)
        }
        base.withLock { $0 = server.baseURL }
        return server
    }

    private let list = NetworkRequest<VoidRequest, RowsPage>(
        path: "/items", method: .get, queryItems: [URLQueryItem(name: "page", value: "1")])

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    private func rows(_ pages: Pages<VoidRequest, RowsPage>) async throws -> [Int] {
        var rows: [Int] = []
        for try await page in pages { rows += page.value.rows }
        return rows
    }

    @Test("Link rel=next, relative: resolved against the page's URL, to the last page")
    func relativeLinks() async throws {
        let server = try pagedServer { _, page in "</items?page=\(page)>; rel=\"next\"" }
        let rows = try await rows(server.client().pages(of: list))
        #expect(rows == [10, 11, 20, 21, 30, 31])
        #expect(server.recordedRequests.map(\.target) == ["/items?page=1", "/items?page=2", "/items?page=3"])
    }

    @Test("Link rel=next, absolute, among other relations and quoted commas")
    func absoluteLinks() async throws {
        let server = try pagedServer { base, page in
            "<\(base.absoluteString)/items?page=1>; rel=\"first\"; title=\"a, b\", "
                + "<\(base.absoluteString)/items?page=\(page)>; REL=\"Next last\""
        }
        #expect(try await rows(server.client().pages(of: list)) == [10, 11, 20, 21, 30, 31])
    }

    @Test("A closure reads the cursor from the body")
    func closureCursor() async throws {
        let server = try LoopbackServer { request in
            let cursor = request.queryItems.first { $0.name == "after" }?.value
            switch cursor {
            case nil: return .json(RowsPage(rows: [1], next: "c1"))
            case "c1": return .json(RowsPage(rows: [2], next: "c2"))
            default: return .json(RowsPage(rows: [3], next: nil))
            }
        }
        let first = NetworkRequest<VoidRequest, RowsPage>(path: "/rows", method: .get)
        let pages = server.client().pages(of: first) { page in
            page.value.next.map {
                NetworkRequest(path: "/rows", method: .get, queryItems: [URLQueryItem(name: "after", value: $0)])
            }
        }
        #expect(try await rows(pages) == [1, 2, 3])
    }

    @Test("A link back to a page already served ends the pages with an error, without sending it")
    func loop() async throws {
        let server = try pagedServer(pages: 5) { _, page in
            page == 3 ? "</items?page=1>; rel=\"next\"" : "</items?page=\(page)>; rel=\"next\""
        }
        var rows: [Int] = []
        await #expect(throws: PaginationError.self) {
            for try await page in server.client().pages(of: list) { rows += page.value.rows }
        }
        #expect(rows == [10, 11, 20, 21])
        #expect(server.requestCount == 2)
    }

    @Test("A link to another origin: refused by default; followed when allowed, without the credential")
    func otherOrigin() async throws {
        let other = try pagedServer(host: "127.0.0.2", pages: 2) { _, _ in nil }
        let home = try pagedServer(pages: 2) { _, page in
            "<\(other.baseURL.absoluteString)/items?page=\(page)>; rel=\"next\""
        }
        let store = TokenStore(token: "secret")
        let client = home.client().authenticated(by: store.authenticator)
        let request = NetworkRequest<VoidRequest, RowsPage>(
            path: "/items", method: .get, queryItems: [URLQueryItem(name: "page", value: "1")],
            additionalHeaders: ["Cookie": "session=1", "X-Trace": "t"])
        await #expect(throws: PaginationError.linkToOtherOrigin(origin: "http://127.0.0.2:\(other.port)")) {
            for try await _ in client.pages(of: request) {}
        }
        #expect(other.requestCount == 0)

        let rows = try await rows(client.pages(of: request, allowingOtherOrigins: true))
        #expect(rows == [10, 11, 20, 21])
        let sent = try #require(other.recordedRequests.first)
        #expect(sent.header("Authorization") == nil)
        #expect(sent.header("Cookie") == nil)
        #expect(sent.header("X-Trace") == "t")
        #expect(home.recordedRequests.last?.header("Authorization") == "Bearer secret")
    }

    @Test("Lazy: a page is requested only when the loop asks for it")
    func lazy() async throws {
        let server = try pagedServer { _, page in "</items?page=\(page)>; rel=\"next\"" }
        let pages = server.client().pages(of: list)
        #expect(server.requestCount == 0)
        for try await _ in pages { break }
        #expect(server.requestCount == 1)
    }

    @Test("Cancelling the task mid-sequence cancels the page in flight")
    func cancellation() async throws {
        let gate = Gate()
        defer { gate.open() }
        let server = try pagedServer(gate: gate) { _, page in "</items?page=\(page)>; rel=\"next\"" }
        let client = server.client()
        let list = self.list
        let firstPage = Locked(false)
        let task = Task { () -> String in
            do {
                for try await _ in client.pages(of: list) { firstPage.withLock { $0 = true } }
                return "ended"
            } catch {
                return error is CancellationError ? "cancelled" : "\(error)"
            }
        }
        #expect(await eventually { firstPage.withLock { $0 } && server.inProgressRequests == 1 })
        task.cancel()
        #expect(await firstWithin(promptly) { await task.value } == "cancelled")
        gate.open()
        withExtendedLifetime(server) {}
    }

    @Test("StubNetworkClient serves pages by Link")
    func stubPages() async throws {
        let stub = StubNetworkClient()
        stub.stub(
            where: { $0.path == "/items" || $0.baseURL?.query == "page=2" },
            answer: { request in
                let second = request.baseURL?.query == "page=2"
                let body = try! JSONEncoder().encode(RowsPage(rows: second ? [2] : [1], next: nil))
                return .body(
                    body, statusCode: 200, headers: second ? [:] : ["Link": "</items?page=2>; rel=\"next\""])
            })
        let pages = stub.pages(of: NetworkRequest<VoidRequest, RowsPage>(path: "/items", method: .get))
        var rows: [Int] = []
        for try await page in pages { rows += page.value.rows }
        #expect(rows == [1, 2])
        #expect(stub.requests.count == 2)
    }

    @Test("Link header parsing")
    func linkParsing() {
        #expect(LinkHeader.target(of: "next", in: "<a>; rel=\"prev\", <b>; rel=next") == "b")
        #expect(LinkHeader.target(of: "next", in: "<a,b>; rel=\"next\"") == "a,b")
        #expect(LinkHeader.target(of: "next", in: "<a>; title=\"x, rel=next\", <c>; rel=\"last\"") == nil)
        #expect(LinkHeader.target(of: "next", in: "") == nil)
        #expect(LinkHeader.target(of: "next", in: "<broken; rel=next") == nil)
    }
}
