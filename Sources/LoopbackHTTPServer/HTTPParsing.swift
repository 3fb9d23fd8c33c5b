import Foundation

typealias Bytes = UnsafeBufferPointer<UInt8>

let asciiCR: UInt8 = 0x0D
let asciiLF: UInt8 = 0x0A
let asciiSpace: UInt8 = 0x20
let asciiTab: UInt8 = 0x09

/// How the request body is delimited.
enum BodyFraming {
    case none
    case length(Int)
    case chunked
}

/// The parsed request line and header section, copied out of the connection buffer.
struct RequestHead {
    var method: String
    var target: String
    var rawPath: String
    var path: String
    var rawQuery: String?
    var queryItems: [ServerQueryItem]
    var headers: [ServerHeader]
    var framing: BodyFraming
    /// HTTP/1.0, `Connection: close`, or a request the RFC says must not be reused (TE + CL).
    var wantsClose: Bool
    var expectsContinue: Bool
    var isFormEncoded: Bool
    var isHEAD: Bool
    var isHTTP11: Bool
}

private let nameContentLength = Array("content-length".utf8)
private let nameTransferEncoding = Array("transfer-encoding".utf8)
private let nameConnection = Array("connection".utf8)
private let nameExpect = Array("expect".utf8)
private let nameContentType = Array("content-type".utf8)
private let tokenChunked = Array("chunked".utf8)
private let tokenClose = Array("close".utf8)
private let token100Continue = Array("100-continue".utf8)
private let mediaTypeForm = Array("application/x-www-form-urlencoded".utf8)
private let versionPrefix = Array("HTTP/1.".utf8)

/// Whether `bytes` equals `lowercase` (which must be lowercase ASCII) ignoring ASCII case.
@inline(__always)
private func equalsIgnoringCase(_ bytes: Bytes, _ lowercase: [UInt8]) -> Bool {
    guard bytes.count == lowercase.count else { return false }
    for index in 0..<bytes.count where asciiLowercased(bytes[index]) != lowercase[index] {
        return false
    }
    return true
}

/// A sub-range of a buffer as a new buffer pointer.
@inline(__always)
func slice(_ bytes: Bytes, _ from: Int, _ to: Int) -> Bytes {
    Bytes(rebasing: bytes[from..<to])
}

/// `bytes` without leading and trailing spaces and tabs.
private func trimmed(_ bytes: Bytes) -> Bytes {
    var lower = 0
    var upper = bytes.count
    while lower < upper && (bytes[lower] == asciiSpace || bytes[lower] == asciiTab) { lower += 1 }
    while upper > lower && (bytes[upper - 1] == asciiSpace || bytes[upper - 1] == asciiTab) { upper -= 1 }
    return slice(bytes, lower, upper)
}

/// Calls `body` for each comma-separated, trimmed, non-empty element of a list-valued header.
private func forEachListElement(_ bytes: Bytes, _ body: (Bytes) -> Void) {
    var start = 0
    for index in 0...bytes.count where index == bytes.count || bytes[index] == 0x2C {
        let element = trimmed(slice(bytes, start, index))
        if !element.isEmpty { body(element) }
        start = index + 1
    }
}

/// RFC 9110 `tchar`.
@inline(__always)
private func isTokenCharacter(_ byte: UInt8) -> Bool {
    switch byte {
    case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
    case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: true
    default: false
    }
}

@inline(__always)
func string(_ bytes: Bytes) -> String {
    String(decoding: bytes, as: UTF8.self)
}

/// Parses a decimal Content-Length; nil if empty, not all digits, or overflowing.
private func parseDecimal(_ bytes: Bytes) -> Int? {
    guard !bytes.isEmpty, bytes.count <= 18 else { return nil }
    var value = 0
    for byte in bytes {
        guard byte >= 0x30 && byte <= 0x39 else { return nil }
        value = value * 10 + Int(byte - 0x30)
    }
    return value
}

/// The value of one hexadecimal digit, or nil.
@inline(__always)
func hexDigitValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case 0x30...0x39: byte - 0x30
    case 0x41...0x46: byte - 0x41 + 10
    case 0x61...0x66: byte - 0x61 + 10
    default: nil
    }
}

