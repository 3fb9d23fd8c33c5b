import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How much `logged(…)` writes.
public enum LogLevel: Int, Sendable, Hashable, CaseIterable {
    /// One line per request, plus the request and response headers and a bounded prefix of text bodies.
    case debug
    /// One line per request: method, URL, status, duration, response size, and the error case on failure.
    case info
}

/// What `logged(…)` replaces with `<redacted>`, at every level, besides what it always redacts.
///
/// Always redacted: the `Authorization`, `Proxy-Authorization`, `Cookie` and `Set-Cookie` headers, the
/// configuration's ``NetworkConfiguration/sensitiveHeaders``, the fields of an ``Authenticator``'s credential, and the
/// user info of URLs. Names are compared case-insensitively.
///
/// Besides the names in each set, a name is a secret when, lowercased and without `-` and `_`, it contains one of
/// ``nameFragments``: with the default fragments `newPassword`, `password_confirmation`, `X-Api-Key`,
/// `client-secret` and `X-Auth-Token` are all redacted, as headers, query parameters and body fields. The
/// ``Outbox`` refuses to store the same names (see ``Outbox/init(directory:client:rules:retryPolicy:limits:secrets:paused:rewrite:)``).
public struct LogRedaction: Sendable, Hashable {
    /// More header names whose values are redacted; empty by default.
    public var headers: Set<String>
    /// Query parameter names whose values are redacted; ``commonSecretNames`` by default.
    public var queryParameters: Set<String>
    /// JSON body field names (at any depth) and form field names whose values are redacted; ``commonSecretNames``
    /// by default.
    public var bodyFields: Set<String>
    /// Parts of names that make any header, query parameter or body field name a secret, matched in the name
    /// lowercased with `-` and `_` removed; ``commonSecretFragments`` by default. Set it to `[]` to redact only the
    /// names in the sets.
    public var nameFragments: Set<String> {
        didSet { nameFragments = Self.folded(nameFragments) }
    }

    /// `apikey`, `passwd`, `password`, `secret`, `token`: the fragments of ``nameFragments`` by default.
    public static let commonSecretFragments: Set<String> = ["apikey", "passwd", "password", "secret", "token"]

    /// `access_token`, `api_key`, `client_secret`, `id_token`, `password`, `refresh_token`, `token`.
    public static let commonSecretNames: Set<String> = [
        "access_token", "api_key", "client_secret", "id_token", "password", "refresh_token", "token",
    ]

    /// Creates a redaction list.
    /// - Parameters:
    ///   - headers: More header names to redact; empty by default.
    ///   - queryParameters: Query parameter names to redact; ``commonSecretNames`` by default.
    ///   - bodyFields: JSON and form field names to redact; ``commonSecretNames`` by default.
    ///   - nameFragments: Parts of names that make any name a secret; ``commonSecretFragments`` by default.
    public init(
        headers: Set<String> = [], queryParameters: Set<String> = LogRedaction.commonSecretNames,
        bodyFields: Set<String> = LogRedaction.commonSecretNames,
        nameFragments: Set<String> = LogRedaction.commonSecretFragments
    ) {
        self.headers = Set(headers.map { $0.lowercased() })
        self.queryParameters = Set(queryParameters.map { $0.lowercased() })
        self.bodyFields = Set(bodyFields.map { $0.lowercased() })
        self.nameFragments = Self.folded(nameFragments)
    }

