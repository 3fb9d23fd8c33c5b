import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Turning a `NetworkRequest` into a `URLRequest`: URL building, percent-encoding, header validation and the body.
// This is the per-request hot path, so the URL is built as one string and parsed once (no URLComponents round trip).

/// A base URL split once into the parts every request URL is built from.
struct BaseURL: Sendable {
    let url: URL
    /// The absolute string up to the query, without trailing slashes: a path is appended after one `/`.
    let prefix: Substring
    /// The absolute string up to the query, as given: used when the path is empty.
    let prefixAsGiven: Substring
    /// The base URL's own query, kept in front of the request's query items.
    let query: Substring?
    /// Why the URL cannot serve as a base, if it cannot.
    let invalidReason: String?
    /// `scheme://host:port` of the URL (see ``Origin/of(_:)``).
    let origin: String?

    init(_ url: URL) {
        self.url = url
        self.origin = Origin.of(url)
        let text = url.absoluteString
        let beforeFragment = text[..<(text.firstIndex(of: "#") ?? text.endIndex)]
        let queryMark = beforeFragment.firstIndex(of: "?")
        prefixAsGiven = beforeFragment[..<(queryMark ?? beforeFragment.endIndex)]
        query = queryMark.map { beforeFragment[beforeFragment.index(after: $0)...] }
        var trimmed = prefixAsGiven
        while trimmed.hasSuffix("/") && !trimmed.hasSuffix("://") { trimmed.removeLast() }
        prefix = trimmed
        if url.scheme == nil || (url.host ?? "").isEmpty {
            invalidReason = "the base URL \(String(reflecting: Redaction.url(url))) has no scheme or no host"
        } else if !supportsIPv6LiteralHosts && url.host?.contains(":") == true {
            invalidReason =
                "the base URL \(String(reflecting: Redaction.url(url))) has an IPv6 literal host, which URLSession "
                + "cannot send to on Linux (it fails with badURL); use a host name, such as localhost"
        } else {
            invalidReason = nil
        }
    }

    /// The base URL, plus `path` after exactly one `/`, plus the percent-encoded query items.
    func appending(path: String?, queryItems: [URLQueryItem]?) throws(NetworkClientError) -> URL {
        if let invalidReason { throw .invalidURL(reason: invalidReason) }
        let relativePath = try Self.relative(path ?? "")
        let queryItems = queryItems ?? []
        if relativePath.isEmpty && queryItems.isEmpty { return url }

        var text = ""
        text.reserveCapacity(prefixAsGiven.utf8.count + relativePath.utf8.count * 3 + queryItems.count * 32 + 2)
        if relativePath.isEmpty {
            text += prefixAsGiven
        } else {
            text += prefix
            text += "/"
            PercentEncoding.append(relativePath, keeping: .pathCharacters, to: &text)
        }
        var separator = "?"
        if let query, !query.isEmpty {
            text += separator
            text += query
            separator = "&"
        }
        if !queryItems.isEmpty {
            text += separator
            FormEncoding.appendQuery(queryItems, to: &text)
        }
        guard let url = URL(string: text) else {
            throw .invalidURL(reason: "Foundation rejected the URL built for path \(String(reflecting: path ?? ""))")
        }
        return url
    }

    /// `path` without its leading slashes; a `.` or `..` segment is an error, since it would be resolved away.
    static func relative(_ path: String) throws(NetworkClientError) -> Substring {
        var path = path
        // One pass over the contiguous UTF-8 bytes: a loop over `utf8[start...]` costs several times as much.
        let (start, dotSegment) = path.withUTF8 { bytes -> (Int?, Int) in
            guard let start = bytes.firstIndex(where: { $0 != UInt8(ascii: "/") }) else { return (nil, 0) }
            var dots = 0
            var segmentIsOnlyDots = true
            /// The dots of the segment that just ended when it is `.` or `..`, else 0.
            func dotSegment() -> Int { segmentIsOnlyDots && (dots == 1 || dots == 2) ? dots : 0 }
            for byte in bytes[start...] {
                if byte == UInt8(ascii: "/") {
                    if dotSegment() > 0 { return (start, dots) }
                    dots = 0
                    segmentIsOnlyDots = true
                } else if byte == UInt8(ascii: ".") {
                    dots += 1
                } else {
                    segmentIsOnlyDots = false
                }
            }
            return (start, dotSegment())
        }
        if dotSegment > 0 {
            throw .invalidURL(
                reason:
                    "the path \(String(reflecting: path)) has a \"\(String(repeating: ".", count: dotSegment))\" "
                    + "segment, which would be resolved away before sending; remove it")
        }
        guard let start else { return "" }
        return path[path.utf8.index(path.startIndex, offsetBy: start)...]
    }
}

