// How the sessions Courier drives are made, and what they do differently on Linux.
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A session driven by `delegate`: on Linux a ``DrivenSession`` whose delegate callbacks run inline, on Apple
/// platforms a plain `URLSession` with its own serial delegate queue.
func makeDrivenSession(_ configuration: URLSessionConfiguration, delegate: SessionDelegate) -> URLSession {
    #if canImport(FoundationNetworking)
    DrivenSession(configuration: configuration, delegate: delegate)
    #else
    URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    #endif
}

/// Runs `work`, which creates and resumes a `URLSessionTask`: at once, or on Linux while a stream holds corelibs'
/// shared work queue for its reader (``StreamChannel/mayHoldTransports``), on a dispatch queue instead.
///
/// corelibs creates and resumes a task with a `dispatch_sync` onto the work queue that every session in the process
/// shares. A delegate callback held there for a slow stream reader (see ``StreamChannel``) then blocks the caller's
/// thread, and a caller on the cooperative pool, whose two threads (on two cores) the stream's reader also needs,
/// could starve that very reader: measured, a slow-reader stream beside other requests was held until it failed.
///
/// The task is counted at once (``TransportCall/willStart()``): `work` calls ``TransportCall/didNotStart()`` when it
/// cannot create it.
func startingTasks(_ work: @escaping @Sendable () -> Void) {
    TransportCall.willStart()
    #if canImport(FoundationNetworking)
    if StreamChannel.mayHoldTransports {
        DispatchQueue.global().async(execute: work)
        return
    }
    #endif
    work()
}

extension SessionDelegate {
    /// The task that sends `exchange` on `session`, and the body's length when this code, not URLSession, knows it
    /// (for upload progress).
    ///
    /// On Linux a file body is Courier's ``FileBodyStream`` (``HTTPExchange/makeBodyStream()``) sent with the file's
    /// size as `Content-Length`: a regular file, opened without blocking and checked here, before the task exists, so
    /// that nothing blocks corelibs' shared work queue later (a FIFO opened there froze every URLSession in the
    /// process); it sends exactly that many bytes and fails the exchange if the file changes size, framed by its
    /// `Content-Length` (`streamingRequest(_:body:length:)`). corelibs' `uploadTask(fromFile:)` reads the file with
    /// dispatch I/O and, when a read completes, unpauses libcurl's handle even after the task was cancelled and the
    /// handle removed: a `try!` then traps the process (`_EasyHandle._PauseState.setState`,
    /// CURLE_BAD_FUNCTION_ARGUMENT), which cancelling a file upload midway did about once in 6 runs. A stream is read
    /// when libcurl asks for the next piece, on corelibs' work queue, so nothing arrives after a cancel; a 200 MiB file
    /// upload peaks at about the same memory.
    ///
    /// - Throws: ``NetworkClientError/fileAccessFailed(url:reason:)`` when the file is not a regular file of the
    ///   measured size or cannot be opened.
    func makeTask(on session: URLSession, for exchange: HTTPExchange) throws -> (URLSessionTask, Int64?) {
        guard case .file(let file, let byteCount) = exchange.body else {
            return (session.dataTask(with: exchange.request), nil)
        }
        #if canImport(FoundationNetworking)
        _ = file
        let request = streamingRequest(exchange.request, body: try exchange.makeBodyStream(), length: byteCount)
        return (session.dataTask(with: request), byteCount)
        #else
        return (session.uploadTask(with: exchange.request, fromFile: file), byteCount)
        #endif
    }
}

#if canImport(FoundationNetworking)
/// A corelibs session whose delegate callbacks run at once, on the thread that delivers them, instead of as one
/// `OperationQueue` operation each; completion handlers of the caller's own tasks and task lists still run elsewhere.
///
/// corelibs hands every delegate callback to `delegateQueue.addOperation { … }`: a `BlockOperation`, a queue insertion
/// and a thread wake-up per callback, three or more per request (about a tenth of a small GET's cost: see the
/// Performance article), and a body piece waits in that queue without holding libcurl back, so a large body streamed
/// to a delegate piled up in memory. Run inline, a callback costs a function call, and libcurl reads the next piece
/// only after ``SessionDelegate`` has stored or written this one.
///
/// The thread is corelibs' work queue, and every session's work queue targets one serial queue shared by the whole
/// process (`org.swift.URLSession.SharedQueue`). Code run there must never wait on any session: in Swift 6.3
/// `URLSessionTask.cancel()`, `resume()` and `suspend()`, and creating a task, `dispatch_sync` onto it, which traps.
/// ``SessionDelegate`` answers corelibs' completion handlers (dispatched asynchronously by corelibs), cancels tasks
/// from another thread, and hands ``NetworkRequest/onProgress`` reports to a queue of their own. The caller's code
/// that corelibs would run on the delegate queue (the completion handlers of tasks the caller creates on
/// ``NetworkConfiguration/session``, `getAllTasks`, `flush`, `reset`) is moved off it by the overrides below. Only a
/// per-task delegate set on such a task still runs there. Callbacks stay in order: they all come from one serial queue.
final class DrivenSession: URLSession, @unchecked Sendable {
    // `@unchecked Sendable` restates URLSession's conformance; the only state added is `callbacks`, a serial queue
    // that is itself Sendable and never replaced.
    /// Where the caller's completion handlers run, in order.
    private let callbacks = DispatchQueue(label: "Courier.DrivenSession.callbacks")

