import Foundation

/// One `name=value` pair of a query string or of an `application/x-www-form-urlencoded` body.
public struct ServerQueryItem: Sendable, Hashable, Codable {
    /// The percent-decoded name ('+' decoded as a space).
    public let name: String
    /// The percent-decoded value ('+' decoded as a space), or `nil` if the item had no '='.
    public let value: String?

    /// Creates an item from already decoded strings.
    public init(name: String, value: String?) {
        self.name = name
        self.value = value
    }
}

/// One header field line, exactly as received (name case preserved, value trimmed of surrounding whitespace).
public struct ServerHeader: Sendable, Hashable, Codable {
    /// The field name as received.
    public let name: String
    /// The field value with leading and trailing spaces/tabs removed.
    public let value: String

    /// Creates a header field.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// A fully received HTTP/1.x request as seen by the handler and recorded by the server.
public struct ServerRequest: Sendable {
    /// The request method, e.g. "GET".
    public let method: String
    /// The raw request-target as received, e.g. "/a%20b?x=1&y".
    public let target: String
    /// The target before the first '?', still percent-encoded.
    public let rawPath: String
    /// `rawPath` percent-decoded; invalid escapes are kept as is and '+' is kept as '+'.
    public let path: String
    /// The target after the first '?', or `nil` if there is no '?'.
    public let rawQuery: String?
    /// `rawQuery` split on '&' (empty pieces skipped) and on the first '='; percent-decoded, '+' as space.
    public let queryItems: [ServerQueryItem]
    /// All header fields in received order.
    public let headers: [ServerHeader]
    /// The request body, de-chunked if it was sent with `Transfer-Encoding: chunked`; empty when it was discarded.
    public let body: Data
    /// The size and checksum of the body when the server discarded it (``RequestBodyMode/discard``), else `nil`.
    public let discardedBody: DiscardedRequestBody?
    /// The body parsed like `queryItems` when Content-Type is `application/x-www-form-urlencoded`, else empty.
    public let formItems: [ServerQueryItem]
    /// The 0-based number of the accepted connection the request arrived on.
    public let connectionID: Int
    /// The 0-based arrival order across the whole server (not reset by `resetStatistics()`).
    public let sequenceNumber: Int

    /// The value of the first header whose name matches `name` case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { asciiCaseInsensitiveEquals($0.name, name) }?.value
    }
}

/// The JSON document that `ServerResponse.echo` sends back: a description of the request the server received.
public struct EchoedRequest: Codable, Sendable, Equatable {
    /// The request method.
    public let method: String
    /// The raw request-target.
    public let target: String
    /// The percent-decoded path.
    public let path: String
    /// The raw query, or `nil` if the target had no '?'.
    public let rawQuery: String?
    /// The decoded query items.
    public let queryItems: [ServerQueryItem]
    /// The decoded form items of an `application/x-www-form-urlencoded` body.
    public let formItems: [ServerQueryItem]
    /// All received header fields in order.
    public let headers: [ServerHeader]
    /// The request body, base64-encoded.
    public let body: String

    /// The value of the first header whose name matches `name` case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { asciiCaseInsensitiveEquals($0.name, name) }?.value
    }

    /// The request body (`body` base64-decoded; empty if it is not valid base64).
    public var bodyData: Data {
        Data(base64Encoded: body) ?? Data()
    }

    init(_ request: ServerRequest) {
        method = request.method
        target = request.target
        path = request.path
        rawQuery = request.rawQuery
        queryItems = request.queryItems
        formItems = request.formItems
        headers = request.headers
        body = request.body.base64EncodedString()
    }
}

/// ASCII case-insensitive string comparison without allocating.
func asciiCaseInsensitiveEquals(_ lhs: String, _ rhs: String) -> Bool {
    var left = lhs.utf8.makeIterator()
    var right = rhs.utf8.makeIterator()
    while true {
        switch (left.next(), right.next()) {
        case (nil, nil):
            return true
        case (let l?, let r?):
            if asciiLowercased(l) != asciiLowercased(r) { return false }
        default:
            return false
        }
    }
}

@inline(__always)
func asciiLowercased(_ byte: UInt8) -> UInt8 {
    byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
}