/// Percent-encoding of UTF-8 bytes outside an allowed set.
enum PercentEncoding {
    /// A set of ASCII bytes.
    struct ByteSet {
        private let low: UInt64
        private let high: UInt64

        init(_ characters: String) {
            var low: UInt64 = 0
            var high: UInt64 = 0
            for byte in characters.utf8 {
                if byte < 64 { low |= 1 << UInt64(byte) } else { high |= 1 << UInt64(byte - 64) }
            }
            self.low = low
            self.high = high
        }

        @inline(__always)
        func contains(_ byte: UInt8) -> Bool {
            byte < 64 ? low & (1 << UInt64(byte)) != 0 : byte < 128 && high & (1 << UInt64(byte - 64)) != 0
        }

        /// RFC 3986 unreserved characters: never need encoding anywhere.
        static let unreserved = ByteSet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        /// What may stay bare in a path: unreserved, `/`, and the sub-delimiters servers never decode specially.
        /// `+` and `;` are encoded, since some servers read them as a space or a parameter separator.
        static let pathCharacters = ByteSet(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/:@!$&'()*,=")
    }

    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// Whether `text` needs no encoding: one scan of its contiguous bytes, the usual case.
    private static func isBare<Text: StringProtocol>(_ text: Text, keeping allowed: ByteSet) -> Bool {
        let utf8 = text.utf8
        return utf8.withContiguousStorageIfAvailable { bytes in !bytes.contains(where: { !allowed.contains($0) }) }
            ?? !utf8.contains(where: { !allowed.contains($0) })
    }

    /// Appends `text` to `output` with every UTF-8 byte outside `allowed` written as `%XX`.
    static func append<Text: StringProtocol>(_ text: Text, keeping allowed: ByteSet, to output: inout String) {
        guard !isBare(text, keeping: allowed) else {
            output += text
            return
        }
        var encoded = UTF8Text(capacity: text.utf8.count * 3)
        encode(text, keeping: allowed, to: &encoded)
        output += encoded.string
    }

    /// Appends `text` to `output` with every UTF-8 byte outside `allowed` written as `%XX`.
    static func append<Text: StringProtocol>(_ text: Text, keeping allowed: ByteSet, to output: inout UTF8Text) {
        guard !isBare(text, keeping: allowed) else {
            output.append(text)
            return
        }
        encode(text, keeping: allowed, to: &output)
    }

    private static func encode<Text: StringProtocol>(_ text: Text, keeping allowed: ByteSet, to output: inout UTF8Text)
    {
        for byte in text.utf8 {
            if allowed.contains(byte) {
                output.append(byte: byte)
            } else {
                output.append(byte: UInt8(ascii: "%"))
                output.append(byte: hexDigits[Int(byte >> 4)])
                output.append(byte: hexDigits[Int(byte & 0xF)])
            }
        }
    }
}

/// Text written as UTF-8 bytes and made a `String` once. A log line is a dozen short pieces, and appending each to a
/// `String` checked its uniqueness, capacity and ASCII flags every time.
struct UTF8Text {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) {
        bytes.reserveCapacity(capacity)
    }

    mutating func append<Text: StringProtocol>(_ text: Text) {
        let utf8 = text.utf8
        if utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil {
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func append(byte: UInt8) {
        bytes.append(byte)
    }

    /// Appends `number` in decimal, digit by digit: `String(number)` went through `description` and a string of its
    /// own.
    mutating func append(_ number: Int) {
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = number.magnitude
        var divisor: UInt = 1
        while magnitude / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude / divisor))
            magnitude %= divisor
            divisor /= 10
        }
    }

    var string: String { String(decoding: bytes, as: UTF8.self) }
}

