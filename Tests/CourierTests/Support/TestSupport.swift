import Courier
import Foundation
import LoopbackHTTPServer
import Testing

/// A small JSON model the tests' server answers with.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct Post: Codable, Sendable, Equatable {
    let id: Int
    let title: String
}

/// The error payload a server sends with a 4xx, decoded by callers from `unacceptableStatusCode`'s data.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct APIErrorPayload: Codable, Sendable, Equatable {
    let code: String
    let message: String
}

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
extension LoopbackServer {
    /// A configuration whose session Courier owns, pointed at this server.
    ///
    /// The session's idle timeout is 60 s: tests hold requests at the server (a gate, a latch) for as long as their
    /// setup takes, which a loaded machine stretched past 10 s; a test about a timeout sets its own.
    /// - Parameter connectionsPerHost: The session's `httpMaximumConnectionsPerHost`; `nil` keeps URLSession's 6.
    func configuration(
        path: String = "", sensitiveHeaders: Set<String> = [], connectionsPerHost: Int? = nil
    ) -> NetworkConfiguration {
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.timeoutIntervalForRequest = 60
        if let connectionsPerHost { sessionConfiguration.httpMaximumConnectionsPerHost = connectionsPerHost }
        return NetworkConfiguration(
            sessionConfiguration: sessionConfiguration, baseURL: baseURL.appendingPathComponent(path),
            sensitiveHeaders: sensitiveHeaders)
    }

    /// A client for this server.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func client() -> NetworkClient {
        NetworkClient(configuration: configuration())
    }
}

/// A server that echoes every request back as JSON.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func echoServer(host: String = "127.0.0.1") throws -> LoopbackServer {
    try LoopbackServer(host: host) { _ in .echo() }
}

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
typealias Echo = NetworkRequest<VoidRequest, EchoedRequest>

/// Runs `body` and returns how long it took.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func elapsed(_ body: () async throws -> Void) async rethrows -> Duration {
    let clock = ContinuousClock()
    let start = clock.now
    try await body()
    return clock.now - start
}

/// A server that holds every request until `gate` opens, then answers with `response`.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func gatedServer(_ gate: Gate, answering response: ServerResponse) throws -> LoopbackServer {
    try LoopbackServer { _ in
        gate.wait()
        return response
    }
}

/// A gate that server handlers wait on until a test opens it; waits give up after a timeout so no test hangs.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
final class Gate: @unchecked Sendable {  // `isOpen` is guarded by `condition`.
    private let condition = NSCondition()
    private var isOpen = false

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func open() {
        condition.lock()
        isOpen = true
        condition.broadcast()
        condition.unlock()
    }

    /// Blocks until the gate opens; `false` if it did not within `timeout` (60 s by default: long enough that a test on
    /// a loaded machine opens it first, short enough that no test hangs).
    @discardableResult
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func wait(timeout: TimeInterval = 60) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !isOpen {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }
}

/// A latch that opens once `count` parties have arrived: proves that requests were in progress at the same time.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
final class Latch: @unchecked Sendable {  // `arrived` is guarded by `condition`.
    private let condition = NSCondition()
    private let count: Int
    private var arrived = 0

    init(count: Int) {
        self.count = count
    }

    /// Arrives and waits for the others; `false` if they did not all arrive within `timeout`.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func arriveAndWait(timeout: TimeInterval = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        arrived += 1
        condition.broadcast()
        while arrived < count {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }
}

