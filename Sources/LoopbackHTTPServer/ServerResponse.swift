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
    /// A redirect with a `Location` header, extra `headers` and an empty body.
    case redirect(status: Int = 302, location: String, headers: [ServerHeader] = [])

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
