import Foundation

/// What the server should do with a request; returned by the handler passed to `LoopbackServer`.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
public enum ServerResponse: Sendable {
    /// A normal response, sent after `delay`. `Content-Length` is added unless `headers` has it (or
    /// `Transfer-Encoding`); statuses 1xx, 204 and 304 get neither a body nor an automatic `Content-Length`.
    case respond(status: Int, headers: [ServerHeader] = [], body: Data = Data(), delay: Duration = .zero)
    /// 200 with `Content-Type: application/json` and a JSON-encoded `EchoedRequest` of this request, after `delay`.
    case echo(delay: Duration = .zero)
    /// `Content-Length: declaredLength` but only `body` (shorter) is sent, then the connection is closed (FIN).
    case partialBody(status: Int, declaredLength: Int, body: Data)
    /// Like `partialBody`, but the connection is then reset (TCP RST via `SO_LINGER {1, 0}`).
    case resetMidBody(status: Int, declaredLength: Int, body: Data)
    /// These bytes are written verbatim (e.g. non-HTTP garbage), then the connection is closed.
    case raw(Data)
    /// Never answers; the connection stays open until the client closes it or the server stops.
    case hang
    /// Sends the head (with `Content-Length`) at once, then the body one byte per `interval`, stopping early if the
    /// client goes away.
    case drip(status: Int, body: Data, interval: Duration)
    /// A redirect with a `Location` header, extra `headers` and an empty body. `location` is sent verbatim, whatever
    /// its scheme (e.g. `file:///etc/passwd`), and any status works (301, 302, 303, 307, 308).
    case redirect(status: Int = 302, location: String, headers: [ServerHeader] = [])
    /// A body of `length` bytes generated while it is sent, never held in memory: byte `i` is
    /// `UInt8((offset + i) % 251)`, that is bytes `offset..<offset + length` of one endless counting sequence.
    ///
    /// - `chunked`: sent with `Transfer-Encoding: chunked` (chunks of up to 64 KiB) instead of `Content-Length`.
    /// - `declaredLength`: the `Content-Length` to declare instead of `length` (a lie); ignored when `chunked`. When
    ///   it differs from `length`, the connection is closed after the `length` bytes.
    /// - `holdAfter`: send only the first `holdAfter` body bytes, then send nothing more and keep the connection open
    ///   until the client closes it or the server stops. This bounds what a client that ignores size limits can
    ///   receive, and shows whether it gave up on the declared size alone.
    /// - `offset`: where in the counting sequence the body starts (0 by default); ``CountingResource`` uses it to
    ///   answer ranged GETs.
    ///
    /// The bytes handed to the socket are counted in `LoopbackServer.bodyBytesSent`; a client that goes away stops
    /// the stream and is counted in `clientClosedCount`.
    case stream(
        status: Int = 200, headers: [ServerHeader] = [], length: Int, chunked: Bool = false,
        declaredLength: Int? = nil, holdAfter: Int? = nil, offset: Int = 0)
    /// A `Content-Encoding: gzip` body (`Content-Type: application/octet-stream`) that inflates to `expandedSize`
    /// zero bytes: a compression bomb, generated while it is sent, without zlib.
    ///
    /// The deflate stream is one fixed-Huffman block: a literal 0, then matches of length 258 at distance 1 (13 bits
    /// each), so the ratio is about 158:1 (258 bytes per 13 bits): 1 GiB expands from about 6.8 MB, 16 GiB from about
    /// 109 MB. The gzip trailer carries the correct CRC-32 and ISIZE. `Content-Length` is the compressed size
    /// (`gzipBombCompressedSize(expandedSize:)`). `holdAfter` works as in `stream`, counting compressed bytes.
    case gzipBomb(expandedSize: Int, status: Int = 200, headers: [ServerHeader] = [], holdAfter: Int? = nil)
    /// Sends an interim response (`HTTP/1.1 102 Processing` and an empty header section) every `interval`, and never
    /// a final response, until the client closes the connection or the server stops. Each one is counted in
    /// `LoopbackServer.interimResponsesSent`.
    case interimForever(status: Int = 102, interval: Duration)
    /// A response sent in two parts: the head (with `Content-Length: body.count`) and the first `splitAt` bytes of
    /// `body`, then `between()` runs on the connection's thread (a test opens the way there, for example waiting on a
    /// gate, or acts on the client's half-received file), then the rest of `body`. Ends early if the client goes away.
    case split(status: Int = 200, headers: [ServerHeader] = [], body: Data, splitAt: Int, between: @Sendable () -> Void)

