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
        /// The download's file could not be written, or the upload's file changed.
        case fileFailed(NetworkClientError)
        /// The response cannot be what was asked for (a 206 to a request that sent no `Range`).
        case badResponse(URLError)
    }

    /// The most memory reserved for a body held in memory before its bytes arrive: 1 MiB. A declared
    /// `Content-Length` is only a claim: reserving it whole let a server that declared 60 GB (under a 64 GB
    /// ``NetworkConfiguration/maximumResponseSize``) trap the process, and 40 responses declaring 100 MiB each exhaust
    /// a 4 GB address space. Beyond this the body grows with the bytes that actually arrive.
    static let maximumUpfrontReservation = 1 << 20

    fileprivate struct State: Sendable {
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
        /// The file a download's acceptable body is written to; `nil` while a piece is being written to it (outside
        /// the lock: no file I/O under it), when `isWriting` is true.
        var writer: DownloadWriter?
        var isWriting = false
        /// An interruption that came while a piece was being written: whether to keep the file, and the caller to
        /// resume once the writing thread has settled it.
        var settleAfterWrite: (keep: Bool, continuation: CheckedContinuation<TransferResult, any Error>?)?
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
    /// The stream an upload's body is read from (on Linux): stopped when the transfer is interrupted.
    private let uploadBody: FileBodyControl?
    private var limits: TransferLimits { request.limits }
    private let state = Locked(State())

    /// Delivers progress to the request's handler, if it has one.
    private let reporter: ProgressReporter?

    /// - Parameters:
    ///   - uploadLength: The body's length when the task's own expected count cannot tell it (a stream body).
    ///   - uploadBody: The stream the body is read from, if any: a file that changes size fails the transfer at once.
    init(
        task: URLSessionTask, request: TransferRequest, resume: DownloadResume? = nil, uploadLength: Int64? = nil,
        uploadBody: FileBodyControl? = nil
    ) {
        self.task = task
        self.request = request
        self.resume = resume
        self.uploadLength = uploadLength
        self.uploadBody = uploadBody
        self.reporter = request.onProgress.map(ProgressReporter.init)
        uploadBody?.onFailure { [weak self] error in self?.interrupt(.fileFailed(error)) }
    }

    /// Resumes the task; `continuation` receives the outcome once the delegate reports completion.
    func start(_ continuation: CheckedContinuation<TransferResult, any Error>) {
        let interruption = state.withLock { state in
            if state.interruption == nil { state.continuation = continuation }
            return state.interruption
        }
        if let interruption {
            uploadBody?.stop()
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
                // Reserve the declared length, up to a bound: a declared length is not memory to trust.
                if state.body.isEmpty && state.expectedLength > 0 {
                    state.body.reserveCapacity(Int(min(state.expectedLength, Int64(Self.maximumUpfrontReservation))))
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
        } else if status == 206, partial == nil, request.urlRequest.value(forHTTPHeaderField: "Range") == nil {
            // Part of a body nobody asked a part of: taken for the whole file, it would be a truncated one.
            let reason = "the server answered 206 (Partial Content) to a request that sent no Range"
            interrupt(.badResponse(URLError(.badServerResponse, userInfo: [NSLocalizedDescriptionKey: reason])))
            return false
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
        let (opened, replaced) = state.withLock { state -> (Bool, DownloadWriter?) in
            guard state.interruption == nil else { return (false, nil) }
            // A second head on one task (corelibs resending with a credential) replaces the first one's file.
            let replaced = state.writer
            state.response = response
            state.writer = writer
            state.progress.bytesReceived = writer.length
            state.progress.totalBytesExpectedToReceive = total
            return (true, replaced)
        }
        replaced?.discard()
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
        let (taken, errorBodyIsFull) = state.withLock { state -> (DownloadWriter?, Bool) in
            guard state.interruption == nil else { return (nil, false) }
            guard let writer = state.writer else {
                // An error's body: its first `maximumResponseSize` bytes, then the transfer ends.
                guard !state.errorBodyIsFull, !state.restarts else { return (nil, false) }
                state.body.append(data.prefix(limits.maximumResponseSize - state.body.count))
                state.errorBodyIsFull = state.body.count >= limits.maximumResponseSize
                return (nil, state.errorBodyIsFull)
            }
            // Taken out while it is written: an interruption meanwhile leaves it to this thread to settle.
            state.writer = nil
            state.isWriting = true
            return (writer, false)
        }
        if errorBodyIsFull { _ = endWithResponse() }
        guard var writer = taken else { return }
        var failure: NetworkClientError?
        do {
            try writer.write(data)
        } catch {
            failure = error as? NetworkClientError ?? .fileAccessFailed(url: writer.file, reason: "\(error)")
        }
        typealias Afterwards = (
            progress: TransferProgress?, settlement: Settlement?,
            interrupted: (continuation: CheckedContinuation<TransferResult, any Error>?, keep: Bool)?
        )
        let afterwards = state.withLock { state -> Afterwards in
            state.isWriting = false
            if let pending = state.settleAfterWrite {
                state.settleAfterWrite = nil
                return (nil, Settlement(writer: writer, keep: pending.keep), (pending.continuation, pending.keep))
            }
            state.writer = writer
            guard failure == nil else { return (nil, nil, nil) }
            state.progress.bytesReceived = writer.length
            return (state.progress, nil, nil)
        }
        if let interrupted = afterwards.interrupted {
            // Interrupted while the piece was written: settled now, then the caller hears of it.
            afterwards.settlement?.perform(resume: resume)
            if limits.deadline != nil { DeadlineMonitor.shared.remove(self) }
            if let continuation = interrupted.continuation, let reason = state.withLock({ $0.interruption }) {
                continuation.resume(throwing: Self.error(for: reason, limit: limits.maximumResponseSize))
            }
            cancelTask()
            return
        }
        if let failure { interrupt(.fileFailed(failure)) }
        if let progress = afterwards.progress { reporter?.report(progress) }
    }

    /// Resumes the caller with the response and what arrived so far (the body in memory, or a download's file, moved
    /// into place), and cancels the task; `false` when there is no response yet or the transfer already ended. For an
    /// error's body that reached the limit, and for a 401 that corelibs would hold forever (see the challenge handling in
    /// `DrivenSession.swift`).
    func endWithResponse() -> Bool {
        typealias Ended = (
            continuation: CheckedContinuation<TransferResult, any Error>,
            outcome: Result<TransferResult, any Error>?, work: Completion?
        )
        let ended = state.withLock { state -> Ended? in
            guard !state.isComplete, state.interruption == nil, let continuation = state.continuation,
                state.response != nil
            else {
                return nil
            }
            state.isComplete = true
            state.continuation = nil
            let work = endDownload(&state, error: nil)
            if case .move = work { return (continuation, nil, work) }
            return (continuation, Self.outcome(of: &state, error: nil, limit: limits.maximumResponseSize), work)
        }
        guard let ended else { return false }
        var outcome = ended.outcome
        if case .settle(let settlement)? = ended.work { settlement.perform(resume: resume) }
        if case .move(let move)? = ended.work {
            // Renamed outside the lock: no file I/O while it is held.
            let moved = move.perform()
            outcome = state.withLock { state in
                state.record(moved)
                return Self.outcome(of: &state, error: nil, limit: limits.maximumResponseSize)
            }
        }
        if limits.deadline != nil { DeadlineMonitor.shared.remove(self) }
        ended.continuation.resume(with: outcome ?? .failure(URLError(.badServerResponse)))
        cancelTask()
        return true
    }

    /// Closes a download's file when the transfer ends without it: kept for a later run of the same request when
    /// `keep` is true and the response can be resumed, deleted otherwise. A partial download this run was to
    /// resume, and never opened, is kept or deleted the same way.
    ///
    /// Decided under the lock, carried out (``Settlement/perform(resume:)``) outside it. `nil` when there is nothing
    /// to settle, or when a piece is being written: the writing thread then settles the file (`settleAfterWrite`).
    private static func settlement(_ state: inout State, resume: DownloadResume?, keep: Bool) -> Settlement? {
        if let writer = state.writer {
            state.writer = nil
            return Settlement(writer: writer, keep: keep)
        }
        if state.isWriting { return nil }
        guard let partial = resume?.partial, !state.restarts else { return nil }
        return Settlement(untouched: partial, keep: keep)
    }

    /// What to do with a download's file when its transfer ends without it, done outside the lock.
    struct Settlement: Sendable {
        /// The file being written, to keep or delete.
        var writer: DownloadWriter?
        /// The partial download this run was to resume and never opened.
        var untouched: PartialDownload?
        var keep: Bool

        init(writer: DownloadWriter, keep: Bool) {
            self.writer = writer
            self.keep = keep
        }

        init(untouched: PartialDownload, keep: Bool) {
            self.untouched = untouched
            self.keep = keep
        }

        func perform(resume: DownloadResume?) {
            if let writer {
                if keep, let resume, let partial = writer.keep() {
                    resume.store.keep(partial, for: resume.key)
                } else if !keep || resume == nil {
                    writer.discard()
                }
            } else if let resume, let partial = untouched, FileManager.default.fileExists(atPath: partial.file.path) {
                if keep {
                    resume.store.keep(partial, for: resume.key)
                } else {
                    try? FileManager.default.removeItem(at: partial.file)
                }
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
        typealias Interrupted = (continuation: CheckedContinuation<TransferResult, any Error>?, settlement: Settlement?)
        let interrupted = state.withLock { state -> Interrupted? in
            guard state.interruption == nil && !state.isComplete else { return nil }
            state.interruption = reason
            state.body = Data()
            // A download's bytes so far are kept for a later run when the deadline passed, not when it was cancelled.
            var keep = false
            if case .timedOut = reason { keep = true }
            defer { state.continuation = nil }
            if state.isWriting {
                // The writing thread settles the file and then resumes the caller, who finds it settled.
                state.settleAfterWrite = (keep, state.continuation)
                return (nil, nil)
            }
            return (state.continuation, Self.settlement(&state, resume: resume, keep: keep))
        }
        guard let interrupted else { return }  // Already ended or interrupted.
        uploadBody?.stop()
        interrupted.settlement?.perform(resume: resume)
        guard let continuation = interrupted.continuation else { return }  // Not started, or being written.
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
        let (first, work) = state.withLock { state -> (Ending?, Completion?) in
            guard !state.isComplete else { return ((nil, .failure(CancellationError()), nil), nil) }  // Ended early.
            state.isComplete = true
            let work = endDownload(&state, error: error)
            if case .move = work { return (nil, work) }
            return (ending(&state, error: error), work)
        }
        var ended = first
        if case .settle(let settlement)? = work { settlement.perform(resume: resume) }
        if case .move(let move)? = work {
            // Renamed outside the lock: no file I/O while it is held. `isComplete` keeps everyone else out meanwhile.
            let moved = move.perform()
            ended = state.withLock { state in
                state.record(moved)
                return ending(&state, error: error)
            }
        }
        guard let (continuation, outcome, progress) = ended, let continuation else { return }
        guard let reporter else { return continuation.resume(with: outcome) }
        // The caller hears of the end after the last report.
        reporter.finish(with: progress) { continuation.resume(with: outcome) }
    }

    private typealias Ending = (
        CheckedContinuation<TransferResult, any Error>?, Result<TransferResult, any Error>, TransferProgress?
    )

    /// The caller to resume, the outcome, and the last progress report, taken from `state` once the transfer ended.
    private func ending(_ state: inout State, error: (any Error)?) -> Ending {
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

    /// A download's complete body, taken from the state to be moved into place outside the lock.
    struct PendingMove: Sendable {
        let writer: DownloadWriter
        let response: URLResponse
        let download: DownloadTarget

        /// Moves the file into place while its descriptor is still open (what is renamed must be the file written,
        /// not one put in its place), then closes it.
        func perform() -> Result<DownloadedFile, NetworkClientError> {
            defer { writer.close() }
            return download.finish(writer.file, response: response, written: writer.identity())
        }
    }

    /// A download's task ended: its complete body is returned to be moved into place (``PendingMove/perform()``,
    /// outside the lock); the bytes of one that failed on its way (the connection dropped, say) are kept for a later
    /// run.
    private func endDownload(_ state: inout State, error: (any Error)?) -> Completion? {
        guard state.interruption == nil else { return nil }  // Settled when it was interrupted.
        guard let writer = state.writer, error == nil, let response = state.response, let download = request.download
        else {
            // Not a cancellation: a later run may resume. An unacceptable status (503, say) keeps the bytes too.
            return Self.settlement(&state, resume: resume, keep: error.map(Self.canResume) ?? true).map {
                .settle($0)
            }
        }
        if let total = writer.total, writer.length != total {
            // The server ended the body early (a range shorter than announced, say): what arrived is kept.
            let settlement = Self.settlement(&state, resume: resume, keep: true)
            state.fileError = nil
            state.transferError = URLError(
                .networkConnectionLost,
                userInfo: [NSLocalizedDescriptionKey: "the download ended after \(writer.length) of \(total) bytes"])
            return settlement.map { .settle($0) }
        }
        state.writer = nil
        return .move(PendingMove(writer: writer, response: response, download: download))
    }

    /// The file work left when a download's task ended, done outside the lock.
    enum Completion: Sendable {
        /// The complete body, to move into place.
        case move(PendingMove)
        /// The bytes of a download that did not complete, to keep or delete.
        case settle(Settlement)
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
        case .badResponse(let error): return error
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

extension DrivenTransfer.State {
    /// Records where a download's file was moved, or why it could not be.
    fileprivate mutating func record(_ moved: Result<DownloadedFile, NetworkClientError>) {
        switch moved {
        case .success(let file): self.file = file
        case .failure(let error): fileError = error
        }
    }
}
