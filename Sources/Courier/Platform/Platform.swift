// Linux shims live here and only here.
import Foundation

// On Linux, `URLSession`, `URLRequest` and `URLResponse` live in FoundationNetworking. Courier re-exports it so that
// SDK code written for Apple platforms (`import Courier` plus Foundation) compiles unchanged on Linux.
#if canImport(FoundationNetworking)
@_exported import FoundationNetworking
#endif

/// Whether URLSession resends an empty body when it follows a 307 or 308 redirect (corelibs does), so that Courier
/// must send the redirected request itself.
#if canImport(FoundationNetworking)
let redirectsDropBodies = true
#else
let redirectsDropBodies = false
#endif

/// Whether URLSession can send to an IPv6 literal host (`http://[::1]:8080`). corelibs compares the host it reads
/// (`::1`) with libcurl's (`[::1]`), finds them different and fails every such request with `badURL`.
#if canImport(FoundationNetworking)
let supportsIPv6LiteralHosts = false
#else
let supportsIPv6LiteralHosts = true
#endif

/// Whether Courier must enforce `timeoutIntervalForResource` itself: corelibs Foundation ignores it.
#if canImport(FoundationNetworking)
let enforcesResourceTimeout = true
#else
let enforcesResourceTimeout = false
#endif

/// The timeout to hand to URLSession for a requested `interval`: at most ``NetworkConfiguration/maximumTimeout``
/// (corelibs converts timeouts to integer milliseconds and traps above about 9.2e15 s or on infinity), and on Linux
/// rounded up to whole seconds (corelibs truncates, so 0.5 s would fail at once and 1.5 s fire after 1 s). A NaN or
/// non-positive `interval` becomes `fallback`.
func transportTimeout(_ interval: TimeInterval, fallback: TimeInterval) -> TimeInterval {
    guard interval > 0 else { return fallback }  // NaN compares false.
    let clamped = min(interval, NetworkConfiguration.maximumTimeout)
    #if canImport(FoundationNetworking)
    return clamped.rounded(.up)
    #else
    return clamped
    #endif
}

/// The configuration of a session Courier creates: timeouts URLSession can take (see `transportTimeout`), and on
/// Linux no `URLCache`.
///
/// corelibs reads the cache on a background queue before a task's protocol exists; a cancellation landing in that
/// window is reported after the task left the session's registry, and the process traps. The lookup also costs about
/// a tenth of a small request's CPU time. Apple platforms keep the cache.
func ownedSessionConfiguration(_ configuration: URLSessionConfiguration) -> URLSessionConfiguration {
    let copy = configuration.copy() as! URLSessionConfiguration
    #if canImport(FoundationNetworking)
    copy.urlCache = nil
    #endif
    copy.timeoutIntervalForRequest = transportTimeout(copy.timeoutIntervalForRequest, fallback: 60)
    copy.timeoutIntervalForResource = transportTimeout(copy.timeoutIntervalForResource, fallback: 604_800)
    return copy
}

/// The `URLError` code Apple's URLSession reports for a failure corelibs reports as `code`, with libcurl's text
/// `detail`.
///
/// corelibs maps only a few libcurl errors to `URLError` codes and reports the rest as `.unknown`. A connection that
/// closes before the declared body is complete (libcurl's `CURLE_PARTIAL_FILE`: "transfer closed with 2300000 bytes
/// remaining to read", or "… outstanding read data remaining" when chunked) is `.networkConnectionLost` on Apple
/// platforms: the code ``RetryPolicy`` retries, and after which a download resumes. A TLS failure gets the code
/// Apple reports for it (see `tlsErrorCode(libcurlText:)`).
func platformErrorCode(_ code: URLError.Code, detail: String?) -> URLError.Code {
    #if canImport(FoundationNetworking)
    // "transfer closed with …" (curl 7.x, as here); "end of response with … missing" and "Transferred a partial
    // file" (later curl releases, and curl_easy_strerror's text).
    let partialFile = ["transfer closed with", "end of response with", "Transferred a partial file"]
    if code == .unknown, let detail, partialFile.contains(where: { detail.hasPrefix($0) }) {
        return .networkConnectionLost
    }
    if code == .unknown, let detail, let tlsCode = tlsErrorCode(libcurlText: detail) { return tlsCode }
    #endif
    return code
}

