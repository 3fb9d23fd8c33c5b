// How the sessions Courier drives are made, and what they do differently on Linux.
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A session driven by `delegate`: on Linux a ``DrivenSession``, whose delegate queue holds libcurl back while the
/// delegate has not caught up; on Apple platforms a plain `URLSession` with its own serial delegate queue.
func makeDrivenSession(_ configuration: URLSessionConfiguration, delegate: SessionDelegate) -> URLSession {
    #if canImport(FoundationNetworking)
    DrivenSession(configuration: configuration, delegate: delegate)
    #else
    URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    #endif
}

#if canImport(FoundationNetworking)
/// A corelibs session whose delegate queue is bounded: when ``BoundedOperationQueue/limit`` callbacks wait for the
/// delegate, corelibs' work queue (where libcurl reads the sockets) waits too. The caller's own completion handlers,
/// task lists, `flush` and `reset` run on another queue.
///
/// corelibs hands every delegate callback to `delegateQueue.addOperation { … }` and never holds libcurl back: a body
/// streamed to a delegate piles up in that queue as fast as the network delivers it (a 200 MB body written to a file
/// by a delegate peaked anywhere from 41 to 95 MB). Bounded, the pile is at most `limit` pieces.
///
/// The wait is safe because nothing that runs on the delegate queue waits on the work queue: ``SessionDelegate``
/// answers corelibs' completion handlers (dispatched asynchronously by corelibs), answers authentication challenges
/// from another thread, cancels tasks from another thread (`URLSessionTask.cancel()`, `resume()` and `suspend()`, and
/// creating a task, wait on the work queue in Swift 6.3), and hands ``NetworkRequest/onProgress`` reports to a queue
/// of their own. The caller's code that corelibs would otherwise run on the delegate queue (the completion handlers of
/// tasks the caller creates on ``NetworkConfiguration/session``, `getAllTasks`, `flush`, `reset`) is moved to
/// `callbacks` by the overrides below. Only a per-task delegate the caller sets on such a task still runs there.
///
/// Running the callbacks inline on the work queue instead, with no queue at all, saved about 60k of a small GET's
/// 630k instructions, but stalled corelibs: with 50 calls to one host answered with empty bodies, the transfers
/// waiting for one of the 6 connections were never started, about 1 run in 3.
final class DrivenSession: URLSession, @unchecked Sendable {
    // `@unchecked Sendable` restates URLSession's conformance; the only state added is `callbacks`, a serial queue
    // that is itself Sendable and never replaced.
    /// Where the caller's completion handlers run, in order.
    private let callbacks = DispatchQueue(label: "Courier.DrivenSession.callbacks")

    init(configuration: URLSessionConfiguration, delegate: SessionDelegate) {
        super.init(configuration: configuration, delegate: delegate, delegateQueue: BoundedOperationQueue())
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
    /// the task, which wait on the work queue, which may be waiting for the delegate queue (see ``DrivenSession``).
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        if challenge.proposedCredential == nil, transfer(task)?.endWithResponse() == true { return }
        DispatchQueue.global().async { completionHandler(.performDefaultHandling, nil) }
    }
}

/// A serial `OperationQueue` that makes the thread adding a block wait while ``limit`` blocks are queued: see
/// ``DrivenSession``. Operation objects go through `OperationQueue` unbounded.
final class BoundedOperationQueue: OperationQueue, @unchecked Sendable {
    // `waiting` is read and written only while `space` (an NSCondition, a lock) is held.
    /// How many callbacks may wait for the delegate before libcurl waits too: 256 pieces of a body (at most 16 KB
    /// each from libcurl) is 4 MB.
    static let limit = 256
    private let space = NSCondition()
    private var waiting = 0

    override init() {
        super.init()
        maxConcurrentOperationCount = 1
    }

    override func addOperation(_ block: @escaping @Sendable () -> Void) {
        space.lock()
        while waiting >= Self.limit { space.wait() }
        waiting += 1
        space.unlock()
        super.addOperation { [self] in
            block()
            space.lock()
            waiting -= 1
            space.signal()
            space.unlock()
        }
    }
}
#endif
