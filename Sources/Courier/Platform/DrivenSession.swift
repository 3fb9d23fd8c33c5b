// How the sessions Courier drives are made, and what they do differently on Linux.
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A session driven by `delegate`, with URLSession's own serial delegate queue.
///
/// corelibs hands every delegate callback to `delegateQueue.addOperation { … }`, about 60k of a small GET's 630k
/// instructions, and never holds libcurl back while the delegate catches up. Two ways around it were tried and given
/// up, because corelibs then stalled (see <doc:Performance>):
/// - running the callbacks inline on corelibs' work queue (an `OperationQueue` subclass whose `addOperation` runs the
///   block at once): 1.03x raw URLSession's instructions instead of 1.15x, and flat downloads;
/// - a delegate queue that makes the work queue wait while 256 callbacks are queued: flat downloads (38–42 MB for
///   200 MiB instead of 37–113 MB).
///
/// With either, 50 calls to one host answered with empty bodies sometimes never started the transfers waiting for one
/// of the 6 connections (every thread idle: a lost wake-up in corelibs' libcurl scheduling). That work queue is shared
/// by every session in the process, and corelibs' timers and socket events run on it.
func makeDrivenSession(_ configuration: URLSessionConfiguration, delegate: SessionDelegate) -> URLSession {
    #if canImport(FoundationNetworking)
    URLSession(configuration: configuration, delegate: delegate, delegateQueue: DispatchingOperationQueue())
    #else
    URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    #endif
}

#if canImport(FoundationNetworking)
extension SessionDelegate {
    /// A 401 with a `WWW-Authenticate` challenge corelibs can answer (Basic, Digest): the caller gets the 401 at once
    /// when there is no credential to try, and corelibs' default handling runs off the work queue otherwise.
    ///
    /// corelibs (Swift 6.3) completes no such task when it has no credential for the protection space: its default
    /// handling does nothing, and the caller waited until a total timeout. With a credential, corelibs' default
    /// handling runs, from another thread than the delegate queue's.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        if challenge.proposedCredential == nil, transfer(task)?.endWithResponse() == true { return }
        DispatchQueue.global().async { completionHandler(.performDefaultHandling, nil) }
    }
}

/// A serial delegate queue whose block operations run on a serial `DispatchQueue`.
final class DispatchingOperationQueue: OperationQueue, @unchecked Sendable {
    private let queue = DispatchQueue(label: "Courier.SessionDelegate")

    override init() {
        super.init()
        maxConcurrentOperationCount = 1
    }

    override func addOperation(_ block: @escaping @Sendable () -> Void) {
        queue.async(execute: block)
    }
}
#endif