    /// A body written by `write` on the connection's thread, piece by piece, after the head (`Transfer-Encoding:
    /// chunked` unless `chunked` is false, then a body ended by closing the connection). What `write` returns ends
    /// the response: properly, by closing the connection mid-body, or by a reset. A client that goes away makes the
    /// writer's sends and waits return `false` and is counted in `clientClosedCount`.
    case writer(
        status: Int = 200, headers: [ServerHeader] = [], chunked: Bool = true,
        write: @Sendable (ResponseWriter) -> ResponseWriter.Ending)

    /// The `Content-Length` of a `.gzipBomb(expandedSize:)` response: the size of the gzip stream in bytes.
    public static func gzipBombCompressedSize(expandedSize: Int) -> Int {
        GzipZeros(expandedSize: expandedSize).compressedSize
    }

    /// Shorthand for `.echo(delay: .zero)`, so that a handler can simply return `.echo`.
    public static var echo: ServerResponse { .echo(delay: .zero) }

    /// A `.respond` whose body is `value` encoded with `JSONEncoder` and `Content-Type: application/json`.
    /// If encoding fails, the response is a 500 with the error description as a plain-text body.
    public static func json(_ value: some Encodable, status: Int = 200, delay: Duration = .zero) -> ServerResponse {
        do {
            let body = try JSONEncoder().encode(value)
            return .respond(
                status: status,
                headers: [ServerHeader(name: "Content-Type", value: "application/json")],
                body: body,
                delay: delay
            )
        } catch {
            return .respond(
                status: 500,
                headers: [ServerHeader(name: "Content-Type", value: "text/plain; charset=utf-8")],
                body: Data("JSON encoding failed: \(error)".utf8),
                delay: delay
            )
        }
    }
}

/// The reason phrase sent in the status line for `status`.
func reasonPhrase(_ status: Int) -> String {
    switch status {
    case 100: "Continue"
    case 101: "Switching Protocols"
    case 102: "Processing"
    case 103: "Early Hints"
    case 200: "OK"
    case 201: "Created"
    case 202: "Accepted"
    case 203: "Non-Authoritative Information"
    case 204: "No Content"
    case 205: "Reset Content"
    case 206: "Partial Content"
    case 300: "Multiple Choices"
    case 301: "Moved Permanently"
    case 302: "Found"
    case 303: "See Other"
    case 304: "Not Modified"
    case 307: "Temporary Redirect"
    case 308: "Permanent Redirect"
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 402: "Payment Required"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 406: "Not Acceptable"
    case 407: "Proxy Authentication Required"
    case 408: "Request Timeout"
    case 409: "Conflict"
    case 410: "Gone"
    case 411: "Length Required"
    case 412: "Precondition Failed"
    case 413: "Content Too Large"
    case 414: "URI Too Long"
    case 415: "Unsupported Media Type"
    case 416: "Range Not Satisfiable"
    case 417: "Expectation Failed"
    case 418: "I'm a teapot"
    case 421: "Misdirected Request"
    case 422: "Unprocessable Content"
    case 425: "Too Early"
    case 426: "Upgrade Required"
    case 428: "Precondition Required"
    case 429: "Too Many Requests"
    case 431: "Request Header Fields Too Large"
    case 451: "Unavailable For Legal Reasons"
    case 500: "Internal Server Error"
    case 501: "Not Implemented"
    case 502: "Bad Gateway"
    case 503: "Service Unavailable"
    case 504: "Gateway Timeout"
    case 505: "HTTP Version Not Supported"
    case 511: "Network Authentication Required"
    default: "Status \(status)"
    }
}
