import Courier
import Foundation
import Testing

// A small example SDK, written as SDK authors write them, and its tests on `StubNetworkClient`: no server, no
// hand-written test double.

/// A to-do item of the example SDK.
struct Todo: Codable, Sendable, Equatable {
    let id: Int
    let title: String
    let done: Bool
}

/// The error payload of the example API.
struct TodoAPIError: Codable, Sendable, Equatable {
    let code: String
    let message: String
}

/// The example SDK: a factory of requests and a service that runs them on any client.
enum TodoRequests {
    static func list(page: Int) -> NetworkRequest<VoidRequest, [Todo]> {
        NetworkRequest(path: "/todos", method: .get, queryItems: [URLQueryItem(name: "page", value: String(page))])
    }

    static func todo(id: Int) -> NetworkRequest<VoidRequest, Todo> {
        NetworkRequest(path: "/todos/\(id)", method: .get)
    }

    static func create(title: String) -> NetworkRequest<VoidRequest, Todo> {
        NetworkRequest(path: "/todos", method: .post, formItems: [URLFormItem(name: "title", value: title)])
    }

    static func update(_ todo: Todo) -> NetworkRequest<Todo, VoidResponse> {
        NetworkRequest(path: "/todos/\(todo.id)", method: .put, body: todo, additionalHeaders: ["X-Client": "tests"])
    }

    static func delete(id: Int) -> NetworkRequest<VoidRequest, VoidResponse> {
        NetworkRequest(path: "/todos/\(id)", method: .delete)
    }
}

/// What an app calls: the SDK's service, given any client.
struct TodoService: Sendable {
    enum Failure: Error, Equatable {
        case server(TodoAPIError)
    }

    let client: any NetworkClientProtocol

    /// Returns the to-do, or `nil` when the server says it does not exist; other server errors carry the payload.
    func todo(id: Int) async throws -> Todo? {
        do {
            return try await client.run(TodoRequests.todo(id: id)).value
        } catch let error as NetworkClientError {
            if error.statusCode == 404 { return nil }
            if let payload = error.errorBody(TodoAPIError.self) { throw Failure.server(payload) }
            throw error
        }
    }

    func complete(_ todo: Todo) async throws {
        _ = try await client.run(TodoRequests.update(Todo(id: todo.id, title: todo.title, done: true)))
    }
}

@Suite("StubNetworkClient: a test double for SDKs")
struct StubNetworkClientTests {
    @Test("A stubbed value is returned, and the request is recorded with its query")
    func stubbedValue() async throws {
        let client = StubNetworkClient()
        let todos = [Todo(id: 1, title: "Milk", done: false)]
        client.stub(.get, "/todos", returning: todos)

        let response = try await client.run(TodoRequests.list(page: 2))
        #expect(response.value == todos)
        #expect(response.statusCode == 200)
        #expect(client.requests.map(\.description) == ["GET /todos?page=2"])
        #expect(client.requests.first?.query("page") == "2")
    }

