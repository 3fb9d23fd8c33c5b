import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The delegate of every session Courier creates: it receives each response body itself, so that it can enforce the
/// size limit while the bytes arrive, and it decides every redirect.
///
/// A task created without a completion handler sends its data to this delegate and nowhere else (corelibs keeps no
/// copy of it), so a body costs its size once in memory, reserved from `Content-Length`.
final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    let redirects: RedirectGuard
    /// The transfers in flight, by task identifier (unique within the one session this delegate serves).
    private let transfers = Locked([Int: DataTransfer]())

    init(sensitiveHeaders: Set<String>) {
        self.redirects = RedirectGuard(sensitiveHeaders: sensitiveHeaders)
    }

    /// Sends `request` on `session` (whose delegate is `self`) and collects the response.
    func send(_ request: URLRequest, on session: URLSession, limits: TransferLimits) async throws -> TransferResult {
        let task = session.dataTask(with: request)
        let transfer = DataTransfer(task: task, request: request, limits: limits)
        transfers.withLock { $0[task.taskIdentifier] = transfer }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                transfer.start(continuation)
            }
        } onCancel: {
            transfer.interrupt(.cancelled)
        }
    }

    private func transfer(_ task: URLSessionTask) -> DataTransfer? {
        transfers.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let accepted = transfer(dataTask)?.received(response) ?? true
        completionHandler(accepted ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        transfer(dataTask)?.received(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let transfer = transfers.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        transfer?.complete(error: error)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        let transfer = transfer(task)
        let sent = transfer?.request ?? task.originalRequest
        switch redirects.decide(request, redirecting: sent, response: response) {
        case .follow(let next):
            completionHandler(next)
        case .followAnew(let next):
            // corelibs would drop the body; end this task with the 3xx and send `next` as a new task.
            transfer?.redirected(to: next)
            completionHandler(nil)
        case .refuse(let reason):
            transfer?.refuseRedirect(reason)
            completionHandler(nil)
        }
    }
}

/// The limits one transfer runs under.
struct TransferLimits: Sendable {
    /// The most body bytes, after decompression, to accept.
    var maximumResponseSize: Int
    /// When the whole transfer must have ended, if ever.
    var deadline: DispatchTime?
}

/// How a transfer ended.
enum TransferResult: Sendable {
    /// The final response and its body.
    case response(Data, URLResponse)
    /// A redirect that Courier follows itself by sending this request (a 307/308 with a body, on Linux).
    case redirect(URLRequest)
}

/// One data task driven by ``SessionDelegate``: its body so far, and whatever ended it early.
final class DataTransfer: Expirable, Sendable {
    /// Why Courier ended a transfer before the server did.
    enum Interruption: Sendable {
        case cancelled
        case tooLarge
        case timedOut
    }

    private struct State: Sendable {
        var continuation: CheckedContinuation<TransferResult, any Error>?
        var interruption: Interruption?
        var body = Data()
        /// The declared body length (`-1` if unknown); read when the first piece arrives.
        var expectedLength: Int64 = -1
        var response: URLResponse?
        var followUp: URLRequest?
        var refusal: String?
        var isComplete = false
    }

    let task: URLSessionDataTask
    /// The request this task sends: a 307/308 redirect resends its body.
    let request: URLRequest
    private let limits: TransferLimits
    private let state = Locked(State())

    init(task: URLSessionDataTask, request: URLRequest, limits: TransferLimits) {
        self.task = task
        self.request = request
        self.limits = limits
    }

    /// Resumes the task; `continuation` receives the outcome once the delegate reports completion.
    func start(_ continuation: CheckedContinuation<TransferResult, any Error>) {
        let interruption = state.withLock { state in
            if state.interruption == nil { state.continuation = continuation }
            return state.interruption
        }
        if let interruption {
            // Cancelled before it started. The task must still run to its end for the session to let it go.
            continuation.resume(throwing: Self.error(for: interruption, limit: limits.maximumResponseSize))
            task.resume()
            cancelTask()
            return
        }
        if let deadline = limits.deadline { DeadlineMonitor.shared.add(self, deadline: deadline) }
        task.resume()
    }

    /// The response head arrived; `false` if its declared length is already over the limit.
    func received(_ response: URLResponse) -> Bool {
        let expected = response.expectedContentLength
        if expected > limits.maximumResponseSize {
            interrupt(.tooLarge)
            return false
        }
        state.withLock { state in
            state.response = response
            state.expectedLength = expected
        }
        return true
    }

    /// A piece of the body arrived (decompressed, if the server compressed it).
    func received(_ data: Data) {
        let overLimit = state.withLock { state -> Bool in
            guard state.interruption == nil else { return false }
            if state.body.count + data.count > limits.maximumResponseSize { return true }
            if state.body.isEmpty {
                // The first piece. When it is the whole body (a small response), keep it rather than copy it;
                // otherwise reserve the declared length once, so that the body is never copied as it grows.
                if state.expectedLength <= Int64(data.count) {
                    state.body = data
                    return false
                }
                state.body.reserveCapacity(Int(state.expectedLength))
            }
            state.body.append(data)
            return false
        }
        if overLimit { interrupt(.tooLarge) }
    }

    func redirected(to request: URLRequest) {
        state.withLock { $0.followUp = request }
    }

    func refuseRedirect(_ reason: String) {
        state.withLock { $0.refusal = reason }
    }

    func expire() {
        interrupt(.timedOut)
    }

    /// Ends the transfer early for `reason`, unless it already ended or was interrupted: the caller is resumed at
    /// once, and the task is cancelled.
    ///
    /// The caller does not wait for the task to report its end. corelibs processes a cancellation only between two
    /// reads from the socket, and a few megabytes of gzip inflate to gigabytes within one read: the rest is dropped
    /// as it arrives, and the task ends in the background.
    func interrupt(_ reason: Interruption) {
        let continuation = state.withLock { state -> CheckedContinuation<TransferResult, any Error>?? in
            guard state.interruption == nil && !state.isComplete else { return nil }
            state.interruption = reason
            state.body = Data()
            defer { state.continuation = nil }
            return .some(state.continuation)
        }
        guard let continuation else { return }  // Already ended or interrupted.
        guard let continuation else { return }  // Not started: `start` cancels the task.
        if limits.deadline != nil { DeadlineMonitor.shared.remove(self) }
        continuation.resume(throwing: Self.error(for: reason, limit: limits.maximumResponseSize))
        cancelTask()
    }

    /// `URLSessionTask.cancel()` waits for the session's work queue, so it never runs on the caller's thread, where a
    /// cancellation handler may hold the Swift task's status lock.
    private func cancelTask() {
        DispatchQueue.global().async { [task] in task.cancel() }
    }

    /// The delegate reported the end of the task: resume the caller with the outcome.
    func complete(error: (any Error)?) {
        if limits.deadline != nil { DeadlineMonitor.shared.remove(self) }
        let (continuation, outcome) = state.withLock { state -> (CheckedContinuation<TransferResult, any Error>?, Result<TransferResult, any Error>) in
            state.isComplete = true
            defer { state.continuation = nil }
            return (state.continuation, Self.outcome(of: &state, error: error, limit: limits.maximumResponseSize))
        }
        continuation?.resume(with: outcome)
    }

    private static func error(for interruption: Interruption, limit: Int) -> any Error {
        switch interruption {
        case .cancelled: return CancellationError()
        case .tooLarge: return NetworkClientError.responseTooLarge(limit: limit)
        case .timedOut:
            let reason = "the request took longer than its total timeout (totalTimeout or timeoutIntervalForResource)"
            return URLError(.timedOut, userInfo: [NSLocalizedDescriptionKey: reason])
        }
    }

    private static func outcome(
        of state: inout State, error: (any Error)?, limit: Int
    ) -> Result<TransferResult, any Error> {
        if let interruption = state.interruption { return .failure(Self.error(for: interruption, limit: limit)) }
        if let error { return .failure(error) }
        if let refusal = state.refusal { return .failure(NetworkClientError.redirectRefused(reason: refusal)) }
        if let followUp = state.followUp { return .success(.redirect(followUp)) }
        guard let response = state.response else { return .failure(URLError(.badServerResponse)) }
        let body = state.body
        state.body = Data()
        return .success(.response(body, response))
    }
}
