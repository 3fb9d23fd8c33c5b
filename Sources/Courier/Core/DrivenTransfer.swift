import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What one transfer sends and under which limits.
struct TransferRequest: Sendable {
    var urlRequest: URLRequest
    /// The file the body is streamed from, if any.
    var uploadFile: URL?
    /// Where the response body goes when it is a file (``DownloadedFile``); `nil` keeps it in memory.
    var download: DownloadTarget?
    var limits: TransferLimits
    var onProgress: (@Sendable (TransferProgress) -> Void)?
}

/// The limits one transfer runs under.
struct TransferLimits: Sendable {
    /// The most body bytes, after decompression, to accept in memory.
    var maximumResponseSize: Int
    /// When the whole transfer must have ended, if ever.
    var deadline: DispatchTime?
}

/// The final response of a transfer.
struct ReceivedResponse: Sendable {
    /// The body held in memory: empty for a download that succeeded.
    var data: Data
    var response: URLResponse
    /// The downloaded file, for a download whose status was acceptable.
    var file: DownloadedFile? = nil
}

/// How a transfer ended.
enum TransferResult: Sendable {
    case response(ReceivedResponse)
    /// A redirect that Courier follows itself by sending this request (a 307/308 with a body, on Linux).
    case redirect(URLRequest)
}

/// One task driven by ``SessionDelegate``: its body so far, its progress, and whatever ended it early.
final class DrivenTransfer: Expirable, Sendable {
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
        var file: DownloadedFile? = nil
        var fileError: NetworkClientError?
        var followUp: URLRequest?
        var refusal: String?
        var isComplete = false
        var progress = TransferProgress(
            bytesSent: 0, totalBytesExpectedToSend: nil, bytesReceived: 0, totalBytesExpectedToReceive: nil)
    }

    let task: URLSessionTask
    /// What this task sends: a 307/308 redirect resends its body.
    let request: TransferRequest
    private var limits: TransferLimits { request.limits }
    private let state = Locked(State())

    init(task: URLSessionTask, request: TransferRequest) {
        self.task = task
        self.request = request
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
            state.progress.totalBytesExpectedToReceive = expected >= 0 ? expected : nil
        }
        return true
    }

    /// A piece of the body arrived (decompressed, if the server compressed it).
    func received(_ data: Data) {
        let (overLimit, progress) = state.withLock { state -> (Bool, TransferProgress?) in
            guard state.interruption == nil else { return (false, nil) }
            if state.body.count + data.count > limits.maximumResponseSize { return (true, nil) }
            if state.body.isEmpty && state.expectedLength <= Int64(data.count) {
                // The whole body in one piece (a small response): keep it rather than copy it.
                state.body = data
            } else {
                // Reserve the declared length once, so that the body is never copied as it grows.
                if state.body.isEmpty && state.expectedLength > 0 {
                    state.body.reserveCapacity(Int(state.expectedLength))
                }
                state.body.append(data)
            }
            state.progress.bytesReceived += Int64(data.count)
            return (false, state.progress)
        }
        if overLimit { interrupt(.tooLarge) }
        if let progress { request.onProgress?(progress) }
    }

    /// Body bytes went out: `total` so far, of `expected` (`-1` if unknown).
    func sent(_ total: Int64, of expected: Int64) {
        report { progress in
            progress.bytesSent = max(progress.bytesSent, total)
            progress.totalBytesExpectedToSend = expected >= 0 ? expected : progress.totalBytesExpectedToSend
        }
    }

    /// Download bytes went to the file: `total` so far, of `expected` (`-1` if unknown).
    func wrote(_ total: Int64, of expected: Int64) {
        report { progress in
            progress.bytesReceived = max(progress.bytesReceived, total)
            progress.totalBytesExpectedToReceive = expected >= 0 ? expected : nil
        }
    }

    private func report(_ change: (inout TransferProgress) -> Void) {
        guard let onProgress = request.onProgress else { return }
        let progress = state.withLock { state -> TransferProgress? in
            guard state.interruption == nil else { return nil }
            let before = state.progress
            change(&state.progress)
            return state.progress == before ? nil : state.progress
        }
        if let progress { onProgress(progress) }
    }

    /// A download task finished writing its file at `location`, which disappears after this returns: move it to its
    /// destination, or, for an unacceptable status, keep its first bytes as the error's body and delete it.
    func downloaded(to location: URL, response: URLResponse?) {
        guard let download = request.download, let response else {
            try? FileManager.default.removeItem(at: location)
            return
        }
        let taken = download.take(location, response: response, bodyLimit: limits.maximumResponseSize)
        state.withLock { state in
            state.response = response
            switch taken {
            case .success(let received): (state.body, state.file) = (received.data, received.file)
            case .failure(let error): state.fileError = error
            }
        }
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
            // A file moved into place just before the interruption is not the caller's: they get an error.
            if let file = state.file { try? FileManager.default.removeItem(at: file.url) }
            state.file = nil
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
        let (continuation, outcome, progress) = state.withLock { state in
            state.isComplete = true
            defer { state.continuation = nil }
            let outcome = Self.outcome(of: &state, error: error, limit: limits.maximumResponseSize)
            var progress: TransferProgress?
            if case .success(.response(let received)) = outcome {
                // The last report ends at the total, however much the server had declared.
                let total = received.file?.byteCount ?? Int64(received.data.count)
                state.progress.bytesReceived = total
                state.progress.totalBytesExpectedToReceive = total
                progress = state.progress
            }
            return (state.continuation, outcome, progress)
        }
        guard let continuation else { return }
        if let progress { request.onProgress?(progress) }
        continuation.resume(with: outcome)
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
        if let fileError = state.fileError { return .failure(fileError) }
        if let refusal = state.refusal { return .failure(NetworkClientError.redirectRefused(reason: refusal)) }
        if let followUp = state.followUp { return .success(.redirect(followUp)) }
        guard let response = state.response else { return .failure(URLError(.badServerResponse)) }
        let body = state.body
        state.body = Data()
        return .success(.response(ReceivedResponse(data: body, response: response, file: state.file)))
    }
}
