import Courier
import Foundation

/// The example's steps: each drives the SDK, prints what happened, and says whether Courier behaved.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct Example {
    let client: any NetworkClientProtocol
    private(set) var failures: [String] = []

    /// Runs every step in order; returns whether all of them behaved.
    mutating func runAll() async -> Bool {
        await step(1, "A typed GET: the JSON body decoded into a model", typedGET)
        await step(2, "A form POST: the server reads back exactly what was sent", formPOST)
        await step(3, "A server error: the status and the server's error body, decoded", serverError)
        await step(4, "A burst of 20 identical GETs through deduplicated()", deduplicatedBurst)
        await step(5, "5 writes through sequential(): one at a time, in call order", sequentialQueue)
        await step(6, "A cancelled call: the task is cancelled, the transfer with it", cancelledCall)
        print()
        if failures.isEmpty {
            print("All 6 steps behaved.")
        } else {
            print("\(failures.count) step(s) did not behave: \(failures.joined(separator: ", ")).")
        }
        return failures.isEmpty
    }

    private mutating func step(_ number: Int, _ title: String, _ body: () async throws -> Void) async {
        print("\n\(number). \(title)")
        do {
            try await body()
            print("   ✓ ok")
        } catch {
            print("   ✗ FAILED: \(error)")
            failures.append("step \(number)")
        }
    }

    private func typedGET() async throws {
        let response = try await client.run(TodoAPI.todo(id: 1))
        print("   GET /todos/1 → \(response.statusCode), \(response.data.count) bytes")
        print("   value: \(response.value)")
        try check(response.value.id == 1, "expected to-do 1")
    }

    private func formPOST() async throws {
        let title = "Tea & cake = 100% + 😀"
        let response = try await client.run(TodoAPI.create(title: title))
        print("   POST /todos, form title=\(String(reflecting: title)) → \(response.statusCode)")
        print("   value: \(response.value)")
        try check(response.statusCode == 201, "expected 201 Created")
        try check(response.value.title == title, "the server read back another title")
    }

    private func serverError() async throws {
        do {
            let todo = try await client.run(TodoAPI.todo(id: 42)).value
            throw ExampleFailure("expected a 404, got \(todo)")
        } catch let error as NetworkClientError {
            print("   GET /todos/42 threw: \(error)")
            let payload = error.errorBody(APIError.self)
            print("   error.statusCode: \(error.statusCode.map(String.init) ?? "nil")")
            print("   error.errorBody(APIError.self): \(payload.map { "\($0)" } ?? "nil")")
            try check(error.statusCode == 404, "expected 404")
            try check(payload?.code == "not_found", "expected the not_found payload")
        }
    }

    private func deduplicatedBurst() async throws {
        let before = try await client.run(TodoAPI.stats()).value.summaryRequests
        let deduplicated = client.deduplicated()
        let summaries = try await withThrowingTaskGroup(of: Summary.self) { group in
            for _ in 0..<20 { group.addTask { try await deduplicated.run(TodoAPI.summary()).value } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let reached = try await client.run(TodoAPI.stats()).value.summaryRequests - before
        print("   20 callers got \(Set(summaries.map { "\($0)" }).joined()) each")
        print("   requests that reached the server: \(reached)")
        try check(summaries.count == 20 && Set(summaries.map { "\($0)" }).count == 1, "every caller gets the value")
        try check(reached == 1, "expected exactly 1 request to reach the server")
    }

    private func sequentialQueue() async throws {
        _ = try await client.run(TodoAPI.clearJournal())
        let queue = client.sequential()
        let finished = Counter()
        var calls: [Task<Void, any Error>] = []
        for sequence in 1...5 {
            calls.append(
                Task {
                    defer { finished.increment() }
                    _ = try await queue.run(TodoAPI.write(sequence))
                })
            // Each call runs in its own task; wait until this one is in the queue, so calls are made in this order.
            while queue.pendingCount + finished.value < sequence { await Task.yield() }
        }
        for call in calls { try await call.value }
        let journal = try await client.run(TodoAPI.journal()).value
        print("   called in order 1...5; the server received \(journal.entries)")
        print("   writes in progress at once, at most: \(journal.maxConcurrentWrites)")
        try check(journal.entries == [1, 2, 3, 4, 5], "expected the call order")
        try check(journal.maxConcurrentWrites == 1, "expected one write at a time")
    }

    private func cancelledCall() async throws {
        let clock = ContinuousClock()
        let call = Task { try await client.run(TodoAPI.hang()) }
        try await Task.sleep(for: .milliseconds(200))
        let start = clock.now
        call.cancel()
        let result = await call.result
        let elapsed = clock.now - start
        switch result {
        case .failure(let error as CancellationError):
            print("   GET /hang (the server never answers), cancelled after 200 ms")
            print("   threw \(type(of: error)) \(elapsed.formatted(.units(allowed: [.milliseconds]))) after cancel()")
            try check(elapsed < .seconds(2), "the call should end at once")
        case .failure(let error):
            throw ExampleFailure("expected CancellationError, got \(error)")
        case .success:
            throw ExampleFailure("expected CancellationError, the call succeeded")
        }
    }

    private func check(_ condition: Bool, _ message: String) throws {
        if !condition { throw ExampleFailure(message) }
    }
}

struct ExampleFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// A thread-safe counter.
final class Counter: @unchecked Sendable {  // `count` is guarded by `lock`.
    private let lock = NSLock()
    private var count = 0

    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }

    func increment() {
        lock.lock()
        count += 1
        lock.unlock()
    }
}
