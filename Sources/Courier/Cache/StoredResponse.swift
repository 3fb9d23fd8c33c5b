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

    /// The value of the field `name` (ASCII case-insensitive), repeated fields joined by ", ".
    func header(_ name: String) -> String? {
        var found: String?
        for field in headers where Self.sameName(field.name, name) {
            found = found.map { $0 + ", " + field.value } ?? field.value
        }
        return found
    }

    /// Whether two field names are equal ignoring ASCII case, without Foundation's locale-aware comparison.
    static func sameName(_ a: String, _ b: String) -> Bool {
        var left = a.utf8.makeIterator()
        var right = b.utf8.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return true
            case (let x?, let y?):
                if x == y { continue }
                let lowerX = x >= 0x41 && x <= 0x5A ? x | 0x20 : x
                let lowerY = y >= 0x41 && y <= 0x5A ? y | 0x20 : y
                if lowerX != lowerY { return false }
            default: return false
            }
        }
    }

    /// The bytes this response holds in memory, for the cache's capacity: the body, each header field and each
    /// `Vary` value, with what it takes to hold each (an array slot, a dictionary slot, a string's heap storage), and
    /// the entry's own bookkeeping. A response of many small fields costs far more than its bytes on the wire.
    var cost: Int {
        var total = Self.entryOverhead + body.count
        for field in headers { total += Self.fieldOverhead + field.name.utf8.count + field.value.utf8.count }
        for (name, value) in varyValues { total += Self.varyOverhead + name.utf8.count + value.utf8.count }
        return total
    }

    /// What an entry takes besides its fields and body: the response, its index node and key, its slot in the index.
    static let entryOverhead = 512
    /// What a header field takes besides its bytes: its slot in the array and its strings' heap storage.
    static let fieldOverhead = 64
    /// What a `Vary` value takes besides its bytes: its dictionary slot and its strings' heap storage.
    static let varyOverhead = 128

    /// Parsed `Cache-Control`.
    var cacheControl: CacheControl { CacheControl(header("Cache-Control")) }

    /// The head served for `url`, with `Age` set to `age` seconds.
    func head(for url: URL, age: Int) -> HTTPURLResponse? {
        var fields: [String: String] = [:]
        // Sorted by lowercased name (see fields(of:)): a repeated field follows its first occurrence.
        var previous: String?
        for field in headers where !Self.sameName(field.name, "Age") {
            if let name = previous, Self.sameName(name, field.name), let value = fields[name] {
                fields[name] = value + ", " + field.value
            } else {
                fields[field.name] = field.value
                previous = field.name
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