    /// Whether `name` (any case) contains one of ``nameFragments``, ignoring `-` and `_`. Compared as ASCII bytes on
    /// the stack: this runs for every query item of every logged request.
    func matchesFragment(_ name: some StringProtocol) -> Bool {
        guard !nameFragments.isEmpty else { return false }
        let utf8 = name.utf8
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: utf8.count) { buffer -> Bool in
            var count = 0
            for byte in utf8 where byte != UInt8(ascii: "-") && byte != UInt8(ascii: "_") {
                buffer[count] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
                count += 1
            }
            for fragment in nameFragments {
                let fragmentBytes = fragment.utf8
                let length = fragmentBytes.count
                guard length > 0, length <= count else { continue }
                for start in 0...(count - length)
                where fragmentBytes.elementsEqual(UnsafeBufferPointer(rebasing: buffer[start..<(start + length)])) {
                    return true
                }
            }
            return false
        }
    }

    /// `fragments` lowercased, without `-` and `_`, empty ones left out: as ``matchesFragment(_:)`` compares them.
    private static func folded(_ fragments: Set<String>) -> Set<String> {
        Set(fragments.map { $0.lowercased().filter { $0 != "-" && $0 != "_" } }.filter { !$0.isEmpty })
    }

    /// Whether a header of this name holds a secret: one of `sensitiveHeaders` (lowercased), ``headers``, the
    /// always-redacted ones, or a name with a fragment.
    func isSecretHeader(_ name: String, sensitiveHeaders: Set<String>) -> Bool {
        let lowered = name.lowercased()
        return LogRedactor.alwaysRedactedHeaders.contains(lowered) || sensitiveHeaders.contains(lowered)
            || headers.contains(lowered) || matchesFragment(lowered)
    }

    /// Whether a query parameter of this name holds a secret.
    func isSecretQueryParameter(_ name: String) -> Bool {
        queryParameters.contains(name.lowercased()) || matchesFragment(name)
    }

    /// Whether a JSON or form field of this name holds a secret.
    func isSecretField(_ name: String) -> Bool {
        bodyFields.contains(name.lowercased()) || matchesFragment(name)
    }

    /// `json` (as `JSONSerialization` reads it) with the value of every field these rules call a secret, at any
    /// depth, replaced by `replacement`; the names of those fields are added to `fields`. What ``LoggingClient`` logs
    /// of a body, and what the ``Outbox`` refuses to store.
    func redactingJSON(_ json: Any, with replacement: String, fields: inout [String]) -> Any {
        if let object = json as? [String: Any] {
            var result: [String: Any] = [:]
            for (key, child) in object {
                if isSecretField(key) {
                    result[key] = replacement
                    fields.append(key)
                } else {
                    result[key] = redactingJSON(child, with: replacement, fields: &fields)
                }
            }
            return result
        }
        if let array = json as? [Any] {
            return array.map { redactingJSON($0, with: replacement, fields: &fields) }
        }
        return json
    }
}

/// The redaction rules of one `logged(…)` decorator, with every name lowercased.
struct LogRedactor: Sendable {
    static let redacted = "<redacted>"
    static let alwaysRedactedHeaders: Set<String> = Redaction.alwaysSensitiveHeaders.union(["set-cookie"])

    let rules: LogRedaction
    /// Lowercased names of the headers the client at the bottom of the stack reported as sensitive.
    private(set) var sensitiveHeaders: Set<String>

    init(_ redaction: LogRedaction, sensitiveHeaders: Set<String>) {
        rules = redaction
        self.sensitiveHeaders = Set(sensitiveHeaders.map { $0.lowercased() })
    }

    /// Whether every header value is redacted except those of ``harmlessHeaders``: when the sensitive names are
    /// unknown.
    private(set) var redactsUnknownHeaders = false

    /// Header fields whose values are never secrets: shown even when the configuration's sensitive names are unknown.
    static let harmlessHeaders: Set<String> = [
        "accept", "accept-encoding", "accept-language", "cache-control", "content-encoding", "content-length",
        "content-type", "date", "etag", "idempotency-key", "if-match", "if-modified-since", "if-none-match",
        "last-modified", "location", "retry-after", "server", "user-agent", "vary",
    ]

    /// These rules, redacting every header value but those of ``harmlessHeaders``.
    func showingOnlyHarmlessHeaders() -> LogRedactor {
        var redactor = self
        redactor.redactsUnknownHeaders = true
        return redactor
    }

    /// These rules, also redacting the header names in `names` (lowercased).
    func adding(sensitiveHeaders names: Set<String>) -> LogRedactor {
        guard !names.isSubset(of: sensitiveHeaders) else { return self }
        var redactor = self
        redactor.sensitiveHeaders.formUnion(names)
        return redactor
    }

    func isSecretHeader(_ name: String) -> Bool {
        if redactsUnknownHeaders && !Self.harmlessHeaders.contains(name.lowercased()) { return true }
        return rules.isSecretHeader(name, sensitiveHeaders: sensitiveHeaders)
    }

    func header(name: String, value: String) -> String {
        isSecretHeader(name) ? Self.redacted : value
    }

    /// The header fields as `name: value` lines, sorted by name, values redacted.
    func headerLines(_ fields: [(name: String, value: String)], prefix: String) -> [String] {
        fields.sorted { $0.name.lowercased() < $1.name.lowercased() }.map { field in
            "\(prefix)\(field.name): \(header(name: field.name, value: field.value).escapedForLog)"
        }
    }

    /// A base URL as it is written in logs: user info and the named query values redacted. Made once per base URL
    /// (once per client for the configured one), so that formatting an entry only appends.
    struct LoggedBase: Sendable {
        /// Up to the query, without trailing slashes: a path is appended after one `/`.
        let prefix: String
        /// Up to the query, as given: used when the path is empty.
        let prefixAsGiven: String
        /// The base URL's own query, redacted; empty if it has none.
        let query: String
    }

