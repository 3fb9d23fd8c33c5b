import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A download's body on its way to a file: the rules of downloads and of their resume, for ``HTTPExchange``.
///
/// Made for one exchange by ``make(for:target:scope:)``, which takes the bytes an earlier run of the same request kept
/// and asks for the rest (`Range`, `If-Range`). At the head it decides: an acceptable body (or the rest of a resumed
/// one) goes to a partial file beside the destination; a stale range (a 416, or a 206 for another range or
/// representation) deletes the kept bytes and sends the request again without a range; a 206 nobody asked for fails;
/// any other status keeps its body in memory as the error's. Complete, the file is renamed into place
/// (``DownloadTarget/finish(_:response:written:)``); otherwise its bytes are kept for a later run or deleted.
struct DownloadSink: ResponseBodySink {
    let target: DownloadTarget
    /// The request as sent: with `Range` and `If-Range` when it resumes.
    let request: URLRequest
    /// The request's key among the kept downloads; `nil` for a request that cannot be resumed.
    let key: String?
    /// The serial number of the configuration the download runs on: kept bytes are its own.
    let scope: UInt64
    /// The bytes this run continues, until the head says whether it does.
    private var partial: PartialDownload?
    private var writer: DownloadWriter?

    /// The kept partial downloads of every configuration.
    static let store = PartialDownloads()

    /// Deletes what the configuration numbered `scope` kept: it was released.
    static func configurationReleased(_ scope: UInt64) {
        store.drop(scope: scope)
    }

    private init(
        target: DownloadTarget, request: URLRequest, key: String?, scope: UInt64, partial: PartialDownload?
    ) {
        self.target = target
        self.request = request
        self.key = key
        self.scope = scope
        self.partial = partial
    }

    /// The sink for a download of `request`, a hop of the call that began with `first` (a redirect's target), on the
    /// configuration numbered `scope`; adds `Range` and `If-Range` to `request` when an earlier run of `first` kept
    /// bytes. The bytes are kept under `first`, so that a download behind a redirect to a new URL each time (a signed
    /// CDN link) still resumes; `If-Range` keeps that safe.
    static func make(
        for request: inout URLRequest, first: URLRequest, target: DownloadTarget, scope: UInt64
    ) -> DownloadSink {
        let key = PartialDownloads.key(for: first, destination: target.destination)
        let partial = key.flatMap { store.take($0, scope: scope) }
        if let partial {
            request.setValue("bytes=\(partial.length)-", forHTTPHeaderField: "Range")
            request.setValue(partial.validator, forHTTPHeaderField: "If-Range")
        }
        return DownloadSink(target: target, request: request, key: key, scope: scope, partial: partial)
    }

    mutating func open(for head: HTTPURLResponse) -> TransferStateMachine.SinkOpening {
        // A second head on one exchange (corelibs resending with a credential) replaces the first one's file.
        writer?.discard()
        writer = nil
        let status = head.statusCode
        var resumed: PartialDownload?
        if let partial, status == 206 || status == 416 {
            guard status == 206, partial.isContinued(by: head) else {
                // The kept bytes no longer fit the resource: deleted, and the request goes again without a range.
                try? FileManager.default.removeItem(at: partial.file)
                self.partial = nil
                var fresh = request
                fresh.setValue(nil, forHTTPHeaderField: "Range")
                fresh.setValue(nil, forHTTPHeaderField: "If-Range")
                return .restart(fresh)
            }
            resumed = partial
        } else if status == 206, partial == nil, request.value(forHTTPHeaderField: "Range") == nil {
            // Part of a body nobody asked a part of: taken for the whole file, it would be a truncated one.
            let reason = "the server answered 206 (Partial Content) to a request that sent no Range"
            return .failed(URLError(.badServerResponse, userInfo: [NSLocalizedDescriptionKey: reason]))
        } else if !target.accepts(status) {
            return .errorBody
        }
        // An encoded body's declared length is not the length of the file it becomes.
        let expected = PartialDownload.isEncoded(head) ? -1 : head.expectedContentLength
        let total: Int64? =
            if let resumed { PartialDownload.contentRange(of: head)?.total ?? resumed.total } else {
                expected >= 0 ? expected : nil
            }
        do {
            // A 206 need not repeat its validator: the one the kept bytes were checked against still holds.
            let validator = PartialDownload.validator(of: head) ?? resumed?.validator
            writer = try DownloadWriter(
                file: target.partialFile(), resuming: resumed, validator: validator, total: total)
        } catch {
            return .failed(error as? NetworkClientError ?? .invalidRequest(reason: "\(error)"))
        }
        if let partial, resumed == nil {
            // A whole new body (the resource changed, or the server ignored the range): the old bytes are stale.
            try? FileManager.default.removeItem(at: partial.file)
        }
        partial = nil
        return .writing(written: writer?.length ?? 0, total: total)
    }

    mutating func write(_ piece: Data) throws -> Int64 {
        guard writer != nil else { return 0 }
        try writer!.write(piece)
        return writer!.length
    }

    mutating func finish(for head: HTTPURLResponse) -> Result<(byteCount: Int64, value: any Sendable), any Error> {
        guard let writer else { return .failure(TransferStateMachine.outOfOrder("the download has no file")) }
        self.writer = nil
        if let total = writer.total, writer.length != total {
            // The server ended the body early (a range shorter than announced, say): what arrived is kept.
            keep(writer)
            let reason = "the download ended after \(writer.length) of \(total) bytes"
            return .failure(URLError(.networkConnectionLost, userInfo: [NSLocalizedDescriptionKey: reason]))
        }
        // Renamed while its descriptor is still open: what is renamed must be the file written, not one put in its
        // place.
        defer { writer.close() }
        return target.finish(writer.file, response: head, written: writer.identity()).map { file in
            (file.byteCount, file)
        }.mapError { $0 }
    }

    func settle(keep: Bool) {
        if let writer {
            if keep { self.keep(writer) } else { writer.discard() }
        } else if let partial, FileManager.default.fileExists(atPath: partial.file.path) {
            // The bytes this run was to continue, never reached (it ended before its head, or with an error status).
            if keep, let key {
                Self.store.keep(partial, for: key, scope: scope)
            } else {
                try? FileManager.default.removeItem(at: partial.file)
            }
        }
    }

    private func keep(_ writer: DownloadWriter) {
        guard let key else { return writer.discard() }
        // `keep()` deletes bytes that cannot be resumed.
        if let kept = writer.keep() { Self.store.keep(kept, for: key, scope: scope) }
    }
}
