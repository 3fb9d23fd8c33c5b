import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One response kept by a ``ResponseCache``: what the server sent (status, header fields but `Set-Cookie`, body), when
/// it was asked for and when it arrived (for its age), and what selects it (the `Vary` request fields).
///
/// It holds no URL and no credential: the key finds it, and on disk the key is only a digest (see ``CacheKey``).
struct StoredResponse: Sendable, Codable, Equatable {
    var status: Int
    /// The header fields as received (`Set-Cookie` removed), in order, name case kept.
    var headers: [HeaderField]
    var body: Data
    /// When the request that fetched or last validated it was sent, in seconds since 1970.
    var requestTime: TimeInterval
    /// When its head (or the validating 304) arrived, in seconds since 1970.
    var responseTime: TimeInterval
    /// The request's values of the fields its `Vary` names, lowercased name → digest of the normalised value (empty
    /// string digest when absent): compared, never stored in the clear.
    var varyValues: [String: String]

    struct HeaderField: Sendable, Codable, Equatable {
        var name: String
        var value: String
    }

    /// The value of the field `name` (case-insensitive), repeated fields joined by ", ".
    func header(_ name: String) -> String? {
        let values = headers.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map(\.value)
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    /// The cache's own accounting of its size: the body plus the header bytes.
    var cost: Int {
        body.count + headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 } + 64
    }

    /// Parsed `Cache-Control`.
    var cacheControl: CacheControl { CacheControl(header("Cache-Control")) }

    /// The head served for `url`, with `Age` set to `age` seconds.
    func head(for url: URL, age: Int) -> HTTPURLResponse? {
        var fields: [String: String] = [:]
        for field in headers where field.name.caseInsensitiveCompare("Age") != .orderedSame {
            if let existing = fields.first(where: { $0.key.caseInsensitiveCompare(field.name) == .orderedSame }) {
                fields[existing.key] = existing.value + ", " + field.value
            } else {
                fields[field.name] = field.value
            }
        }
        fields["Age"] = String(age)
        return HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: fields)
    }

    /// The fields a cache never keeps: `Set-Cookie` (Courier's rule) and the hop-by-hop fields (RFC 9111, 3.1),
    /// besides the ones a `Connection` field names.
    static let neverStored: Set<String> = [
        "set-cookie", "set-cookie2", "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding",
        "upgrade",
    ]

    /// The header fields of `head`, minus the ones a cache never keeps.
    static func fields(of head: HTTPURLResponse) -> [HeaderField] {
        var dropped = neverStored
        if let connection = head.value(forHTTPHeaderField: "Connection") {
            dropped.formUnion(CacheControl.split(connection).map { $0.lowercased() })
        }
        return head.allHeaderFields.compactMap { key, value -> HeaderField? in
            guard let name = key as? String, let value = value as? String, !dropped.contains(name.lowercased()) else {
                return nil
            }
            return HeaderField(name: name, value: value)
        }.sorted { $0.name.lowercased() < $1.name.lowercased() }
    }
}
