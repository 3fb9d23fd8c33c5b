import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The delegate of every session Courier creates: hands each response head and each piece of the body to its
/// ``HTTPExchange`` as it arrives (a task created without a completion handler sends its data here and nowhere else:
/// corelibs keeps no copy), reports upload progress, and follows no redirect (``Redirects`` decides them above the
/// transport).
final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    /// The exchanges in flight, by task identifier (unique within the one session this delegate serves).
    private let calls = Locked([Int: TransportCall]())

    /// Sends `exchange` on `session` (whose delegate is `self`) and returns when it ended or was stopped.
    func send(_ exchange: HTTPExchange, on session: URLSession) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            startingTasks { [self] in
                let (task, uploadLength): (URLSessionTask, Int64?)
                do {
                    (task, uploadLength) = try makeTask(on: session, for: exchange)
                } catch {
                    TransportCall.didNotStart()
                    return continuation.resume(throwing: error)
                }
                let call = TransportCall(exchange: exchange, uploadLength: uploadLength)
                calls.withLock { $0[task.taskIdentifier] = call }
                call.start(task, continuation: continuation)
            }
        }
    }

    func call(_ task: URLSessionTask) -> TransportCall? {
        calls.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        guard let call = call(dataTask) else { return completionHandler(.allow) }
        guard let head = response as? HTTPURLResponse else {
            call.finish(NetworkClientError.invalidResponse(response))
            call.cancelTask()
            return completionHandler(.cancel)
        }
        let proceeds = call.exchange.receive(head)
        // corelibs (Swift 6.3) ignores the `.cancel` disposition and would read the body to its end.
        if !proceeds { call.cancelTask() }
        completionHandler(proceeds ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let call = call(dataTask), !call.exchange.receive(data) else { return }
        call.cancelTask()
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        guard let call = call(task) else { return }
        let expected = call.uploadLength ?? (totalBytesExpectedToSend >= 0 ? totalBytesExpectedToSend : nil)
        call.exchange.sent(totalBytesSent, of: expected)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let call = calls.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        // corelibs holds a 3xx's head back, expecting to redirect; a 3xx without a `Location` then completes without
        // it ever reaching `didReceive response`. It is the final response: hand it over now
        // (corelibs has discarded its body).
        if error == nil, let call, !call.exchange.hasHead, let head = task.response as? HTTPURLResponse,
            (300..<400).contains(head.statusCode)
        {
            _ = call.exchange.receive(head)
        }
        call?.complete(error)
    }

    /// A response fetched for a ``ResponseCache`` (it asked `.reloadIgnoringLocalCacheData`) is not kept in the
    /// session's `URLCache` too: one cache, not two.
    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, willCacheResponse proposedResponse: CachedURLResponse,
        completionHandler: @escaping @Sendable (CachedURLResponse?) -> Void
    ) {
        let bypassed = dataTask.originalRequest?.cachePolicy == .reloadIgnoringLocalCacheData
        completionHandler(bypassed ? nil : proposedResponse)
    }

    /// Every redirect ends the task with its 3xx: Courier decides it (``Redirects``) and sends the next request.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
