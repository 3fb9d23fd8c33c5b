import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// One page of a list endpoint: its rows and, for cursor pagination, the cursor of the next page.
struct RowsPage: Codable, Sendable, Equatable {
    let rows: [Int]
    let next: String?
}

/// The rows of every page, read to the end.
func allRows(_ pages: Pages<VoidRequest, RowsPage>) async throws -> [Int] {
    var rows: [Int] = []
    for try await page in pages { rows += page.value.rows }
    return rows
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

    private func rows(_ pages: Pages<VoidRequest, RowsPage>) async throws -> [Int] {
        try await allRows(pages)
    }

    /// `server`'s configuration, naming `X-Api-Key` sensitive, with an interceptor that adds a credential to every
    /// request, wherever it goes.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    private func interceptedConfiguration(_ server: LoopbackServer) -> NetworkConfiguration {
        let configuration = server.configuration(sensitiveHeaders: ["X-Api-Key"])
        configuration.interceptors = [
            RequestChange { $0.setValue("Bearer from-interceptor", forHTTPHeaderField: "Authorization") }
        ]
        return configuration
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

    @Test(
        "A page whose next link is refused (another origin, file:, data:) is delivered, then the pages end with the error",
        arguments: ["another origin", "file", "data"])
    func refusedLinkDeliversThePage(refused: String) async throws {
        let other = try pagedServer(host: "127.0.0.2", pages: 1) { _, _ in nil }
        let home = try pagedServer { _, page in
            guard page == 3 else { return "</items?page=\(page)>; rel=\"next\"" }
            switch refused {
            case "another origin": return "<\(other.baseURL.absoluteString)/items?page=3>; rel=\"next\""
            case "file": return "<file:///etc/passwd>; rel=\"next\""
            default: return "<data:application/json,%7B%7D>; rel=\"next\""
            }
        }
        let expected: PaginationError =
            switch refused {
            case "another origin": .linkToOtherOrigin(origin: "http://127.0.0.2:\(other.port)")
            case "file": .unsupportedLink(scheme: "file")
            default: .unsupportedLink(scheme: "data")
            }
        let clients: [any NetworkClientProtocol] = [
            home.client(), home.client().authenticated(by: TokenStore(token: "secret").authenticator),
        ]
        for client in clients {
            var rows: [Int] = []
            let error = await #expect(throws: PaginationError.self) {
                for try await page in client.pages(of: list) { rows += page.value.rows }
            }
            #expect(error == expected)
            // Both pages that arrived, the one with the refused link included.
            #expect(rows == [10, 11, 20, 21])
        }
        #expect(other.requestCount == 0)
        #expect(home.requestCount == 4)
    }

    @Test("A next page's request that the closure cannot make: the page is delivered, then its error ends the pages")
    func closureErrorAfterThePage() async throws {
        struct NoCursor: Error {}
        let server = try LoopbackServer { _ in .json(RowsPage(rows: [1], next: "c1")) }
        let pages = server.client().pages(of: NetworkRequest<VoidRequest, RowsPage>(path: "/rows", method: .get)) {
            _ -> NetworkRequest<VoidRequest, RowsPage>? in throw NoCursor()
        }
        var rows: [Int] = []
        await #expect(throws: NoCursor.self) {
            for try await page in pages { rows += page.value.rows }
        }
        #expect(rows == [1])
    }

    @Test(
        "Pages followed to another origin carry none of the configured sensitive headers, nor what an interceptor adds"
    )
    func otherOriginGetsNoSecrets() async throws {
        let other = try pagedServer(host: "127.0.0.2", pages: 3) { _, page in "</items?page=\(page)>; rel=\"next\"" }
        let home = try pagedServer(pages: 2) { _, page in
            "<\(other.baseURL.absoluteString)/items?page=\(page)>; rel=\"next\""
        }
        let configuration = interceptedConfiguration(home)
        let request = NetworkRequest<VoidRequest, RowsPage>(
            path: "/items", method: .get, queryItems: [URLQueryItem(name: "page", value: "1")],
            additionalHeaders: ["X-Api-Key": "k3y", "Cookie": "session=1", "X-Trace": "t"])
        let clients: [any NetworkClientProtocol] = [
            NetworkClient(configuration: configuration),
            NetworkClient(configuration: configuration).retrying().logged(to: { _ in }),
        ]
        for client in clients {
            #expect(try await rows(client.pages(of: request, allowingOtherOrigins: true)) == [10, 11, 20, 21, 30, 31])
        }
        #expect(other.requestCount == 4)
        for sent in other.recordedRequests {
            #expect(sent.header("Authorization") == nil)
            #expect(sent.header("X-Api-Key") == nil)
            #expect(sent.header("Cookie") == nil)
            #expect(sent.header("X-Trace") == "t")
        }
        for sent in home.recordedRequests {
            #expect(sent.header("Authorization") == "Bearer from-interceptor")
            #expect(sent.header("X-Api-Key") == "k3y")
        }
    }

    @Test("A next_url to another origin, through replacingURL(with:), carries no secret there either")
    func replacedURLGetsNoSecrets() async throws {
        let other = try LoopbackServer(host: "127.0.0.2") { _ in .json(RowsPage(rows: [2], next: nil)) }
        let home = try LoopbackServer { _ in .json(RowsPage(rows: [1], next: other.url("/rows?page=2").absoluteString))
        }
        let configuration = interceptedConfiguration(home)
        let first = NetworkRequest<VoidRequest, RowsPage>(
            path: "/rows", method: .get, additionalHeaders: ["X-Api-Key": "k3y", "X-Trace": "t"])
        let pages = NetworkClient(configuration: configuration).pages(of: first) { page in
            page.value.next.flatMap(URL.init(string:)).map { first.replacingURL(with: $0) }
        }
        #expect(try await rows(pages) == [1, 2])
        let sent = try #require(other.recordedRequests.first)
        #expect(sent.header("Authorization") == nil)
        #expect(sent.header("X-Api-Key") == nil)
        #expect(sent.header("X-Trace") == "t")
        #expect(home.recordedRequests.first?.header("X-Api-Key") == "k3y")
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
            where: { $0.path == "/items" },
            answer: { request in
                let second = request.query("page") == "2"
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