    init(configuration: URLSessionConfiguration, delegate: SessionDelegate) {
        super.init(configuration: configuration, delegate: delegate, delegateQueue: InlineOperationQueue())
    }

    /// `handler`, run on `callbacks` rather than on the work queue.
    private func moved<each Value: Sendable>(
        _ handler: @escaping @Sendable (repeat each Value) -> Void
    ) -> @Sendable (repeat each Value) -> Void {
        { [callbacks] (value: repeat each Value) in
            let values = (repeat each value)
            callbacks.async { handler(repeat each values) }
        }
    }

    override func dataTask(
        with request: URLRequest, completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDataTask {
        super.dataTask(with: request, completionHandler: moved(completionHandler))
    }

    override func dataTask(
        with url: URL, completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDataTask {
        super.dataTask(with: url, completionHandler: moved(completionHandler))
    }

    override func uploadTask(
        with request: URLRequest, fromFile fileURL: URL,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionUploadTask {
        super.uploadTask(with: request, fromFile: fileURL, completionHandler: moved(completionHandler))
    }

    override func uploadTask(
        with request: URLRequest, from bodyData: Data?,
        completionHandler: @escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionUploadTask {
        super.uploadTask(with: request, from: bodyData, completionHandler: moved(completionHandler))
    }

    override func downloadTask(
        with request: URLRequest, completionHandler: @escaping @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDownloadTask {
        super.downloadTask(with: request, completionHandler: moved(completionHandler))
    }

    override func downloadTask(
        with url: URL, completionHandler: @escaping @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDownloadTask {
        super.downloadTask(with: url, completionHandler: moved(completionHandler))
    }

    override func downloadTask(
        withResumeData resumeData: Data,
        completionHandler: @escaping @Sendable (URL?, URLResponse?, (any Error)?) -> Void
    ) -> URLSessionDownloadTask {
        super.downloadTask(withResumeData: resumeData, completionHandler: moved(completionHandler))
    }

    override func getTasksWithCompletionHandler(
        _ completionHandler:
            @escaping @Sendable ([URLSessionDataTask], [URLSessionUploadTask], [URLSessionDownloadTask])
            -> Void
    ) {
        super.getTasksWithCompletionHandler(moved(completionHandler))
    }

    override func getAllTasks(completionHandler: @escaping @Sendable ([URLSessionTask]) -> Void) {
        super.getAllTasks(completionHandler: moved(completionHandler))
    }

    override func flush(completionHandler: @escaping @Sendable () -> Void) {
        super.flush(completionHandler: moved(completionHandler))
    }

    override func reset(completionHandler: @escaping @Sendable () -> Void) {
        super.reset(completionHandler: moved(completionHandler))
    }
}

extension SessionDelegate {
    /// A 401 with a `WWW-Authenticate` challenge corelibs can answer (Basic, Digest): the caller gets the 401 at once
    /// when there is no credential to try, and corelibs' default handling runs off the work queue otherwise.
    ///
    /// corelibs (Swift 6.3) completes no such task when it has no credential for the protection space: its default
    /// handling does nothing, and the caller waited until a total timeout. With a credential, it suspends and resumes
    /// the task, which wait on the work queue, where callbacks run (see ``DrivenSession``).
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        if challenge.proposedCredential == nil, let call = call(task), call.exchange.hasHead {
            // The 401 and the body so far are the response; the task is cancelled (and its handler never called).
            call.finish(nil)
            call.cancelTask()
            return
        }
        DispatchQueue.global().async { completionHandler(.performDefaultHandling, nil) }
    }
}

/// An `OperationQueue` whose block operations run at once, on the caller's thread: see ``DrivenSession``. Operation
/// objects still go through `OperationQueue`.
private final class InlineOperationQueue: OperationQueue, @unchecked Sendable {
    // No state of its own: `@unchecked Sendable` restates OperationQueue's conformance for the subclass.
    override func addOperation(_ block: @escaping @Sendable () -> Void) {
        block()
    }
}
#endif
