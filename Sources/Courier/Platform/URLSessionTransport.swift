import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Courier's default transport: a `URLSession` that Courier created and drives with its ``SessionDelegate``, so that
/// every piece of the body reaches the ``HTTPExchange`` as it arrives and no redirect is followed behind Courier's back.
///
/// It owns the session: when the last holder (the configuration, or a transport that wraps this one) lets it go, the
/// requests in flight finish and the session is invalidated, which breaks its strong reference to the delegate.
final class DrivenSessionTransport: HTTPTransport {
    let session: URLSession
    let delegate: SessionDelegate
    private let sessionAdditions: SessionAdditions

    init(session: URLSession, delegate: SessionDelegate) {
        self.session = session
        self.delegate = delegate
        self.sessionAdditions = SessionAdditions(session.configuration)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    func send(_ exchange: HTTPExchange) async throws {
        try await delegate.send(exchange, on: session)
    }

    /// The session's header fields, cookies and stored credentials (see ``SessionAdditions``).
    func additions(to request: URLRequest) -> RequestAdditions {
        sessionAdditions.additions(to: request)
    }
}

/// A caller's session that Courier cannot drive, because the session's own delegate receives the callbacks: each
/// exchange is a task with a completion handler, whose body reaches the exchange once it is complete (a download's
/// from the temporary file, in pieces). On Apple platforms a per-task delegate keeps redirects for Courier to decide;
/// on Linux corelibs ignores per-task delegates and follows them itself.
struct CallerSessionTransport: HTTPTransport {
    let session: URLSession
    private let sessionAdditions: SessionAdditions

    init(session: URLSession) {
        self.session = session
        self.sessionAdditions = SessionAdditions(session.configuration)
    }

    /// The session's header fields, cookies and stored credentials (see ``SessionAdditions``).
    func additions(to request: URLRequest) -> RequestAdditions {
        sessionAdditions.additions(to: request)
    }

    func send(_ exchange: HTTPExchange) async throws {
        // A completion handler gets the body whole, at the end: a stream would wait for a feed that never ends.
        if exchange.isStream { throw Self.noStreams }
        let call = CompletionCall(exchange: exchange)
        let session = session
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            startingTasks {
                Self.start(exchange, on: session, call: call, continuation: continuation)
            }
        }
        if let (head, file) = call.takeDownload() { try Self.feed(file, head: head, to: exchange) }
    }

    /// Why a stream cannot be read through a caller's session.
    static let noStreams = NetworkClientError.invalidRequest(
        reason:
            "a streamed response (ServerSentEvents, JSONLines, ByteStream) is read through a session Courier drives: "
            + "use NetworkConfiguration(baseURL:) or NetworkConfiguration(sessionConfiguration:baseURL:); a session "
            + "passed to NetworkConfiguration(session:) hands Courier each body whole")

    /// Creates and resumes the task of `exchange` on `session`, reporting to `call`.
    private static func start(
        _ exchange: HTTPExchange, on session: URLSession, call: CompletionCall,
        continuation: CheckedContinuation<Void, any Error>
    ) {
        let stream: (stream: InputStream, length: Int64)?
        do {
            stream = try uploadStream(for: exchange)
        } catch {
            TransportCall.didNotStart()
            return continuation.resume(throwing: error)
        }
        let task: URLSessionTask
        if let stream {
            let request = streamingRequest(exchange.request, body: stream.stream, length: stream.length)
            task = session.dataTask(with: request, completionHandler: call.received)
        } else if case .file(let url, _) = exchange.body {
            task = session.uploadTask(with: exchange.request, fromFile: url, completionHandler: call.received)
        } else if exchange.prefersFileBody {
            task = session.downloadTask(with: exchange.request, completionHandler: call.downloaded)
        } else {
            task = session.dataTask(with: exchange.request, completionHandler: call.received)
        }
        #if !canImport(FoundationNetworking)
        task.delegate = KeepRedirects.shared
        #endif
        call.start(task, continuation: continuation)
    }

