import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The bytes of a download that stopped early, kept so that the next run of the same request asks only for the rest:
/// `Range: bytes=<length>-` with `If-Range: <validator>`.
struct PartialDownload: Sendable {
    /// The file holding the first `length` bytes of the body.
    let file: URL
    let length: Int64
    /// The response's strong `ETag`, or else its `Last-Modified`: what `If-Range` sends, so that a server whose
    /// resource changed answers with the whole new body (200) rather than the rest of another one.
    let validator: String
    /// The complete length of the body, when the server declared it.
    let total: Int64?

    /// Whether the body comes with a `Content-Encoding` other than `identity`: its declared length and ranges then
    /// count encoded bytes, while the file gets them decoded.
    static func isEncoded(_ response: HTTPURLResponse) -> Bool {
        guard let encoding = response.value(forHTTPHeaderField: "Content-Encoding") else { return false }
        return encoding.trimmingCharacters(in: .whitespaces).lowercased() != "identity"
    }

    /// Whether the `206` answering this partial download's range request continues these bytes: its range starts
    /// where they end and runs to the end of a body of the same length, and it is the same representation: it repeats
    /// this validator (the `ETag` sent in `If-Range`, or the `Last-Modified` date with no other strong `ETag`). RFC
    /// 9110 §15.3.7.3 allows combining only parts that share a strong validator; a `206` that repeats none may be
    /// another version of the resource, and its bytes are never spliced onto these.
    func isContinued(by response: HTTPURLResponse) -> Bool {
        guard let range = Self.contentRange(of: response), range.start == length else { return false }
        if let total, let rangeTotal = range.total, rangeTotal != total { return false }
        if let end = range.end, let rangeTotal = range.total ?? total, end != rangeTotal - 1 { return false }
        let tag = response.value(forHTTPHeaderField: "ETag")
        if validator.hasPrefix("\"") { return tag == validator }
        if let tag, !tag.hasPrefix("W/") { return false }  // A strong tag now, where there was none.
        return response.value(forHTTPHeaderField: "Last-Modified") == validator
    }

    /// The validator of a response whose body can be resumed with a range request, or `nil`: it needs
    /// `Accept-Ranges: bytes`, a strong `ETag` or a `Last-Modified` date, and no `Content-Encoding` (a range counts
    /// encoded bytes, and an encoded stream cannot be decoded from its middle).
    static func validator(of response: HTTPURLResponse) -> String? {
        if response.statusCode == 200 {
            // A 206 answers a range request: the server supports ranges whether or not it says so again.
            guard
                response.value(forHTTPHeaderField: "Accept-Ranges")?.split(separator: ",")
                    .contains(where: { $0.trimmingCharacters(in: .whitespaces).lowercased() == "bytes" }) == true
            else { return nil }
        }
        if isEncoded(response) { return nil }
        // RFC 9110 §13.1.5: a weak entity tag must not be sent in If-Range.
        if let tag = response.value(forHTTPHeaderField: "ETag"), tag.hasPrefix("\"") { return tag }
        return response.value(forHTTPHeaderField: "Last-Modified")
    }

    /// The first and last byte positions and the complete length of a `206` response's `Content-Range: bytes a-b/n`;
    /// the length is `nil` when the server sent `*`.
    static func contentRange(of response: HTTPURLResponse) -> (start: Int64, end: Int64?, total: Int64?)? {
        guard let value = response.value(forHTTPHeaderField: "Content-Range"),
            value.lowercased().hasPrefix("bytes ")
        else { return nil }
        let spec = value.dropFirst("bytes ".count).split(separator: "/", maxSplits: 1)
        guard spec.count == 2, let dash = spec[0].firstIndex(of: "-"),
            let start = Int64(spec[0][..<dash].trimmingCharacters(in: .whitespaces))
        else { return nil }
        let end = Int64(spec[0][spec[0].index(after: dash)...].trimmingCharacters(in: .whitespaces))
        return (start, end, Int64(spec[1].trimmingCharacters(in: .whitespaces)))
    }
}

/// The partial downloads of every configuration, by configuration and request, until a later run of the same request
/// on the same configuration resumes them or the configuration is released (the files are then deleted). In memory
/// only: a download is resumed within the life of its ``NetworkConfiguration``, not after the process restarts.
final class PartialDownloads: Sendable {
    /// The most partial files kept per configuration; the oldest is deleted first.
    static let capacity = 16