    func loggedBase(_ base: BaseURL) -> LoggedBase {
        var query = ""
        if let baseQuery = base.query, !baseQuery.isEmpty {
            for (index, pair) in baseQuery.split(separator: "&", omittingEmptySubsequences: false).enumerated() {
                if index > 0 { query += "&" }
                let name = pair.prefix { $0 != "=" }
                let decodedName = String(name).removingPercentEncoding ?? String(name)
                if name.count == pair.count {
                    query += pair.isEmpty ? "" : Self.redacted  // A bare name may itself be a token.
                } else if rules.isSecretQueryParameter(decodedName) {
                    query += name + "=" + Self.redacted
                } else {
                    query += pair
                }
            }
        }
        return LoggedBase(
            prefix: String(Self.redactingUserInfo(base.prefix)),
            prefixAsGiven: String(Self.redactingUserInfo(base.prefixAsGiven)), query: query)
    }

    /// `scheme://host:port/path?query` from a base URL, a request path and query items, with user info and the
    /// named query values redacted. Built as text: nothing is parsed or resolved.
    func url(base: LoggedBase?, path: String?, queryItems: [URLQueryItem]?) -> String {
        var text = UTF8Text(capacity: Self.urlCapacity(base: base, path: path, queryItems: queryItems))
        appendURL(base: base, path: path, queryItems: queryItems, to: &text)
        return text.string
    }

    /// Room for ``url(base:path:queryItems:)`` as it usually comes out (every path byte encoded would be three times
    /// the path: the text grows then).
    static func urlCapacity(base: LoggedBase?, path: String?, queryItems: [URLQueryItem]?) -> Int {
        (base?.prefix.utf8.count ?? 0) + (base?.query.utf8.count ?? 0) + (path?.utf8.count ?? 0) + 8
            + (queryItems?.count ?? 0) * 24
    }

    /// Appends ``url(base:path:queryItems:)`` to `text`.
    func appendURL(base: LoggedBase?, path: String?, queryItems: [URLQueryItem]?, to text: inout UTF8Text) {
        let relativePath = (try? BaseURL.relative(path ?? "")) ?? Substring(path ?? "")
        if let base {
            text.append(relativePath.isEmpty ? base.prefixAsGiven : base.prefix)
        }
        if !relativePath.isEmpty {
            text.append(byte: UInt8(ascii: "/"))
            PercentEncoding.append(relativePath, keeping: .pathCharacters, to: &text)
        }
        var separator = UInt8(ascii: "?")
        if let base, !base.query.isEmpty {
            text.append(byte: separator)
            text.append(base.query)
            separator = UInt8(ascii: "&")
        }
        for item in queryItems ?? [] {
            text.append(byte: separator)
            separator = UInt8(ascii: "&")
            // A bare name (`?abc123`) may itself be a token: redacted, as in error descriptions.
            guard let value = item.value else {
                text.append(Self.redacted)
                continue
            }
            PercentEncoding.append(item.name, keeping: .unreserved, to: &text)
            text.append(byte: UInt8(ascii: "="))
            if rules.isSecretQueryParameter(item.name) {
                text.append(Self.redacted)
            } else {
                PercentEncoding.append(value, keeping: .unreserved, to: &text)
            }
        }
    }

    /// `https://user:secret@host` as `https://<redacted>@host`.
    static func redactingUserInfo(_ prefix: Substring) -> Substring {
        let utf8 = prefix.utf8
        guard let colon = utf8.firstIndex(of: UInt8(ascii: ":")), utf8[colon...].starts(with: "://".utf8) else {
            return prefix
        }
        let authorityStart = utf8.index(colon, offsetBy: 3)
        let authorityEnd = utf8[authorityStart...].firstIndex(of: UInt8(ascii: "/")) ?? utf8.endIndex
        guard let at = utf8[authorityStart..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) else { return prefix }
        return prefix[..<authorityStart] + Self.redacted + prefix[at...]
    }

    /// The secrets in redacted header values and query values of a request, to scrub from bodies that repeat them
    /// (an echo, an error page): each value, and for `Bearer abc` also `abc`. Values under 4 characters are left out,
    /// since replacing them would garble the body without protecting anything.
    ///
    /// Each secret is also scrubbed as JSON writes it inside a string (`a/b` as `a\/b`, `"` as `\"`), and as a URL
    /// or form writes it percent-encoded, so an echo in another encoding is caught too.
    func secrets(headers: [String: String]?, queryItems: [URLQueryItem]?, formItems: [URLFormItem]? = nil) -> [String] {
        var secrets: [String] = []
        for (name, value) in headers ?? [:] where isSecretHeader(name) {
            secrets.append(value)
            if let space = value.lastIndex(of: " ") { secrets.append(String(value[value.index(after: space)...])) }
        }
        for item in queryItems ?? [] where item.value == nil || rules.isSecretQueryParameter(item.name) {
            secrets.append(item.value ?? item.name)
        }
        for item in formItems ?? [] where rules.isSecretField(item.name) {
            if let value = item.value { secrets.append(value) }
        }
        var variants: [String] = []
        for secret in secrets where secret.count >= 4 {
            variants.append(secret)
            let json = Self.jsonEscaped(secret)
            if json != secret { variants.append(json) }
            var encoded = ""
            PercentEncoding.append(secret, keeping: .unreserved, to: &encoded)
            if encoded != secret { variants.append(encoded) }
        }
        // Longest first, so that `Bearer abc` is replaced whole before `abc`.
        return Array(Set(variants)).sorted { $0.count > $1.count }
    }

