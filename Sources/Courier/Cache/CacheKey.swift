import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a stored response is filed under: the request's URL and its credential partition.
///
/// - `url` is the absolute URL without its fragment (the fragment never reaches the server). `GET` and `HEAD` share
///   it: only `GET` responses are stored, and a `HEAD` is answered from (and freshens) the stored `GET`.
/// - `partition` is empty for a request without credentials; otherwise it is a salted SHA-256 digest of every
///   sensitive header field the request carries (`Authorization`, `Cookie`, `Proxy-Authorization`, the
///   configuration's ``NetworkConfiguration/sensitiveHeaders`` and the credential's own fields), names and values. A
///   response fetched with one credential is therefore never served to a request with another one, or with none.
/// - On disk a file is named by a digest of each part (`<url digest>-<partition digest>`), so neither the URL (whose
///   query may carry a token) nor a credential is written in the clear.
struct CacheKey: Hashable, Sendable {
    let url: String
    let partition: String

    /// The key of `request`, with `sensitiveHeaders` lowercased; `nil` without a URL.
    init?(_ request: URLRequest, sensitiveHeaders: Set<String>, salt: String) {
        guard let url = request.url else { return nil }
        var text = url.absoluteString
        if let hash = text.firstIndex(of: "#") { text = String(text[..<hash]) }
        self.url = text
        let credentials = (request.allHTTPHeaderFields ?? [:])
            .filter { sensitiveHeaders.contains($0.key.lowercased()) }
            .map { "\($0.key.lowercased())\u{0}\($0.value)" }
            .sorted()
        partition = credentials.isEmpty ? "" : SHA256Digest.hex(salt + "\n" + credentials.joined(separator: "\n"))
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