extension URLSession {
    /// Runs `request` on a session Courier does not drive (a caller's session with a delegate of its own, or any
    /// caller's session on Apple platforms), cancelling the transfer when the calling task is cancelled or the
    /// deadline passes.
    ///
    /// On Apple platforms this is `data(for:delegate:)`, `upload(for:fromFile:delegate:)` or
    /// `download(for:delegate:)`. On Linux, corelibs' own async methods can deadlock when the calling task is
    /// cancelled just as the transfer completes: their cancellation handler blocks on the session's work queue while
    /// holding the task's status lock, and the work queue resumes the continuation inline, which needs that lock.
    /// Courier's bridge is delivered on the delegate queue instead, and cancels off the handler's thread.
    func courierTransfer(
        _ request: TransferRequest, delegate: (any URLSessionTaskDelegate)?
    ) async throws -> ReceivedResponse {
        #if canImport(FoundationNetworking)
        let transfer = Transfer()
        let deadline = request.limits.deadline
        if let deadline { DeadlineMonitor.shared.add(transfer, deadline: deadline) }
        defer { if deadline != nil { DeadlineMonitor.shared.remove(transfer) } }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let finish: @Sendable (Result<ReceivedResponse, any Error>) -> Void = { result in
                    transfer.finish()
                    if transfer.hasExpired {
                        let reason = "the request took longer than its total timeout"
                        continuation.resume(
                            throwing: URLError(.timedOut, userInfo: [NSLocalizedDescriptionKey: reason]))
                    } else {
                        continuation.resume(with: result)
                    }
                }
                let received: @Sendable (Data?, URLResponse?, (any Error)?) -> Void = { data, response, error in
                    if let error { return finish(.failure(error)) }
                    guard let response else { return finish(.failure(URLError(.badServerResponse))) }
                    finish(.success(ReceivedResponse(data: data ?? Data(), response: response)))
                }
                let task: URLSessionTask
                if let file = request.uploadFile {
                    task = uploadTask(with: request.urlRequest, fromFile: file, completionHandler: received)
                } else if let download = request.download {
                    let limit = request.limits.maximumResponseSize
                    task = downloadTask(with: request.urlRequest) { location, response, error in
                        if let error { return finish(.failure(error)) }
                        guard let location, let response else { return finish(.failure(URLError(.badServerResponse))) }
                        finish(download.take(location, response: response, bodyLimit: limit).mapError { $0 })
                    }
                } else {
                    task = dataTask(with: request.urlRequest, completionHandler: received)
                }
                transfer.start(task)
            }
        } onCancel: {
            transfer.cancel()
        }
        #else
        let limit = request.limits.maximumResponseSize
        let work: @Sendable () async throws -> ReceivedResponse = {
            if let file = request.uploadFile {
                let (data, response) = try await self.upload(
                    for: request.urlRequest, fromFile: file, delegate: delegate)
                return ReceivedResponse(data: data, response: response)
            }
            if let download = request.download {
                let (location, response) = try await self.download(for: request.urlRequest, delegate: delegate)
                return try download.take(location, response: response, bodyLimit: limit).get()
            }
            let (data, response) = try await self.data(for: request.urlRequest, delegate: delegate)
            return ReceivedResponse(data: data, response: response)
        }
        guard let deadline = request.limits.deadline else { return try await work() }
        // Apple platforms enforce the session's resource timeout; a request's own total timeout races the transfer.
        return try await withThrowingTaskGroup(of: ReceivedResponse?.self) { group in
            group.addTask { try await work() }
            group.addTask {
                let now = DispatchTime.now()
                if deadline > now {
                    try await Task.sleep(nanoseconds: deadline.uptimeNanoseconds - now.uptimeNanoseconds)
                }
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let result = first else { throw URLError(.timedOut) }
            return result
        }
        #endif
    }
}

#if canImport(FoundationNetworking)
/// The URLSession task behind one `courierTransfer(_:delegate:)` call: whether its caller was cancelled and
/// whether it has finished, so that a cancellation never reaches a task that is not running (corelibs can trap on
/// those).
private final class Transfer: Expirable, Sendable {
    private struct State: Sendable {
        var task: URLSessionTask?
        var isCancelled = false
        var isFinished = false
        var hasExpired = false
    }

    private let state = Locked(State())

    /// Resumes `task`, then publishes it to `cancel()`, so a cancellation never reaches a task not yet resumed.
    func start(_ task: URLSessionTask) {
        task.resume()
        let isCancelled = state.withLock { state in
            state.task = task
            return state.isCancelled
        }
        if isCancelled { cancelIfRunning() }
    }

    /// Called by the completion handler before it resumes the caller.
    func finish() {
        state.withLock { $0.isFinished = true }
    }

    /// Whether the transfer was cancelled because its deadline passed.
    var hasExpired: Bool { state.withLock { $0.hasExpired } }

    func expire() {
        let started = state.withLock { state in
            if !state.isCancelled && !state.isFinished { state.hasExpired = true }
            state.isCancelled = true
            return state.task != nil
        }
        if started { cancelIfRunning() }
    }

    func cancel() {
        let started = state.withLock { state in
            state.isCancelled = true
            return state.task != nil
        }
        if started { cancelIfRunning() }
    }

    /// `URLSessionTask.cancel()` waits for the session's work queue, so it must never run under the Swift task's
    /// status lock (where cancellation handlers run): it runs on another thread. Skipping finished tasks is best
    /// effort (a transfer can complete between the check and the call); corelibs ignores a cancel of a completed task.
    private func cancelIfRunning() {
        DispatchQueue.global().async {
            let task = self.state.withLock { $0.isFinished ? nil : $0.task }
            task?.cancel()
        }
    }
}

/// The request a redirect should lead to.
///
/// corelibs resolves a path-relative `Location` (`final`, `./final`, `../final`) against the root of the host rather
/// than against the redirecting URL as RFC 3986 requires; resolve it here.
func redirectTarget(of request: URLRequest, response: HTTPURLResponse) -> URLRequest {
    guard let location = response.value(forHTTPHeaderField: "Location"), !location.hasPrefix("/"),
        URL(string: location)?.scheme == nil, let base = response.url,
        let resolved = URL(string: location, relativeTo: base)?.absoluteURL
    else { return request }
    var request = request
    request.url = resolved
    return request
}
#else

func redirectTarget(of request: URLRequest, response: HTTPURLResponse) -> URLRequest {
    request
}
#endif