/// Parses the size of a chunk-size line (ignoring chunk extensions); nil if malformed.
func parseChunkSize(_ line: Bytes) -> Int? {
    var value = 0
    var digits = 0
    var index = 0
    while index < line.count, let digit = hexDigitValue(line[index]) {
        guard digits < 15 else { return nil }
        value = value << 4 | Int(digit)
        digits += 1
        index += 1
    }
    guard digits > 0 else { return nil }
    while index < line.count && (line[index] == asciiSpace || line[index] == asciiTab) { index += 1 }
    guard index == line.count || line[index] == 0x3B else { return nil }  // ';' starts an extension
    return value
}

/// Percent-decodes `bytes` (and '+' to space if `plusAsSpace`); invalid escapes are kept verbatim.
func percentDecoded(_ bytes: Bytes, plusAsSpace: Bool) -> String {
    var needsWork = false
    for byte in bytes where byte == 0x25 || (plusAsSpace && byte == 0x2B) {
        needsWork = true
        break
    }
    guard needsWork else { return string(bytes) }
    var output = [UInt8]()
    output.reserveCapacity(bytes.count)
    var index = 0
    while index < bytes.count {
        let byte = bytes[index]
        if byte == 0x25, index + 2 < bytes.count, let high = hexDigitValue(bytes[index + 1]),
            let low = hexDigitValue(bytes[index + 2])
        {
            output.append(high << 4 | low)
            index += 3
            continue
        }
        output.append(plusAsSpace && byte == 0x2B ? asciiSpace : byte)
        index += 1
    }
    return String(decoding: output, as: UTF8.self)
}

/// Parses `application/x-www-form-urlencoded` data (also used for query strings): split on '&' skipping empty
/// pieces, then on the first '='; names and values percent-decoded with '+' as space; no '=' means a nil value.
func parseFormItems(_ bytes: Bytes) -> [ServerQueryItem] {
    var items: [ServerQueryItem] = []
    var start = 0
    for index in 0...bytes.count where index == bytes.count || bytes[index] == 0x26 {
        if index > start {
            let piece = slice(bytes, start, index)
            if let equals = piece.firstIndex(of: 0x3D) {
                items.append(
                    ServerQueryItem(
                        name: percentDecoded(slice(piece, 0, equals), plusAsSpace: true),
                        value: percentDecoded(slice(piece, equals + 1, piece.count), plusAsSpace: true)
                    )
                )
            } else {
                items.append(ServerQueryItem(name: percentDecoded(piece, plusAsSpace: true), value: nil))
            }
        }
        start = index + 1
    }
    return items
}

