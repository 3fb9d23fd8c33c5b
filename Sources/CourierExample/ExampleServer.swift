import Foundation
import LoopbackHTTPServer

/// The example API, served in process by the project's loopback server: nothing to install, no network.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
final class ExampleServer: Sendable {
    private final class State: @unchecked Sendable {  // Every property is guarded by `lock`.
        let lock = NSLock()
        var todos: [Int: Todo] = [1: Todo(id: 1, title: "Buy milk", done: false)]
        var nextID = 2
        var summaryRequests = 0
        var journal: [Int] = []
        var writesInProgress = 0
        var maxConcurrentWrites = 0

        func locked<T>(_ body: () -> T) -> T {
            lock.lock()
            defer { lock.unlock() }
            return body()
        }
    }

    let server: LoopbackServer

    /// Starts the example API on 127.0.0.1 and an ephemeral port.
    /// - Throws: `LoopbackServerError` when the socket cannot be bound.
    init() throws {
        let state = State()
        server = try LoopbackServer { request in Self.handle(request, state) }
    }

    var baseURL: URL { server.baseURL }

    private static func handle(_ request: ServerRequest, _ state: State) -> ServerResponse {
        guard request.header("authorization") == "Bearer example-token" else {
            return .json(
                APIError(code: "unauthorized", message: "Send Authorization: Bearer example-token."), status: 401)
        }
        let todoID = request.path.hasPrefix("/todos/") ? String(request.path.dropFirst("/todos/".count)) : nil
        switch (request.method, request.path) {
        case ("GET", _) where todoID != nil:
            let id = todoID ?? ""
            guard let todo = state.locked({ Int(id).flatMap { state.todos[$0] } }) else {
                return .json(APIError(code: "not_found", message: "There is no to-do \(id)."), status: 404)
            }
            return .json(todo)
        case ("POST", "/todos"):
            guard let title = request.formItems.first(where: { $0.name == "title" })?.value, !title.isEmpty else {
                return .json(APIError(code: "invalid", message: "A to-do needs a title."), status: 422)
            }
            let todo = state.locked {
                let todo = Todo(id: state.nextID, title: title, done: false)
                state.todos[todo.id] = todo
                state.nextID += 1
                return todo
            }
            return .json(todo, status: 201)
        case ("GET", "/summary"):
            let (open, done) = state.locked {
                state.summaryRequests += 1
                return (state.todos.values.count { !$0.done }, state.todos.values.count { $0.done })
            }
            return .json(Summary(open: open, done: done), delay: .milliseconds(300))
        case ("GET", "/stats"):
            return .json(ServerStats(summaryRequests: state.locked { state.summaryRequests }))
        case ("DELETE", "/journal"):
            state.locked {
                state.journal = []
                state.maxConcurrentWrites = 0
            }
            return .respond(status: 204)
        case ("POST", "/journal"):
            guard let entry = try? JSONDecoder().decode(JournalEntry.self, from: request.body) else {
                return .json(APIError(code: "invalid", message: "Send {\"sequence\": n}."), status: 400)
            }
            state.locked {
                state.writesInProgress += 1
                state.maxConcurrentWrites = max(state.maxConcurrentWrites, state.writesInProgress)
            }
            // A write takes a while, so that writes sent concurrently would overlap and could arrive out of order.
            Thread.sleep(forTimeInterval: Double(6 - entry.sequence % 5) * 0.01)
            state.locked {
                state.journal.append(entry.sequence)
                state.writesInProgress -= 1
            }
            return .respond(status: 204)
        case ("GET", "/journal"):
            return .json(
                state.locked { Journal(entries: state.journal, maxConcurrentWrites: state.maxConcurrentWrites) })
        case ("GET", "/hang"):
            return .hang
        default:
            return .json(
                APIError(code: "not_found", message: "No route for \(request.method) \(request.path)."), status: 404)
        }
    }
}
