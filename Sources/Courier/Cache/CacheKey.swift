import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a stored response is filed under: the request's URL and its credential partition.
///
/// - `url` is the absolute URL without its fragment (the fragment never reaches the server). `GET` and `HEAD` share
///   it: only `GET` responses are stored, and a `HEAD` is answered from (and freshens) the stored `GET`.
/// - `partition` is empty for a request that sends no credential and to which the transport adds nothing; otherwise
///   it is a salted SHA-256 digest of what identifies the sender on the wire: every sensitive header field the request
///   carries (`Authorization`, `Cookie`, `Proxy-Authorization`, the configuration's
///   ``NetworkConfiguration/sensitiveHeaders`` and the credential's own fields), every header field the transport adds
///   (a session's `httpAdditionalHeaders`, sensitive or not), and the transport's other ``RequestAdditions`` (the
///   cookies of its cookie storage, its stored credentials), names and values. A response fetched with one credential
///   is therefore never served to a request with another one, or with none, however the credential reached the wire.
/// - On disk a file is named by a digest of each part (`<url digest>-<partition digest>`), so neither the URL (whose
///   query may carry a token) nor a credential is written in the clear.
struct CacheKey: Hashable, Sendable {
    let url: String
    let partition: String

    /// The key of `wire`, a request as the server receives it (``RequestAdditions/applied(to:)``), which `additions`
    /// added to; `sensitiveHeaders` lowercased. `nil` without a URL.
    init?(_ wire: URLRequest, additions: RequestAdditions, sensitiveHeaders: Set<String>, salt: String) {
        guard let url = wire.url else { return nil }
        self.url = Self.address(of: url)
        var fields: [String: String] = [:]
        for (name, value) in wire.allHTTPHeaderFields ?? [:] where sensitiveHeaders.contains(name.lowercased()) {
            fields[name.lowercased()] = value
        }
        for name in additions.headerFields.keys {
            if let value = wire.value(forHTTPHeaderField: name) { fields[name.lowercased()] = value }
        }
        guard !fields.isEmpty || !additions.credentials.isEmpty else {
            partition = ""
            return
        }
        // Each part prefixed with its length: no two different sets of parts read the same.
        let parts = (fields.map { "h\u{0}\($0.key)\u{0}\($0.value)" } + additions.credentials.map { "c\u{0}" + $0 })
            .sorted()
            .map { "\($0.utf8.count):\($0)" }
        partition = SHA256Digest.hex(salt + "\n" + parts.joined(separator: "\n"))
    }

    /// What responses for `url` are filed under: its absolute string without the fragment (searched as bytes: a
    /// search by `Character` cost 13k instructions a lookup).
    static func address(of url: URL) -> String {
        let text = url.absoluteString
        guard let hash = text.utf8.firstIndex(of: UInt8(ascii: "#")) else { return text }
        return String(text[..<hash])
    }

    /// A new random salt: 32 hexadecimal digits (128 bits).
    static func newSalt() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    init(url: String, partition: String) {
        self.url = url
        self.partition = partition
    }

    /// The digest of `url` the file names start with.
    static func urlDigest(_ url: String, salt: String) -> String {
        String(SHA256Digest.hex(salt + "\n" + url).prefix(40))
    }

    /// The name of this key's file on disk.
    func fileName(salt: String) -> String {
        let partitionPart = partition.isEmpty ? "public" : String(partition.prefix(40))
        return Self.urlDigest(url, salt: salt) + "-" + partitionPart + DiskStore.fileExtension
    }
}
