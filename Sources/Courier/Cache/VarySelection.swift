import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How `Vary` selects a stored response (RFC 9111, 4.1): the request's values of the fields a response's `Vary`
/// names, kept with the response (``StoredResponse/varyValues``) and compared with a later request's.
///
/// - A value is kept as a salted SHA-256 digest of its normalised form (whitespace around commas and runs of spaces
///   collapsed), `-` when the request has no such field: no value is kept in the clear, and a digest on disk cannot
///   be matched against a list of guesses without the cache's salt.
/// - A field of the key's partition (a sensitive one: `Authorization`, `Cookie`…) is kept as `=`, with no digest at
///   all: the key already holds it, so every request that reaches the response sends the same value.
/// - A lookup digests one value per stored name, so its cost is bounded by ``ResponseCache/maximumVaryFields``
///   (a response whose `Vary` names more is not stored), whatever a server sent.
struct VarySelection: Sendable {
    /// The salt of the cache (the disk store's, or the process's).
    let salt: String
    /// Lowercased names of the fields the key's partition holds.
    let partitioned: Set<String>

    /// The marker of a field the key holds.
    static let inKey = "="
    /// The marker of a field the request does not have.
    static let absent = "-"

    /// The request's values of the fields `vary` names, for ``StoredResponse/varyValues``: `[:]` without `Vary`,
    /// `nil` when it may not be stored (``CachePolicy/varyNames(_:)``).
    func values(_ vary: String?, of request: URLRequest) -> [String: String]? {
        guard let vary else { return [:] }
        guard let names = CachePolicy.varyNames(vary) else { return nil }
        var values: [String: String] = [:]
        for name in names { values[name] = value(of: name, in: request) }
        return values
    }

    /// Whether `stored` was selected by a request like `request`: the same value of each field its `Vary` named.
    func matches(_ stored: StoredResponse, _ request: URLRequest) -> Bool {
        stored.varyValues.allSatisfy { value(of: $0.key, in: request) == $0.value }
    }

    /// What is kept of the field `name` (lowercased) of `request`.
    private func value(of name: String, in request: URLRequest) -> String {
        if partitioned.contains(name) { return Self.inKey }
        guard let raw = request.value(forHTTPHeaderField: name) else { return Self.absent }
        let normalised = CacheControl.split(raw).map {
            $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
        }
        .joined(separator: ",")
        return SHA256Digest.hex(salt + "\nvary\n" + name + "\n" + normalised)
    }
}