    /// Hands a download task's body to `exchange` in pieces, from the file it was moved to, and deletes the file.
    /// Done here, on the caller's task, and not in URLSession's completion handler: that runs on the session's delegate
    /// queue (of `URLSession.shared`, say), which a large copy would hold up for every other task.
    private static func feed(_ file: URL, head: HTTPURLResponse, to exchange: HTTPExchange) throws {
        defer { try? FileManager.default.removeItem(at: file) }
        guard exchange.receive(head) else { return }
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        while !exchange.isStopped, let piece = try handle.read(upToCount: 1 << 20), !piece.isEmpty {
            guard exchange.receive(piece) else { return }
        }
    }

    /// On Linux, a file body is sent from Courier's stream (see `SessionDelegate.makeTask(on:for:)`); Apple platforms upload the file.
    private static func uploadStream(for exchange: HTTPExchange) throws -> (stream: InputStream, length: Int64)? {
        #if canImport(FoundationNetworking)
        guard case .file(_, let byteCount) = exchange.body else { return nil }
        return (try exchange.makeBodyStream(), byteCount)
        #else
        return nil
        #endif
    }
}

#if !canImport(FoundationNetworking)
/// The per-task delegate of a caller's session on Apple platforms: leaves every redirect to Courier (see
/// ``Redirects``); the task ends with the 3xx.
private final class KeepRedirects: NSObject, URLSessionTaskDelegate, Sendable {
    static let shared = KeepRedirects()

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
#endif

/// One exchange on a task: resumes its caller once, when the task completes or when Courier stops the exchange (the
/// caller does not wait for the task to wind down: corelibs processes a cancel only between two reads from the
/// socket), and cancels the task off the caller's thread.
final class TransportCall: Sendable {
    let exchange: HTTPExchange
    /// The request body's length when the task cannot report it (a stream body on Linux).
    let uploadLength: Int64?

    private struct State: Sendable {
        var continuation: CheckedContinuation<Void, any Error>?
        var task: URLSessionTask?
        var isDone = false
        var taskCompleted = false
        var cancelRequested = false
    }

    private let state = Locked(State())

    /// The `URLSession` tasks Courier is starting or has started and that have not completed, in the whole process
    /// (``willStart()``, and each task's completion).
    private static let running = Locked(0)

    /// A task is about to be created and resumed: counted from now, before corelibs' work queue takes it, so that a
    /// stream holding that queue lets go at once (``runsAlone``). Balanced by the task's completion, or by
    /// ``didNotStart()``.
    static func willStart() {
        running.withLock { $0 += 1 }
        StreamChannel.wakeHolders()
    }

    /// The task announced by ``willStart()`` could not be created.
    static func didNotStart() {
        running.withLock { $0 -= 1 }
    }

    /// Whether at most one of Courier's `URLSession` tasks runs in the process: the one a stream's reader may then
    /// hold back (see ``StreamChannel``). On Linux every session's callbacks run on one thread that corelibs shares;
    /// holding it for one stream would hold every other transfer too.
    static var runsAlone: Bool {
        running.withLock { $0 <= 1 }
    }

    init(exchange: HTTPExchange, uploadLength: Int64? = nil) {
        self.exchange = exchange
        self.uploadLength = uploadLength
    }

    /// Resumes `task`, keeping the caller's `continuation` until the exchange ends, then lets a stop of the exchange
    /// cancel it. A task is resumed even when the exchange already stopped: corelibs lets a session go only once each
    /// of its tasks ran to its end.
    func start(_ task: URLSessionTask, continuation: CheckedContinuation<Void, any Error>) {
        state.withLock { state in
            state.task = task
            state.continuation = continuation
        }
        task.resume()
        exchange.onStop(self)
    }

    /// The task reported its end (with `error` if it failed): resumes the caller unless a stop already did. Returns
    /// whether this call resumed it.
    @discardableResult
    func complete(_ error: (any Error)?) -> Bool {
        resume(error, taskCompleted: true)
    }

    /// Resumes the caller, once: with `error`, or normally. Returns whether this call resumed it.
    @discardableResult
    func finish(_ error: (any Error)?) -> Bool {
        resume(error, taskCompleted: false)
    }