    @Test("A canned JSON body is decoded like a server's; a leading slash does not matter")
    func cannedBody() async throws {
        let client = StubNetworkClient()
        client.stub(.get, "todos/7", body: #"{"id":7,"title":"Tea","done":true}"#)
        let todo = try await TodoService(client: client).todo(id: 7)
        #expect(todo == Todo(id: 7, title: "Tea", done: true))
    }

    @Test("A VoidResponse accepts an empty body, for 200 and 204 alike")
    func voidResponse() async throws {
        let client = StubNetworkClient()
        client.stub(.delete, "/todos/1", statusCode: 204)
        client.stub(.put, "/todos/1")
        #expect(try await client.run(TodoRequests.delete(id: 1)).statusCode == 204)
        try await TodoService(client: client).complete(Todo(id: 1, title: "Milk", done: false))
    }

    @Test("Form items, headers and the encoded JSON body are recorded")
    func recordsBodies() async throws {
        let client = StubNetworkClient()
        client.stub(.post, "/todos", statusCode: 201, body: #"{"id":2,"title":"Bread & jam","done":false}"#)
        client.stub(.put, "/todos/2", statusCode: 204)
        let created = try await client.run(TodoRequests.create(title: "Bread & jam")).value
        try await TodoService(client: client).complete(created)

        let post = try #require(client.requests(.post, "/todos").first)
        #expect(post.form("title") == "Bread & jam")
        let put = try #require(client.requests(.put, "/todos/2").first)
        #expect(put.header("x-client") == "tests")
        #expect(try put.decodedBody(as: Todo.self) == Todo(id: 2, title: "Bread & jam", done: true))
    }

    @Test("A 4xx body throws unacceptableStatusCode with the payload, which the SDK decodes")
    func errorStatus() async throws {
        let client = StubNetworkClient()
        client.stub(.get, "/todos/1", statusCode: 403, body: #"{"code":"forbidden","message":"not yours"}"#)
        client.stub(.get, "/todos/2", statusCode: 404)
        let service = TodoService(client: client)
        await #expect(throws: TodoService.Failure.server(TodoAPIError(code: "forbidden", message: "not yours"))) {
            try await service.todo(id: 1)
        }
        #expect(try await service.todo(id: 2) == nil)
    }

    @Test("A request no stub matches fails with an error naming it and listing the stubs")
    func noMatch() async throws {
        let client = StubNetworkClient()
        client.stub(.get, "/todos", returning: [Todo]())
        do {
            _ = try await client.run(TodoRequests.todo(id: 3))
            Issue.record("expected an error")
        } catch let error as StubNetworkClientError {
            #expect(error == .noMatchingStub(request: "GET /todos/3", stubs: ["GET /todos"]))
            #expect(
                error.description == "StubNetworkClient: no stub matches GET /todos/3; the stubs are: GET /todos.")
        }
        #expect(client.requests.count == 1)
    }

    @Test("A value of the wrong type fails with typeMismatch naming both types")
    func typeMismatch() async throws {
        let client = StubNetworkClient()
        client.stub(.get, "/todos/1", returning: "not a todo")
        await #expect(throws: StubNetworkClientError.self) { try await client.run(TodoRequests.todo(id: 1)) }
        do {
            _ = try await client.run(TodoRequests.todo(id: 1))
        } catch {
            #expect("\(error)".contains("returned a Swift.String"))
            #expect("\(error)".contains("CourierTests.Todo"))
        }
    }

    @Test("Stubbed errors are thrown as is; the latest matching stub wins; closures match anything")
    func errorsOrderAndClosures() async throws {
        let client = StubNetworkClient()
        client.stub(.get, "/todos/1", returning: Todo(id: 1, title: "old", done: false))
        client.stub(.get, "/todos/1", returning: Todo(id: 1, title: "new", done: false))
        #expect(try await client.run(TodoRequests.todo(id: 1)).value.title == "new")

        client.stub(.delete, "/todos/1", throwing: NetworkClientError.transportFailed(URLError(.timedOut)))
        await #expect(throws: NetworkClientError.self) { try await client.run(TodoRequests.delete(id: 1)) }

        client.stub(
            label: "any page > 1", where: { ($0.query("page").flatMap(Int.init) ?? 0) > 1 },
            answer: { _ in .value([Todo](), statusCode: 200) })
        #expect(try await client.run(TodoRequests.list(page: 5)).value.isEmpty)

        client.reset()
        #expect(client.requests.isEmpty)
        await #expect(throws: StubNetworkClientError.self) { try await client.run(TodoRequests.delete(id: 1)) }
    }

    @Test("A request's acceptable statuses and decoder apply to canned bodies")
    func requestOptions() async throws {
        let client = StubNetworkClient()
        client.stub(.get, "/cached", statusCode: 304)
        let cached = NetworkRequest<VoidRequest, VoidResponse>(
            path: "/cached", method: .get, acceptableStatusCodes: Set(200..<300).union([304]))
        #expect(try await client.run(cached).statusCode == 304)

        client.stub(.get, "/snake", body: #"{"due_date":"soon"}"#)
        struct Due: Decodable, Sendable { let dueDate: String }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let due = NetworkRequest<VoidRequest, Due>(path: "/snake", method: .get, decoder: decoder)
        #expect(try await client.run(due).value.dueDate == "soon")
    }

    @Test("It composes with the decorators: calls through sequential() reach it in order")
    func decorators() async throws {
        let client = StubNetworkClient()
        client.stub(.get, "/todos", returning: [Todo(id: 1, title: "Milk", done: false)])
        let sequential = client.sequential()
        for page in 1...3 { _ = try await sequential.run(TodoRequests.list(page: page)) }
        #expect(client.requests.map { $0.query("page") } == ["1", "2", "3"])
    }

    @Test("Transfers: the form or file a request uploads is recorded as given; a download is stubbed with a value")
    func transfers() async throws {
        let client = StubNetworkClient()
        client.stub(.post, "/photos", statusCode: 201)
        let downloaded = DownloadedFile(url: URL(fileURLWithPath: "/tmp/report.pdf"), byteCount: 42)
        client.stub(.get, "/report", returning: downloaded)

        var form = MultipartFormData()
        form.append("Sunset", name: "caption")
        _ = try await client.run(
            NetworkRequest<MultipartFormData, VoidResponse>(path: "/photos", method: .post, body: form))
        let report = try await client.run(NetworkRequest<VoidRequest, DownloadedFile>(path: "/report", method: .get))

        #expect(client.requests.first?.bodyValue is MultipartFormData)
        #expect(report.value == downloaded)
    }
}

/// Pages over the stub, as the *Building an SDK* articles promise: path matchers match every page.
@Suite("StubNetworkClient pages")
struct StubNetworkClientPagesTests {
    private static func page(_ rows: [Int], next: String? = nil, link: String? = nil) -> StubNetworkClient.Answer {
        let body = try! JSONEncoder().encode(RowsPage(rows: rows, next: next))
        return .body(body, statusCode: 200, headers: link.map { ["Link": "<\($0)>; rel=\"next\""] } ?? [:])
    }

    @Test("Pages by a cursor in the query: each page is its own request, matched by path")
    func cursorPages() async throws {
        let stub = StubNetworkClient()
        stub.stub(.get, "/rows", body: #"{"rows":[3]}"#)
        stub.stub(
            label: "first", where: { $0.path == "/rows" && $0.query("cursor") == nil },
            answer: { _ in Self.page([1], next: "c2") })
        stub.stub(
            label: "second", where: { $0.path == "/rows" && $0.query("cursor") == "c2" },
            answer: { _ in Self.page([2], next: "c3") })
        let pages = stub.pages(of: NetworkRequest<VoidRequest, RowsPage>(path: "/rows", method: .get)) { page in
            page.value.next.map {
                NetworkRequest(path: "/rows", method: .get, queryItems: [URLQueryItem(name: "cursor", value: $0)])
            }
        }
        #expect(try await allRows(pages) == [1, 2, 3])
        #expect(stub.requests.map(\.description) == ["GET /rows", "GET /rows?cursor=c2", "GET /rows?cursor=c3"])
    }

    @Test("Pages by Link, relative or absolute: the next request has the link's path and query; a path stub serves it")
    func linkPages() async throws {
        let stub = StubNetworkClient()
        stub.stub(.get, "/items", body: #"{"rows":[3]}"#)
        stub.stub(
            label: "first", where: { $0.path == "/items" && $0.query("page") == nil },
            answer: { _ in Self.page([1], link: "/items?page=2") })
        stub.stub(
            label: "second", where: { $0.path == "/items" && $0.query("page") == "2" },
            answer: { _ in Self.page([2], link: "https://stub.invalid/items?page=3") })
        let pages = stub.pages(of: NetworkRequest<VoidRequest, RowsPage>(path: "/items", method: .get))
        #expect(try await allRows(pages) == [1, 2, 3])
        #expect(stub.requests.map(\.description) == ["GET /items", "GET /items?page=2", "GET /items?page=3"])
        #expect(stub.requests.allSatisfy { $0.baseURL == nil })
        #expect(stub.requests(.get, "/items").count == 3)
    }

    @Test("Under a base URL with a path, a link's path is read relative to it, as a request's path is written")
    func basePath() async throws {
        let stub = StubNetworkClient(baseURL: URL(string: "https://stub.invalid/api/v1")!)
        stub.stub(.get, "/items", body: #"{"rows":[2]}"#)
        stub.stub(
            label: "first", where: { $0.query("page") == nil },
            answer: { _ in Self.page([1], link: "/api/v1/items?page=2") })
        let pages = stub.pages(of: NetworkRequest<VoidRequest, RowsPage>(path: "/items", method: .get))
        #expect(try await allRows(pages) == [1, 2])
        #expect(stub.requests.map(\.description) == ["GET /items", "GET /items?page=2"])
    }

    @Test("A link to another origin: refused after its page by default; followed when allowed, without secrets")
    func otherOrigin() async throws {
        let stub = StubNetworkClient()
        stub.stub(
            label: "first", where: { $0.baseURL == nil },
            answer: { _ in Self.page([1], link: "https://other.invalid:8443/items?page=2") })
        stub.stub(
            label: "other", where: { $0.baseURL != nil && $0.path == "/items" }, answer: { _ in Self.page([2]) })
        let first = NetworkRequest<VoidRequest, RowsPage>(
            path: "/items", method: .get, additionalHeaders: ["Authorization": "Bearer k", "X-Trace": "t"])
        var rows: [Int] = []
        await #expect(throws: PaginationError.linkToOtherOrigin(origin: "https://other.invalid:8443")) {
            for try await page in stub.pages(of: first) { rows += page.value.rows }
        }
        #expect(rows == [1])

        #expect(try await allRows(stub.pages(of: first, allowingOtherOrigins: true)) == [1, 2])
        let sent = try #require(stub.requests.last)
        #expect(sent.description == "GET /items?page=2")
        #expect(sent.baseURL == URL(string: "https://other.invalid:8443"))
        #expect(sent.header("Authorization") == nil)
        #expect(sent.header("X-Trace") == "t")
    }
}
