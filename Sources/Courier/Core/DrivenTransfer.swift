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
    /// Lowercased names of header fields to keep off redirects to another origin besides the session's sensitive
    /// headers: the fields of an ``AuthenticatingClient``'s credential.
    var sensitiveHeaders: Set<String> = []
}

/// Where a download's partial bytes are kept between runs of the same request, and what this run resumes.
struct DownloadResume: Sendable {
    /// The request's key in `store`: see ``PartialDownloads/key(for:destination:)``.
    let key: String
    /// The partial download this run continues (sent as `Range` and `If-Range`); `nil` when it starts afresh.
    let partial: PartialDownload?
    let store: PartialDownloads
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
        /// The download's file could not be written.
        case fileFailed(NetworkClientError)
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
        /// The response ended this task so that `followUp` is sent instead (a stale range): checked before the
        /// cancellation error the task then reports.
        var restarts = false
        var refusal: String?
        /// The file a download's acceptable body is written to.
        var writer: DownloadWriter?
        /// Why a transfer the task completed without error failed all the same (a download shorter than announced).
        var transferError: URLError?
        /// The download's body is not acceptable and its first `maximumResponseSize` bytes are in `body`: the rest is
        /// not read.
        var errorBodyIsFull = false
        var isComplete = false
        var progress = TransferProgress(
            bytesSent: 0, totalBytesExpectedToSend: nil, bytesReceived: 0, totalBytesExpectedToReceive: nil)
    }

    let task: URLSessionTask
    /// What this task sends: a 307/308 redirect resends its body.
    let request: TransferRequest
    /// For a download: where its partial bytes go if it fails, and what it resumes.
    let resume: DownloadResume?
    /// The upload body's length, when the task cannot report it (a stream body on Linux); `nil` otherwise.
    private let uploadLength: Int64?
    private var limits: TransferLimits { request.limits }
    private let state = Locked(State())

    /// Delivers progress to the request's handler, if it has one.
    private let reporter: ProgressReporter?

    /// - Parameter uploadLength: The body's length when the task's own expected count cannot tell it (a stream body).
    init(task: URLSessionTask, request: TransferRequest, resume: DownloadResume? = nil, uploadLength: Int64? = nil) {
        self.task = task
        self.request = request
        self.resume = resume
        self.uploadLength = uploadLength
        self.reporter = request.onProgress.map(ProgressReporter.init)
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
        if let download = request.download { return receivedDownload(response, download) }
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
        if request.download != nil { return receivedDownload(data) }
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
        if let progress { reporter?.report(progress) }
    }

    /// Body bytes went out: `total` so far, of `expected` (`-1` if unknown).
    func sent(_ total: Int64, of expected: Int64) {
        let expected = uploadLength ?? expected
        report { progress in
            progress.bytesSent = max(progress.bytesSent, total)
            progress.totalBytesExpectedToSend = expected >= 0 ? expected : progress.totalBytesExpectedToSend
        }
    }

    private func report(_ change: (inout TransferProgress) -> Void) {
        guard let reporter else { return }
        let progress = state.withLock { state -> TransferProgress? in
            guard state.interruption == nil else { return nil }
            let before = state.progress
            change(&state.progress)
            return state.progress == before ? nil : state.progress
        }
        if let progress { reporter.report(progress) }
    }

    /// The head of a download's response: an acceptable body (or the rest of a resumed one) goes to a file, another
    /// is kept in memory as the error's body; `false` ends the task.
    private func receivedDownload(_ response: URLResponse, _ download: DownloadTarget) -> Bool {
        guard state.withLock({ $0.interruption == nil }) else { return false }
        let http = response as? HTTPURLResponse
        let status = http?.statusCode ?? 0
        let partial = resume?.partial
        var resumed: PartialDownload?
        if let partial, let http, status == 206 || status == 416 {
            guard status == 206, partial.isContinued(by: http) else { return restart(dropping: partial) }
            resumed = partial
        } else if !download.accepts(status) {
            state.withLock { $0.response = response }
            return true
        }
        // An encoded body's declared length is not the length of the file it becomes.
        let expected = http.map(PartialDownload.isEncoded) == true ? -1 : response.expectedContentLength
        let total: Int64? =
            if let resumed { http.flatMap(PartialDownload.contentRange)?.total ?? resumed.total } else {
                expected >= 0 ? expected : nil
            }
        let writer: DownloadWriter
        do {
            // A 206 need not repeat its validator: the one the kept bytes were checked against still holds.
            let validator = http.flatMap(PartialDownload.validator) ?? resumed?.validator
            writer = try DownloadWriter(
                file: download.partialFile(), resuming: resumed, validator: validator, total: total)
        } catch {
            interrupt(.fileFailed(error as? NetworkClientError ?? .invalidRequest(reason: "\(error)")))
            return false
        }
        let opened = state.withLock { state -> Bool in
            guard state.interruption == nil else { return false }
            // A second head on one task (corelibs resending with a credential) replaces the first one's file.
            state.writer?.discard()
            state.response = response
            state.writer = writer
            state.progress.bytesReceived = writer.length
            state.progress.totalBytesExpectedToReceive = total
            return true
        }
        guard opened else {
            // Interrupted meanwhile: a resumed partial file was kept by the interruption, a new one is not needed.
            if resumed != nil { writer.close() } else { writer.discard() }
            return false
        }
        if let partial, resumed == nil {
            // A whole new body (the resource changed, or the server ignored the range): the old bytes are stale.
            try? FileManager.default.removeItem(at: partial.file)
        }
        return true
    }

    /// The kept bytes no longer fit the resource (a 416, or a 206 for another range or representation): they are
    /// deleted, the task is cancelled, and the request is sent again without a range.
    private func restart(dropping partial: PartialDownload) -> Bool {
        try? FileManager.default.removeItem(at: partial.file)
        var fresh = request.urlRequest
        fresh.setValue(nil, forHTTPHeaderField: "Range")
        state.withLock { state in
            state.followUp = fresh
            state.restarts = true
        }
        // corelibs (Swift 6.3) ignores the `.cancel` disposition: the body would be read to its end.
        cancelTask()
        return false
    }

    /// A piece of a download's body: written to its file, or kept (up to the limit) as an error's body.
    private func receivedDownload(_ data: Data) {
        let (failure, progress, errorBodyIsFull) = state.withLock {
            state -> (NetworkClientError?, TransferProgress?, Bool) in
            guard state.interruption == nil else { return (nil, nil, false) }
            guard var writer = state.writer else {
                // An error's body: its first `maximumResponseSize` bytes, then the transfer ends.
                guard !state.errorBodyIsFull, !state.restarts else { return (nil, nil, false) }
                state.body.append(data.prefix(limits.maximumResponseSize - state.body.count))
                state.errorBodyIsFull = state.body.count >= limits.maximumResponseSize
                return (nil, nil, state.errorBodyIsFull)
            }
            do {
                try writer.write(data)
            } catch {
                return (error as? NetworkClientError, nil, false)
            }
            state.writer = writer
            state.progress.bytesReceived = writer.length
            return (nil, state.progress, false)
        }
        if let failure { interrupt(.fileFailed(failure)) }
        if let progress { reporter?.report(progress) }
        if errorBodyIsFull { _ = endWithResponse() }
    }

    /// Resumes the caller with the response and what arrived so far (the body in memory, or a download's file, moved
    /// into place), and cancels the task; `false` when there is no response yet or the transfer already ended. For an
    /// error's body that reached the limit, and for a 401 that corelibs would hold forever (see the challenge handling in
    /// `DrivenSession.swift`).
    func endWithResponse() -> Bool {
        let ended = state.withLock {
            state -> (CheckedContinuation<TransferResult, any Error>, Result<TransferResult, any Error>)? in
            guard !state.isComplete, state.interruption == nil, let continuation = state.continuation,
                state.response != nil
            else {
                return nil
            }
            state.isComplete = true
            state.continuation = nil
            endDownload(&state, error: nil)
            return (continuation, Self.outcome(of: &state, error: nil, limit: limits.maximumResponseSize))
        }
        guard let (continuation, outcome) = ended else { return false }
        if limits.deadline != nil { DeadlineMonitor.shared.remove(self) }
        continuation.resume(with: outcome)
        cancelTask()
        return true
    }

    /// Closes a download's file when the transfer ends without it: kept for a later run of the same request when
    /// `keep` is true and the response can be resumed, deleted otherwise. A partial download this run was to
    /// resume, and never opened, is kept or deleted the same way.
    private static func settleDownload(_ state: inout State, resume: DownloadResume?, keep: Bool) {
        if let writer = state.writer {
            state.writer = nil
            if keep, let resume, let partial = writer.keep() {
                resume.store.keep(partial, for: resume.key)
            } else if !keep || resume == nil {
                writer.discard()
            }
        } else if let resume, let partial = resume.partial, !state.restarts,
            FileManager.default.fileExists(atPath: partial.file.path)
        {
            if keep {
                resume.store.keep(partial, for: resume.key)
            } else {
                try? FileManager.default.removeItem(at: partial.file)
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
            // A download's bytes so far are kept for a later run when the deadline passed, not when it was cancelled.
            var keep = false
            if case .timedOut = reason { keep = true }
            Self.settleDownload(&state, resume: resume, keep: keep)
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
        typealias Ending = (
            CheckedContinuation<TransferResult, any Error>?, Result<TransferResult, any Error>, TransferProgress?
        )
        let (continuation, outcome, progress) = state.withLock { state -> Ending in
            guard !state.isComplete else { return (nil, .failure(CancellationError()), nil) }  // Ended early.
            state.isComplete = true
            endDownload(&state, error: error)
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
        guard let reporter else { return continuation.resume(with: outcome) }
        // The caller hears of the end after the last report.
        reporter.finish(with: progress) { continuation.resume(with: outcome) }
    }

    /// A download's task ended: its complete body is moved into place; the bytes of one that failed on its way (the
    /// connection dropped, say) are kept for a later run.
    private func endDownload(_ state: inout State, error: (any Error)?) {
        guard state.interruption == nil else { return }  // Settled when it was interrupted.
        guard let writer = state.writer, error == nil, let response = state.response, let download = request.download
        else {
            // Not a cancellation: a later run may resume. An unacceptable status (503, say) keeps the bytes too.
            Self.settleDownload(&state, resume: resume, keep: error.map(Self.canResume) ?? true)
            return
        }
        if let total = writer.total, writer.length != total {
            // The server ended the body early (a range shorter than announced, say): what arrived is kept.
            Self.settleDownload(&state, resume: resume, keep: true)
            state.fileError = nil
            state.transferError = URLError(
                .networkConnectionLost,
                userInfo: [NSLocalizedDescriptionKey: "the download ended after \(writer.length) of \(total) bytes"])
            return
        }
        state.writer = nil
        writer.close()
        switch download.finish(writer.file, response: response) {
        case .success(let file): state.file = file
        case .failure(let error): state.fileError = error
        }
    }

    /// Whether a download that failed with `error` may be resumed later: any transfer failure but a cancellation.
    private static func canResume(_ error: any Error) -> Bool {
        (error as? URLError)?.code != .cancelled
    }

    private static func error(for interruption: Interruption, limit: Int) -> any Error {
        switch interruption {
        case .cancelled: return CancellationError()
        case .tooLarge: return NetworkClientError.responseTooLarge(limit: limit)
        case .fileFailed(let error): return error
        case .timedOut:
            let reason = "the request took longer than its total timeout (totalTimeout or timeoutIntervalForResource)"
            return URLError(.timedOut, userInfo: [NSLocalizedDescriptionKey: reason])
        }
    }

    private static func outcome(
        of state: inout State, error: (any Error)?, limit: Int
    ) -> Result<TransferResult, any Error> {
        if let interruption = state.interruption { return .failure(Self.error(for: interruption, limit: limit)) }
        if state.restarts, let followUp = state.followUp { return .success(.redirect(followUp)) }
        if let error { return .failure(error) }
        if let fileError = state.fileError { return .failure(fileError) }
        if let transferError = state.transferError { return .failure(transferError) }
        if let refusal = state.refusal { return .failure(NetworkClientError.redirectRefused(reason: refusal)) }
        if let followUp = state.followUp { return .success(.redirect(followUp)) }
        guard let response = state.response else { return .failure(URLError(.badServerResponse)) }
        let body = state.body
        state.body = Data()
        return .success(.response(ReceivedResponse(data: body, response: response, file: state.file)))
    }
}
