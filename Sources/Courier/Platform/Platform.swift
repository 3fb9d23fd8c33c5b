// Linux shims live here and only here.
import Foundation

// On Linux, `URLSession`, `URLRequest` and `URLResponse` live in FoundationNetworking. Courier re-exports it so that
// SDK code written for Apple platforms (`import Courier` plus Foundation) compiles unchanged on Linux.
#if canImport(FoundationNetworking)
@_exported import FoundationNetworking
#endif

/// The timeout to hand to URLSession for a requested `interval`.
///
/// corelibs URLSession truncates timeouts to whole seconds, so 0.5 s fails at once (before the request is even
/// sent) and 1.5 s fires after 1 s. Rounding up means a timeout never fires before the time the caller asked for.
func transportTimeout(_ interval: TimeInterval) -> TimeInterval {
    #if canImport(FoundationNetworking)
    return interval.rounded(.up)
    #else
    return interval
    #endif
}

extension URLSession {
    /// Loads `request` and returns its body and response, cancelling the transfer when the calling task is cancelled.
    ///
    /// On Apple platforms this is `data(for:delegate:)`. On Linux, corelibs' own `data(for:)` can deadlock when the
    /// calling task is cancelled just as the transfer completes: its cancellation handler blocks on the session's work
    /// queue while holding the task's status lock, and the work queue resumes the continuation inline, which needs
    /// that lock. Courier's bridge is delivered on the delegate queue instead, and cancels off the handler's thread.
    func courierData(for request: URLRequest, delegate: (any URLSessionTaskDelegate)?) async throws -> (
        Data, URLResponse
    ) {
        #if canImport(FoundationNetworking)
        let transfer = Transfer()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let task = dataTask(with: request) { data, response, error in
                    transfer.finish()
                    if let error {
                        continuation.resume(throwing: error)
                    } else if let response {
                        continuation.resume(returning: (data ?? Data(), response))
                    } else {
                        continuation.resume(throwing: URLError(.badServerResponse))
                    }
                }
                transfer.start(task)
            }
        } onCancel: {
            transfer.cancel()
        }
        #else
        return try await data(for: request, delegate: delegate)
        #endif
    }
}

#if canImport(FoundationNetworking)
/// The URLSession task behind one `courierData(for:delegate:)` call: whether its caller was cancelled and whether it
/// has finished, so that a cancellation never reaches a task that is not running (corelibs can trap on those).
private final class Transfer: Sendable {
    private struct State: Sendable {
        var task: URLSessionDataTask?
        var isCancelled = false
        var isFinished = false
    }

    private let state = Locked(State())

    /// Resumes `task`, then publishes it to `cancel()`, so a cancellation never reaches a task not yet resumed.
    func start(_ task: URLSessionDataTask) {
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

/// The configuration of a session Courier creates: on Linux, without a `URLCache`, and with whole-second timeouts.
///
/// corelibs reads the cache on a background queue before a task's protocol exists; a cancellation landing in that
/// window is reported after the task left the session's registry, and the process traps. The lookup also costs about
/// a tenth of a small request's CPU time. Apple platforms keep the configuration as given.
func ownedSessionConfiguration(_ configuration: URLSessionConfiguration) -> URLSessionConfiguration {
    let copy = configuration.copy() as! URLSessionConfiguration
    copy.urlCache = nil
    copy.timeoutIntervalForRequest = transportTimeout(copy.timeoutIntervalForRequest)
    copy.timeoutIntervalForResource = transportTimeout(copy.timeoutIntervalForResource)
    return copy
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
func ownedSessionConfiguration(_ configuration: URLSessionConfiguration) -> URLSessionConfiguration {
    configuration
}

func redirectTarget(of request: URLRequest, response: HTTPURLResponse) -> URLRequest {
    request
}
#endif