/// `name=value&name=value` encoding, shared by query strings and form bodies.
enum FormEncoding {
    /// Appends the query items; an item with a `nil` value is written as a bare name.
    static func appendQuery(_ items: [URLQueryItem], to text: inout String) {
        for (index, item) in items.enumerated() {
            if index > 0 { text += "&" }
            PercentEncoding.append(item.name, keeping: .unreserved, to: &text)
            if let value = item.value {
                text += "="
                PercentEncoding.append(value, keeping: .unreserved, to: &text)
            }
        }
    }

    /// The `application/x-www-form-urlencoded` body; items with a `nil` value are left out.
    static func body(_ items: [URLFormItem]) -> Data {
        var text = ""
        appendQuery(items.compactMap { item in item.value.map { URLQueryItem(name: item.name, value: $0) } }, to: &text)
        return Data(text.utf8)
    }
}

/// Header validation per RFC 9110: a name is a token; a value holds no CR, LF, NUL or other control character.
enum HeaderValidation {
    private static let tokenCharacters = PercentEncoding.ByteSet(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~")

    static func validate(name: String, value: String) throws(NetworkClientError) {
        if name.isEmpty { throw .invalidHeader(name: name, reason: "the name is empty") }
        if name.utf8.contains(where: { !tokenCharacters.contains($0) }) {
            throw .invalidHeader(name: name, reason: "the name has a character not allowed in a header name")
        }
        // Only names of a framing field's length are lowercased, to keep the common case cheap.
        if [4, 7, 10, 14, 17].contains(name.utf8.count) && framingFields.contains(name.lowercased()) {
            throw .invalidHeader(
                name: name, reason: "the field frames the message and is set by URLSession; remove it")
        }
        for byte in value.utf8 where !isAllowedInValue(byte) {
            let reason =
                byte == 0x0D || byte == 0x0A
                ? "the value contains CR or LF (header injection)"
                : "the value contains the control character 0x\(String(byte, radix: 16, uppercase: true))"
            throw .invalidHeader(name: name, reason: reason)
        }
    }

    /// Whether `byte` may appear in a header value Courier sends: anything but the control characters other than
    /// horizontal tab (CR and LF would inject header lines; RFC 9110 allows none of the others).
    @inline(__always)
    static func isAllowedInValue(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte != 0x7F || byte == 0x09
    }

    /// The method: an RFC 9110 token, or a request line could be forged (`"GET / HTTP/1.1\r\nX: 1\r\n\r\nGET"`).
    static func validate(method: String) throws(NetworkClientError) {
        guard method.isEmpty || method.utf8.contains(where: { !tokenCharacters.contains($0) }) else { return }
        let shown = method.count > 40 ? String(method.prefix(40)) + "…" : method
        throw .invalidRequest(reason: "the method \(String(reflecting: shown)) is not an RFC 9110 token")
    }

    /// The fields that frame the message: Courier and URLSession own them, and a caller's value would make the
    /// server read another request than the one sent (a GET with `Content-Length: 5` waits for 5 bytes).
    private static let framingFields: Set<String> = [
        "content-length", "transfer-encoding", "host", "connection", "upgrade",
    ]

    static func validate(_ fields: [String: String]) throws(NetworkClientError) {
        for (name, value) in fields { try validate(name: name, value: value) }
    }
}

/// A `URLRequest` and, for a body sent from a file, the file.
struct PreparedRequest {
    var urlRequest: URLRequest
    /// The file the body is streamed from: a ``FileUpload``'s, or a staged ``MultipartFormData``.
    var uploadFile: URL?
    /// Whether `uploadFile` is a temporary file Courier made, to remove once the request ended.
    var uploadFileIsStaged = false
}

extension NetworkRequest {
    /// The `URLRequest` this request stands for under `configuration`, before the interceptors run.
    func makeURLRequest(configuration: NetworkConfiguration) throws(NetworkClientError) -> URLRequest {
        let prepared = try prepare(configuration: configuration)
        if prepared.uploadFileIsStaged, let file = prepared.uploadFile { try? FileManager.default.removeItem(at: file) }
        return prepared.urlRequest
    }

