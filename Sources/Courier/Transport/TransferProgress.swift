/// How far a transfer has come: bytes sent and received, with the totals when they are known.
///
/// Delivered to ``NetworkRequest/onProgress`` on a serial queue of the transfer's own, in order. The counts never
/// decrease, and the last report of a transfer that succeeded has `bytesReceived` equal to the body's size (for a
/// download, the file's). A resumed download starts at the bytes it kept.
public struct TransferProgress: Hashable, Sendable {
    /// The body bytes sent so far.
    public var bytesSent: Int64
    /// The size of the body to send, or `nil` when unknown (no body: `0`).
    public var totalBytesExpectedToSend: Int64?
    /// The response body bytes received so far, after decompression.
    public var bytesReceived: Int64
    /// The response's declared length, or `nil` when the server declared none (chunked, or compressed: the declared
    /// length then counts compressed bytes, and `bytesReceived` decompressed ones).
    public var totalBytesExpectedToReceive: Int64?

    /// Creates a progress report.
    /// - Parameters:
    ///   - bytesSent: Body bytes sent so far.
    ///   - totalBytesExpectedToSend: The body's size, or `nil` when unknown.
    ///   - bytesReceived: Response bytes received so far.
    ///   - totalBytesExpectedToReceive: The response's declared length, or `nil` when unknown.
    public init(
        bytesSent: Int64, totalBytesExpectedToSend: Int64?, bytesReceived: Int64, totalBytesExpectedToReceive: Int64?
    ) {
        self.bytesSent = bytesSent
        self.totalBytesExpectedToSend = totalBytesExpectedToSend
        self.bytesReceived = bytesReceived
        self.totalBytesExpectedToReceive = totalBytesExpectedToReceive
    }
}

/// Hands a transfer's progress to ``NetworkRequest/onProgress`` on a serial queue of its own, never on the session's
/// delegate queue, so that a slow handler holds up no other callback of the session. A report not yet delivered is
/// replaced by a newer one, so a slow handler skips reports instead of piling them up; they stay in order and never
/// go back.
final class ProgressReporter: Sendable {
    private let handler: @Sendable (TransferProgress) -> Void
    private let queue = DispatchQueue(label: "Courier.TransferProgress")
    /// The newest report not delivered yet; a delivery is scheduled whenever it is set from `nil`.
    private let pending = Locked<TransferProgress?>(nil)

    init(_ handler: @escaping @Sendable (TransferProgress) -> Void) {
        self.handler = handler
    }

    /// The request body's progress so far: a redirect's next hop starts its own count, and the request's reports
    /// must not go back.
    private let sent = Locked<(bytes: Int64, total: Int64?)>((0, nil))

    func report(_ progress: TransferProgress) {
        var progress = progress
        sent.withLock { sent in
            if progress.bytesSent >= sent.bytes {
                sent = (progress.bytesSent, progress.totalBytesExpectedToSend ?? sent.total)
            } else {
                (progress.bytesSent, progress.totalBytesExpectedToSend) = (sent.bytes, sent.total)
            }
        }
        let schedule = pending.withLock { pending -> Bool in
            defer { pending = progress }
            return pending == nil
        }
        guard schedule else { return }
        queue.async { [self] in
            let latest = pending.withLock { pending -> TransferProgress? in
                defer { pending = nil }
                return pending
            }
            if let latest { handler(latest) }
        }
    }

    /// Reports `last`, if any, then runs `then` once every report has been delivered.
    func finish(with last: TransferProgress?, then: @escaping @Sendable () -> Void) {
        if let last { report(last) }
        queue.async(execute: then)
    }
}