    private func resume(_ error: (any Error)?, taskCompleted: Bool) -> Bool {
        let (continuation, ended) = state.withLock { state -> (CheckedContinuation<Void, any Error>?, Bool) in
            let ended = taskCompleted && !state.taskCompleted && state.task != nil
            if taskCompleted { state.taskCompleted = true }
            guard !state.isDone else { return (nil, ended) }
            state.isDone = true
            defer { state.continuation = nil }
            return (state.continuation, ended)
        }
        if ended { Self.running.withLock { $0 -= 1 } }
        guard let continuation else { return false }
        if let error { continuation.resume(throwing: error) } else { continuation.resume() }
        return true
    }

    /// `URLSessionTask.cancel()` waits for the session's work queue, so it never runs on the caller's thread, where a
    /// cancellation handler may hold the Swift task's status lock, nor on the work queue (see ``DrivenSession``).
    func cancelTask() {
        // Once per task: a second cancel can reach corelibs after the first one took the task out of its registry,
        // which traps the process (`TaskRegistry`: "a task that in not in the registry"). Late pieces after a stop
        // each ask for a cancel.
        let task = state.withLock { state -> URLSessionTask? in
            guard !state.cancelRequested, !state.taskCompleted, let task = state.task else { return nil }
            state.cancelRequested = true
            return task
        }
        guard let task else { return }
        DispatchQueue.global().async { [self] in
            // Best effort: a task can complete between this check and the call; corelibs ignores that cancel.
            guard !state.withLock({ $0.taskCompleted }) else { return }
            task.cancel()
        }
    }

}

extension TransportCall: ExchangeStopObserver {
    /// Courier stopped the exchange: the caller goes on at once, and the task is cancelled.
    func exchangeStopped() {
        finish(nil)
        cancelTask()
    }
}

/// A ``TransportCall`` whose task has a completion handler: the response is handed to the exchange when it is
/// complete.
private final class CompletionCall: Sendable {
    let call: TransportCall
    /// A finished download task's head and the file its body was moved to.
    private let download = Locked<(HTTPURLResponse, URL)?>(nil)

    init(exchange: HTTPExchange) {
        call = TransportCall(exchange: exchange)
    }

    func start(_ task: URLSessionTask, continuation: CheckedContinuation<Void, any Error>) {
        call.start(task, continuation: continuation)
    }

    var received: @Sendable (Data?, URLResponse?, (any Error)?) -> Void {
        { [call] data, response, error in
            guard let head = Self.head(of: response, error, completing: call) else { return }
            if call.exchange.receive(head), let data, !data.isEmpty { _ = call.exchange.receive(data) }
            call.complete(nil)
        }
    }

    /// A download task's end: its temporary file is renamed (in its folder: no copy) before URLSession deletes it, for
    /// ``CallerSessionTransport`` to hand over off the delegate queue.
    var downloaded: @Sendable (URL?, URLResponse?, (any Error)?) -> Void {
        { [call, download] location, response, error in
            guard let head = Self.head(of: response, error, completing: call) else { return }
            guard let location else {
                _ = call.complete(URLError(.badServerResponse))
                return
            }
            let kept = location.deletingLastPathComponent().appendingPathComponent("courier-\(UUID().uuidString)")
            do {
                try FileManager.default.moveItem(at: location, to: kept)
            } catch {
                _ = call.complete(error)
                return
            }
            download.withLock { $0 = (head, kept) }
            if !call.complete(nil) {
                // The caller already went on (stopped): nobody hands this file over.
                download.withLock { $0 = nil }
                try? FileManager.default.removeItem(at: kept)
            }
        }
    }

    /// The HTTP head of a task that ended with `response` and `error`, or `nil` once `call` is completed with the
    /// failure: the error, or ``NetworkClientError/invalidResponse(_:)`` for a response that is not HTTP.
    private static func head(
        of response: URLResponse?, _ error: (any Error)?, completing call: TransportCall
    ) -> HTTPURLResponse? {
        if let error {
            call.complete(error)
            return nil
        }
        guard let head = response as? HTTPURLResponse else {
            call.complete(response.map { NetworkClientError.invalidResponse($0) } ?? URLError(.badServerResponse))
            return nil
        }
        return head
    }

    /// The head and the file of a finished download task, once.
    func takeDownload() -> (HTTPURLResponse, URL)? {
        download.withLock { download in
            defer { download = nil }
            return download
        }
    }
}