/// Parses a request head (request line + header lines, including the terminating empty line).
/// Returns nil if it is malformed.
func parseRequestHead(_ head: Bytes) -> RequestHead? {
    // Split off the request line.
    guard let firstLF = head.firstIndex(of: asciiLF) else { return nil }
    var lineEnd = firstLF
    if lineEnd > 0 && head[lineEnd - 1] == asciiCR { lineEnd -= 1 }
    let requestLine = slice(head, 0, lineEnd)

    guard let firstSpace = requestLine.firstIndex(of: asciiSpace), firstSpace > 0 else { return nil }
    let methodBytes = slice(requestLine, 0, firstSpace)
    for byte in methodBytes where !isTokenCharacter(byte) { return nil }
    let afterMethod = slice(requestLine, firstSpace + 1, requestLine.count)
    guard let secondSpace = afterMethod.firstIndex(of: asciiSpace), secondSpace > 0 else { return nil }
    let targetBytes = slice(afterMethod, 0, secondSpace)
    for byte in targetBytes where byte <= asciiSpace || byte == 0x7F { return nil }
    let versionBytes = slice(afterMethod, secondSpace + 1, afterMethod.count)
    guard versionBytes.count == versionPrefix.count + 1,
        slice(versionBytes, 0, versionPrefix.count).elementsEqual(versionPrefix)
    else { return nil }
    let minor = versionBytes[versionPrefix.count]
    guard minor >= 0x30 && minor <= 0x39 else { return nil }
    let isHTTP11 = minor != 0x30

    // Header fields.
    var headers: [ServerHeader] = []
    var contentLength: Int?
    var sawTransferEncoding = false
    var chunked = false
    var connectionClose = false
    var expectsContinue = false
    var isFormEncoded = false
    var lineStart = firstLF + 1
    while lineStart < head.count {
        guard let relativeLF = slice(head, lineStart, head.count).firstIndex(of: asciiLF) else { return nil }
        let lf = lineStart + relativeLF
        var end = lf
        if end > lineStart && head[end - 1] == asciiCR { end -= 1 }
        let line = slice(head, lineStart, end)
        lineStart = lf + 1
        if line.isEmpty { break }
        // Obsolete line folding and whitespace before the colon are rejected (RFC 9112 §5.1/5.2).
        guard let colon = line.firstIndex(of: 0x3A), colon > 0 else { return nil }
        let nameBytes = slice(line, 0, colon)
        for byte in nameBytes where !isTokenCharacter(byte) { return nil }
        let valueBytes = trimmed(slice(line, colon + 1, line.count))
        for byte in valueBytes where (byte < asciiSpace && byte != asciiTab) || byte == 0x7F { return nil }
        headers.append(ServerHeader(name: string(nameBytes), value: string(valueBytes)))

        switch nameBytes.count {
        case nameContentLength.count where equalsIgnoringCase(nameBytes, nameContentLength):
            guard let length = parseDecimal(valueBytes) else { return nil }
            if let contentLength, contentLength != length { return nil }
            contentLength = length
        case nameTransferEncoding.count where equalsIgnoringCase(nameBytes, nameTransferEncoding):
            sawTransferEncoding = true
            var last: Bytes?
            forEachListElement(valueBytes) { last = $0 }
            if let last { chunked = equalsIgnoringCase(last, tokenChunked) }
        case nameConnection.count where equalsIgnoringCase(nameBytes, nameConnection):
            forEachListElement(valueBytes) { token in
                if equalsIgnoringCase(token, tokenClose) { connectionClose = true }
            }
        case nameExpect.count where equalsIgnoringCase(nameBytes, nameExpect):
            if equalsIgnoringCase(valueBytes, token100Continue) { expectsContinue = true }
        case nameContentType.count where equalsIgnoringCase(nameBytes, nameContentType):
            let mediaType = trimmed(slice(valueBytes, 0, valueBytes.firstIndex(of: 0x3B) ?? valueBytes.count))
            isFormEncoded = equalsIgnoringCase(mediaType, mediaTypeForm)
        default:
            break
        }
    }

    // Body framing (RFC 9112 §6.3): Transfer-Encoding wins over Content-Length; a request whose final transfer
    // coding is not chunked cannot be delimited and is rejected.
    let framing: BodyFraming
    if sawTransferEncoding {
        guard chunked, isHTTP11 else { return nil }
        framing = .chunked
    } else if let contentLength, contentLength > 0 {
        framing = .length(contentLength)
    } else {
        framing = .none
    }

    let questionMark = targetBytes.firstIndex(of: 0x3F)
    let rawPathBytes = slice(targetBytes, 0, questionMark ?? targetBytes.count)
    let queryBytes = questionMark.map { slice(targetBytes, $0 + 1, targetBytes.count) }
    let method = string(methodBytes)
    return RequestHead(
        method: method,
        target: string(targetBytes),
        rawPath: string(rawPathBytes),
        path: percentDecoded(rawPathBytes, plusAsSpace: false),
        rawQuery: queryBytes.map(string),
        queryItems: queryBytes.map(parseFormItems) ?? [],
        headers: headers,
        framing: framing,
        wantsClose: !isHTTP11 || connectionClose || (sawTransferEncoding && contentLength != nil),
        expectsContinue: expectsContinue && isHTTP11,
        isFormEncoded: isFormEncoded,
        isHEAD: method == "HEAD",
        isHTTP11: isHTTP11
    )
}