    /// `text` as it appears inside a JSON string written by common encoders (`/` escaped as `\/`).
    private static func jsonEscaped(_ text: String) -> String {
        text.replacingScalars {
            switch $0 {
            case "\\": "\\\\"
            case "\"": "\\\""
            case "/": "\\/"
            default: nil
            }
        }
    }

    /// A bounded, printable prefix of a body with the named JSON or form fields redacted, and any of `secrets`
    /// replaced; `nil` for an empty body.
    func body(_ data: Data, limit: Int, scrubbing secrets: [String] = []) -> String? {
        guard !data.isEmpty else { return nil }
        var data = data
        if !secrets.isEmpty, var text = String(data: data, encoding: .utf8), secrets.contains(where: text.contains) {
            for secret in secrets { text = text.replacingOccurrences(of: secret, with: Self.redacted) }
            data = Data(text.utf8)
        }
        if !rules.bodyFields.isEmpty || !rules.nameFragments.isEmpty {
            if let json = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) {
                var redactedFields: [String] = []
                let redactedJSON = rules.redactingJSON(json, with: Self.redacted, fields: &redactedFields)
                if !redactedFields.isEmpty {
                    guard
                        let encoded = try? JSONSerialization.data(
                            withJSONObject: redactedJSON, options: [.sortedKeys, .fragmentsAllowed])
                    else { return "<\(data.count) bytes, not shown>" }
                    data = encoded
                }
            } else if let form = redactedForm(data) {
                data = form
            } else if mentionsField(data) {
                // Not JSON, not a form, and it names a field to redact: it cannot be shown safely.
                return "<\(data.count) bytes, not shown: it may hold a redacted field>"
            }
        }
        var prefix = data.prefix(limit)
        var text = String(data: prefix, encoding: .utf8)
        // A prefix may end inside a multi-byte character: drop up to 3 bytes to find a boundary.
        var dropped = 0
        while text == nil, dropped < 3, data.count > limit, !prefix.isEmpty {
            prefix = prefix.dropLast()
            dropped += 1
            text = String(data: prefix, encoding: .utf8)
        }
        guard let text, !text.unicodeScalars.contains(where: Self.isBinary) else {
            return "<\(data.count) bytes of binary data>"
        }
        let shown = text.escapedForLog
        return data.count > prefix.count ? "\(shown)… (\(data.count) bytes in all)" : shown
    }

    private static func isBinary(_ scalar: Unicode.Scalar) -> Bool {
        (scalar.value < 0x20 && scalar != "\n" && scalar != "\r" && scalar != "\t") || scalar.value == 0x7F
    }

    /// A form body (`a=1&b=2`) with the named fields' values redacted; `nil` if `data` does not look like one.
    private func redactedForm(_ data: Data) -> Data? {
        guard let text = String(data: data, encoding: .utf8), !text.isEmpty,
            text.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "{" && $0 != "[" && $0 != "\"" })
        else { return nil }
        let pairs = text.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            let name = pair.prefix { $0 != "=" }
            let decoded = String(name).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(name)
            guard name.count < pair.count, rules.isSecretField(decoded) else { return String(pair) }
            return name + "=" + Self.redacted
        }
        return Data(pairs.joined(separator: "&").utf8)
    }

    private func mentionsField(_ data: Data) -> Bool {
        let text = String(decoding: data, as: UTF8.self).lowercased()
        let folded = text.filter { $0 != "-" && $0 != "_" }
        return rules.bodyFields.contains { text.contains($0) } || rules.nameFragments.contains { folded.contains($0) }
    }
}

extension StringProtocol {
    /// The text on one line: CR, LF and tab written as `\r`, `\n`, `\t`.
    var escapedForLog: String {
        replacingScalars {
            switch $0 {
            case "\n": "\\n"
            case "\r": "\\r"
            case "\t": "\\t"
            default: nil
            }
        }
    }

    /// The text with each Unicode scalar for which `replacement` returns text replaced by that text: the one loop
    /// behind the escapes of log lines, JSON strings and multipart names.
    func replacingScalars(_ replacement: (Unicode.Scalar) -> String?) -> String {
        var result = ""
        result.reserveCapacity(utf8.count)
        for scalar in unicodeScalars {
            if let text = replacement(scalar) { result += text } else { result.unicodeScalars.append(scalar) }
        }
        return result
    }
}