    /// The `URLRequest` this request stands for under `configuration`, before the interceptors run, and the file its
    /// body comes from, if any. A staged file is the caller's to remove.
    func prepare(configuration: NetworkConfiguration) throws(NetworkClientError) -> PreparedRequest {
        try RequestPreparation.prepare(
            self, configuration: configuration, accept: ResponseKinds.accept(ResponseModel.self))
    }
}

/// Builds the `URLRequest` a ``NetworkRequest`` stands for.
enum RequestPreparation {
    /// ``NetworkRequest/prepare(configuration:)`` with the response kind's `Accept` already looked up.
    ///
    /// A function of this non-generic type rather than a method of `NetworkRequest`: calling a method of a generic
    /// type from unspecialized code made the caller look up `NetworkRequest<RequestModel, ResponseModel>`'s metadata
    /// in the runtime on every call.
    static func prepare<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>, configuration: NetworkConfiguration,
        accept: String
    ) throws(NetworkClientError) -> PreparedRequest {
        let base = networkRequest.baseURL.map(BaseURL.init) ?? configuration.base
        var urlRequest = URLRequest(
            url: try base.appending(path: networkRequest.path, queryItems: networkRequest.queryItems))
        // GET is URLRequest's default, and corelibs re-validates the method on every assignment.
        if networkRequest.method != .get { urlRequest.httpMethod = networkRequest.method.rawValue }
        if let timeoutInterval = networkRequest.timeoutInterval {
            // corelibs converts it to an integer and traps on NaN, infinity or huge values.
            guard timeoutInterval > 0 else {
                throw .invalidRequest(reason: "the timeout interval \(timeoutInterval) is not a positive number")
            }
            urlRequest.timeoutInterval = transportTimeout(timeoutInterval, fallback: timeoutInterval)
        } else if let sessionTimeout = configuration.requestTimeout {
            urlRequest.timeoutInterval = sessionTimeout
        }
        if let totalTimeout = networkRequest.totalTimeout, !(totalTimeout > 0) {
            throw .invalidRequest(reason: "the total timeout \(totalTimeout) is not a positive number")
        }

        // Checked before the body is encoded: nothing may throw once a multipart body is staged in a file.
        if let additionalHeaders = networkRequest.additionalHeaders { try HeaderValidation.validate(additionalHeaders) }
        let (body, contentType) = try encodedBody(of: networkRequest, configuration: configuration)
        // Every change goes to `urlRequest` before it is wrapped: a `URLRequest` shared with a second variable copies
        // its whole storage on the next change.
        var uploadFile: URL?
        var uploadFileIsStaged = false
        switch body {
        case .data(let data): urlRequest.httpBody = data
        case .file(let file): uploadFile = file
        case .stagedFile(let file): (uploadFile, uploadFileIsStaged) = (file, true)
        case nil: break
        }
        // Assigned once: corelibs rebuilds its header storage on every `setValue`.
        var headers = ["Accept": accept]
        if let contentType { headers["Content-Type"] = contentType }
        if let additionalHeaders = networkRequest.additionalHeaders {
            for (name, value) in additionalHeaders {
                // The caller's spelling of a default field replaces Courier's.
                if name != "Accept" && name.utf8.count == 6 && name.lowercased() == "accept" {
                    headers["Accept"] = nil
                } else if name != "Content-Type" && name.utf8.count == 12 && name.lowercased() == "content-type" {
                    headers["Content-Type"] = nil
                }
                headers[name] = value
            }
        }
        urlRequest.allHTTPHeaderFields = headers
        return PreparedRequest(urlRequest: urlRequest, uploadFile: uploadFile, uploadFileIsStaged: uploadFileIsStaged)
    }

    /// The body and its content type: a form, `Data` as is, a file, a multipart form, JSON, or nothing.
    private static func encodedBody<RequestModel, ResponseModel>(
        of networkRequest: NetworkRequest<RequestModel, ResponseModel>, configuration: NetworkConfiguration
    ) throws(NetworkClientError) -> (EncodedBody?, String?) {
        if let formItems = networkRequest.formItems {
            guard networkRequest.storedBody == nil else {
                throw .invalidRequest(reason: "both formItems and body are set; a request has one body")
            }
            return (.data(FormEncoding.body(formItems)), "application/x-www-form-urlencoded")
        }
        guard let kind = BodyKinds.kind(of: networkRequest) else { return (nil, nil) }
        let (body, contentType) = try kind.encodedForSending(
            with: networkRequest.encoder ?? configuration.defaultEncoder, totalTimeout: networkRequest.totalTimeout)
        return (body, contentType)
    }
}
