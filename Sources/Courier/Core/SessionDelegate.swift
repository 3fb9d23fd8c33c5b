import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The delegate of every session Courier creates: it receives each response body itself, so that it can enforce the
/// size limit while the bytes arrive, reports progress, moves downloaded files, and decides every redirect.
///
/// A task created without a completion handler sends its data to this delegate and nowhere else (corelibs keeps no
/// copy of it), so a body costs its size once in memory, reserved from `Content-Length`.
final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    let redirects: RedirectGuard
    /// The transfers in flight, by task identifier (unique within the one session this delegate serves).
    private let transfers = Locked([Int: DrivenTransfer]())
    /// Downloads that failed on their way, kept until the same request runs again.
    let partialDownloads = PartialDownloads()

    init(sensitiveHeaders: Set<String>) {
        self.redirects = RedirectGuard(sensitiveHeaders: sensitiveHeaders)
    }

    /// Sends `request` on `session` (whose delegate is `self`) and collects the response.
    func send(_ request: TransferRequest, on session: URLSession) async throws -> TransferResult {
        let task: URLSessionTask
        var resume: DownloadResume?
        var uploadLength: Int64?
        if let file = request.uploadFile {
            (task, uploadLength) = try makeUploadTask(on: session, request.urlRequest, fromFile: file)
        } else if let download = request.download,
            let key = PartialDownloads.key(for: request.urlRequest, destination: download.destination)
        {
            // A download is a data task whose body this delegate writes to a file: Courier holds the partial bytes,
            // so that a failed download can be resumed, and nothing is left in a temporary place of URLSession's.
            let partial = partialDownloads.take(key)
            var urlRequest = request.urlRequest
            if let partial {
                urlRequest.setValue("bytes=\(partial.length)-", forHTTPHeaderField: "Range")
                urlRequest.setValue(partial.validator, forHTTPHeaderField: "If-Range")
            }
            resume = DownloadResume(key: key, partial: partial, store: partialDownloads)
            task = session.dataTask(with: urlRequest)
        } else {
            task = session.dataTask(with: request.urlRequest)
        }
        let transfer = DrivenTransfer(task: task, request: request, resume: resume, uploadLength: uploadLength)
        transfers.withLock { $0[task.taskIdentifier] = transfer }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                transfer.start(continuation)
            }
        } onCancel: {
            transfer.interrupt(.cancelled)
        }
    }

    func transfer(_ task: URLSessionTask) -> DrivenTransfer? {
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

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        transfer(task)?.sent(totalBytesSent, of: totalBytesExpectedToSend)
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
        let sent = transfer?.request.urlRequest ?? task.originalRequest
        let extra = transfer?.request.sensitiveHeaders ?? []
        switch redirects.decide(request, redirecting: sent, response: response, alsoRemoving: extra) {
        case .follow(let next)
        where redirectsDropBodies && transfer?.request.uploadFile != nil
            && (response.statusCode == 307 || response.statusCode == 308):
            // corelibs would send the file's request with an empty body: send it anew, from the file.
            transfer?.redirected(to: next)
            completionHandler(nil)
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