/// Polls `condition` every millisecond for up to `timeout` (30 s by default: a bound for waiting on an event, generous
/// because the parallel suite on a loaded machine can delay one by seconds, never a measure of speed).
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func eventually(timeout: Duration = .seconds(30), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

/// Runs tests that move hundreds of megabytes one at a time, and never beside the soak test, whose resident-memory
/// figure must be its own: suites run in parallel, and a 200 MB upload in another test would read as a leak.
actor MemoryHeavyTests {
    private static let shared = MemoryHeavyTests()
    private var isBusy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Runs `body` once no other memory-heavy test is running.
    static func exclusively<Result: Sendable>(_ body: () async throws -> Result) async rethrows -> Result {
        await shared.acquire()
        do {
            let result = try await body()
            await shared.release()
            return result
        } catch {
            await shared.release()
            throw error
        }
    }

    private func acquire() async {
        guard isBusy else {
            isBusy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    private func release() {
        if waiters.isEmpty { isBusy = false } else { waiters.removeFirst().resume() }
    }
}

/// The bound for "it ends promptly, it does not hang" checks: 30 s, plain and under the thread sanitizer. A test that
/// uses it must fail another way when the behaviour it checks is broken and something else ends the call instead (a
/// session timeout, say): the bound tells an end from a hang, never a fast end from a slow one. On a loaded machine
/// the parallel suite delayed cancellations past 5 s (5.3 s for a plain GET, in a run that took 8 minutes instead of
/// 2), and under the sanitizer a 1 s timeout ended after 5.6 s.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
let promptly: Duration = .seconds(30)

/// Starts `process`, one launch at a time across every test: corelibs' `Process.run()` crashed (a bad pointer in a
/// `memmove` inside it) when the crash probes, the outbox crash test and the HTTPS tests launched children at once.
/// A test that launches children first awaits ``fewDescriptorsOpen()``.
func startChild(_ process: Process) throws {
    processLaunches.lock()
    defer { processLaunches.unlock() }
    try process.run()
}

/// Waits (without holding a thread) until this process has fewer than 512 descriptors open, or two minutes passed.
///
/// corelibs' `Process.run()` finds the highest open descriptor by reading `/proc/self/fd`, and copies each entry's
/// whole 256-byte `d_name` out of `readdir`'s buffer: with more than about a thousand descriptors open (a soak or
/// fan-out test running beside) the last entry can sit at the end of a page, and the copy reads past it (the test
/// process crashed with "Bad pointer dereference" in `memcpy` under `Process.run()`, its registers holding the names
/// "1353" and "1354"). Below 512 the scan stays inside the buffer. A test that launches a child awaits this first.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func fewDescriptorsOpen() async {
    let deadline = ContinuousClock.now + .seconds(120)
    while openDescriptorCount() >= 512 && ContinuousClock.now < deadline {
        try? await Task.sleep(for: .milliseconds(20))
    }
}

/// How many descriptors this process has open (the entries of `/proc/self/fd`, counted without copying a name);
/// `0` where there is no `/proc`.
func openDescriptorCount() -> Int {
    guard let directory = opendir("/proc/self/fd") else { return 0 }
    defer { closedir(directory) }
    var count = 0
    while readdir(directory) != nil { count += 1 }
    return count
}

private let processLaunches = NSLock()

/// What `body` returns, or `nil` when it has not returned within `timeout` (it is then cancelled).
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func firstWithin<Value: Sendable>(
    _ timeout: Duration = .seconds(20), _ body: @escaping @Sendable () async -> Value?
) async -> Value? {
    await withTaskGroup(of: Value?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// A ``NetworkRequestInterceptor`` that makes `change` to every request: the tests' shorthand for an interceptor of
/// one line.
struct RequestChange: NetworkRequestInterceptor {
    let change: @Sendable (inout URLRequest) -> Void

    init(_ change: @escaping @Sendable (inout URLRequest) -> Void) {
        self.change = change
    }

    func intercept(_ request: URLRequest) async throws -> URLRequest {
        var request = request
        change(&request)
        return request
    }
}

/// A ``NetworkRequestInterceptor`` that may suspend and throw, from a closure.
struct Intercepting: NetworkRequestInterceptor {
    let body: @Sendable (URLRequest) async throws -> URLRequest

    init(_ body: @escaping @Sendable (URLRequest) async throws -> URLRequest) {
        self.body = body
    }

    func intercept(_ request: URLRequest) async throws -> URLRequest {
        try await body(request)
    }
}

/// Hands out `fresh-1`, `fresh-2`, … from an actor: a token provider that suspends.
actor TokenSource {
    private var issued = 0

    func next() -> String {
        issued += 1
        return "fresh-\(issued)"
    }
}

/// A gate answers wait on until the test opens it; a wait is not cancellable, so an answer that waits on a gate the
/// test never opens stands for a server that never answers.
final class AnswerGate: @unchecked Sendable {  // `isOpen` and `waiters` are guarded by `lock`.
    private let lock = NSLock()
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        await withCheckedContinuation { continuation in
            lock.lock()
            let open = isOpen
            if !open { waiters.append(continuation) }
            lock.unlock()
            if open { continuation.resume() }
        }
    }

    func open() {
        lock.lock()
        isOpen = true
        let waiting = waiters
        waiters = []
        lock.unlock()
        for waiter in waiting { waiter.resume() }
    }
}
