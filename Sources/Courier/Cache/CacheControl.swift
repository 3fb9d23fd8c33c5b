import Foundation

/// The `Cache-Control` directives of a request or a response (RFC 9111, 5.2), parsed once.
///
/// Directive names are case-insensitive; a delta-seconds argument that is not a non-negative integer is treated as
/// absent for `max-age` of a response (which then has no explicit lifetime from it) and as 0 for request freshness
/// bounds, as RFC 9111 4.2.1 asks for invalid values. A duplicated directive keeps its first value.
struct CacheControl: Sendable, Equatable {
    var noStore = false
    /// `no-cache`, with or without field names: Courier validates before serving in both cases (a cache may always
    /// validate).
    var noCache = false
    var mustRevalidate = false
    var proxyRevalidate = false
    var isPublic = false
    var isPrivate = false
    var onlyIfCached = false
    var immutable = false
    /// `must-understand`: store only a status the cache understands, and then `no-store` does not apply.
    var mustUnderstand = false
    var maxAge: Int?
    /// Whether `max-age` was present with an invalid value (a response so marked is stale).
    var invalidMaxAge = false
    /// `max-stale` without a value accepts any staleness.
    var maxStale: Int?
    var maxStaleAny = false
    var minFresh: Int?
    var staleWhileRevalidate: Int?
    var staleIfError: Int?

    /// Parses every `Cache-Control` field value joined by commas (`HTTPURLResponse` joins repeated fields so).
    init(_ value: String?) {
        guard let value, !value.isEmpty else { return }
        var seen = Set<String>()
        for part in Self.split(value) {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = pieces[0].trimmingCharacters(in: .whitespaces).lowercased()
            guard !name.isEmpty, seen.insert(name).inserted else { continue }
            var argument: String?
            if pieces.count == 2 {
                var raw = pieces[1].trimmingCharacters(in: .whitespaces)
                if raw.count >= 2, raw.hasPrefix("\""), raw.hasSuffix("\"") { raw = String(raw.dropFirst().dropLast()) }
                argument = raw
            }
            let seconds = argument.flatMap(Self.deltaSeconds)
            switch name {
            case "no-store": noStore = true
            case "no-cache": noCache = true
            case "must-revalidate": mustRevalidate = true
            case "proxy-revalidate": proxyRevalidate = true
            case "public": isPublic = true
            case "private": isPrivate = true
            case "only-if-cached": onlyIfCached = true
            case "immutable": immutable = true
            case "must-understand": mustUnderstand = true
            case "max-age":
                maxAge = seconds
                invalidMaxAge = seconds == nil
            case "max-stale":
                if argument == nil { maxStaleAny = true } else { maxStale = seconds ?? 0 }
            case "min-fresh": minFresh = seconds ?? 0
            case "stale-while-revalidate": staleWhileRevalidate = seconds
            case "stale-if-error": staleIfError = seconds
            default: break
            }
        }
    }

    /// A delta-seconds value (RFC 9111 1.2.2): digits only; a value too large for `Int` is the largest one.
    static func deltaSeconds(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text) ?? Int(Int32.max)
    }

    /// Splits a list on commas outside quoted strings.
    static func split(_ value: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var quoted = false
        for character in value {
            if character == "\"" { quoted.toggle() }
            if character == ",", !quoted {
                parts.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        parts.append(current)
        return parts.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}