    /// The kept partial downloads, oldest first, by configuration (its serial number) and key.
    private let kept = Locked([(scope: UInt64, key: String, partial: PartialDownload)]())

    /// How old a file in `<caches>/Courier Downloads/Partial` must be for ``sweepStalePartials()`` to delete it: a day.
    static let staleAge: TimeInterval = 86_400

    init() {
        _ = Self.sweptOnce
    }

    /// Deleted once per process: the partial files of default-destination downloads that an earlier process left.
    private static let sweptOnce: Void = sweepStalePartials()

    /// Deletes the files in `<caches>/Courier Downloads/Partial` last written more than ``staleAge`` ago: the
    /// partial bytes of downloads that an earlier process kept and never resumed (they are kept in memory only).
    /// Partial files beside a chosen destination cannot be found this way; they are hidden files named
    /// `.<name>.<UUID>.courier-partial`.
    static func sweepStalePartials(olderThan age: TimeInterval = staleAge) {
        let folder = DownloadTarget.downloadsFolder.appendingPathComponent("Partial", isDirectory: true)
        let manager = FileManager.default
        guard let names = try? manager.contentsOfDirectory(atPath: folder.path) else { return }
        let limit = Date(timeIntervalSinceNow: -age)
        for name in names where name.hasSuffix(".courier-partial") {
            let file = folder.appendingPathComponent(name)
            guard let modified = try? manager.attributesOfItem(atPath: file.path)[.modificationDate] as? Date,
                modified < limit
            else { continue }
            try? manager.removeItem(at: file)
        }
    }

    /// The key of a download: its URL and where it goes. The URL stays in memory only.
    static func key(for request: URLRequest, destination: URL?) -> String? {
        guard request.httpMethod ?? "GET" == "GET", request.value(forHTTPHeaderField: "Range") == nil,
            let url = request.url
        else { return nil }
        return url.absoluteString + "\n" + (destination?.standardizedFileURL.path ?? "")
    }

    /// Takes the partial download kept for `key` on the configuration numbered `scope`, if its file still has the
    /// bytes it had.
    func take(_ key: String, scope: UInt64) -> PartialDownload? {
        let partial = kept.withLock { kept -> PartialDownload? in
            guard let index = kept.firstIndex(where: { $0.scope == scope && $0.key == key }) else { return nil }
            return kept.remove(at: index).partial
        }
        guard let partial else { return nil }
        let size = (try? FileManager.default.attributesOfItem(atPath: partial.file.path)[.size] as? NSNumber)?
            .int64Value
        guard size == partial.length else {
            try? FileManager.default.removeItem(at: partial.file)
            return nil
        }
        return partial
    }

    /// Keeps `partial` for the next run of `key` on the configuration numbered `scope`, replacing (and deleting) an
    /// older one; past ``capacity`` for that configuration, its oldest is deleted.
    func keep(_ partial: PartialDownload, for key: String, scope: UInt64) {
        let dropped = kept.withLock { kept -> [PartialDownload] in
            var dropped = kept.filter { $0.scope == scope && $0.key == key }.map(\.partial)
            kept.removeAll { $0.scope == scope && $0.key == key }
            kept.append((scope, key, partial))
            while kept.count(where: { $0.scope == scope }) > Self.capacity,
                let oldest = kept.firstIndex(where: { $0.scope == scope })
            {
                dropped.append(kept.remove(at: oldest).partial)
            }
            return dropped
        }
        for old in dropped where old.file != partial.file { try? FileManager.default.removeItem(at: old.file) }
    }

    /// Deletes the partial downloads of the configuration numbered `scope`: it was released.
    func drop(scope: UInt64) {
        let dropped = kept.withLock { kept -> [PartialDownload] in
            defer { kept.removeAll { $0.scope == scope } }
            return kept.filter { $0.scope == scope }.map(\.partial)
        }
        for partial in dropped { try? FileManager.default.removeItem(at: partial.file) }
    }

    deinit {
        for entry in kept.withLock({ $0 }) { try? FileManager.default.removeItem(at: entry.partial.file) }
    }
}
