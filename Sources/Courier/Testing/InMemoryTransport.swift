import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An ``HTTPTransport`` that answers every request in memory with the response a closure returns: the real
/// ``NetworkClient`` above it, no socket below it.
///
/// Where ``StubNetworkClient`` replaces the whole client, this transport keeps all of Courier in the loop (URL
/// building, encoding, interceptors, credentials, redirects, the size limit, the total deadline, downloads, progress,
/// the status check and decoding) and replaces only the bytes on the wire:
///
/// ```swift
/// let transport = InMemoryTransport { request in
///     request.url.path == "/api/notes/1" ? .json(#"{"id":1,"text":"Buy milk"}"#) : .status(404)
/// }
/// let client = NetworkClient(
///     configuration: NetworkConfiguration(transport: transport, baseURL: URL(string: "https://notes.test/api")!))
///
/// let note = try await client.run(NetworkRequest<VoidRequest, Note>(path: "/notes/1", method: .get)).value
/// #expect(transport.requests.map(\.description) == ["GET https://notes.test/api/notes/1"])
/// ```
///
/// For each request (and each redirect Courier follows, which is a request of its own) the transport reads the body
/// Courier sends, records the ``Request`` in ``requests``, calls the answer closure, then hands Courier the response
/// head and the body, in ``Response/pieces`` pieces. It follows no redirect itself: a `302` answer is a `302` response,
/// and Courier decides what to do with it, as with a server.
///
/// - An answer that throws fails the call with ``NetworkClientError/transportFailed(_:)``: throw a `URLError` such as
///   `URLError(.notConnectedToInternet)` to stand for a network failure (any other error becomes a `URLError` of code
///   `.unknown`).
/// - An answer may suspend as long as it likes. When Courier stops the exchange (the caller was cancelled, the
///   request's ``NetworkRequest/totalTimeout`` passed) the transport returns at once without waiting for it and
///   cancels its task, so the call ends with Courier's reason (`CancellationError`, `transportFailed` with
///   `URLError(.timedOut)`) even if the answer never returns.
/// - The answer runs in a task of its own, outside any lock; several requests may call it at once.
/// - A `HEAD` request gets the head of the answer only, as HTTP says, whatever its body.
///
/// It is safe to use from any task.
public final class InMemoryTransport: HTTPTransport {
    /// One request as it reached the transport: the `URLRequest` Courier built, with the body bytes it sent.
    public struct Request: Sendable, CustomStringConvertible {
        /// The request as Courier handed it to the transport (interceptors, credentials and redirect rules applied),
        /// with the `Content-Length` of its body added as an HTTP/1.1 transport sends it.
        public let urlRequest: URLRequest
        /// The request's URL.
        public let url: URL
        /// The body bytes sent: a `Data` or JSON body's bytes, a ``FileUpload``'s file read through Courier's checks,
        /// a multipart form's encoded bytes; empty when there is no body.
        public let body: Data

        /// The method as sent, for example `"POST"`.
        public var method: String { urlRequest.httpMethod ?? "GET" }

        /// Every header field sent, as the `URLRequest` holds them (names as Courier spelled them). Use ``header(_:)``
        /// to look one up whatever its case.
        public var headers: [String: String] { urlRequest.allHTTPHeaderFields ?? [:] }

        /// The value of the header field `name`, compared case-insensitively, or `nil` when it was not sent.
        public func header(_ name: String) -> String? {
            headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
        }

        /// The value of the query item `name` (the first one), percent-decoded, or `nil` when there is none or it has
        /// no value.
        public func query(_ name: String) -> String? {
            URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == name }?.value
        }

        /// Decodes the body as JSON into `type`.
        /// - Parameters:
        ///   - type: The type to decode.
        ///   - decoder: The decoder; a plain `JSONDecoder()` by default.
        /// - Throws: `DecodingError` when the body is not `type`'s JSON (an empty body included).
        public func decodedBody<Body: Decodable>(
            as type: Body.Type, decoder: JSONDecoder = JSONDecoder()
        ) throws -> Body {
            try decoder.decode(type, from: body)
        }

        /// `METHOD URL`, for example `POST https://api.example.com/notes?draft=1`.
        public var description: String { "\(method) \(url.absoluteString)" }
    }

    /// A canned HTTP response: status, header fields and body, the body delivered in one or more pieces.
    ///
    /// The head carries exactly ``headers``: nothing is added (the factories add only their `Content-Type`). Set
    /// `Content-Length` when a test needs a declared length, for example for progress totals or for the size limit
    /// to refuse a body before it arrives.
    public struct Response: Sendable {
        /// The status code, for example `200`.
        public var status: Int
        /// The header fields of the response; empty by default.
        public var headers: [String: String]
        /// The body bytes; empty by default.
        public var body: Data
        /// How many pieces the body arrives in, of nearly equal size, in order: `1` by default. More pieces let a
        /// test see progress grow and the size limit stop a body in its middle. Values below 1 count as 1; a body
        /// never arrives in more pieces than it has bytes.
        public var pieces: Int

        /// Creates a response.
        /// - Parameters:
        ///   - status: The status code; `200` by default.
        ///   - headers: The header fields; none by default.
        ///   - body: The body; empty by default.
        ///   - pieces: How many pieces the body arrives in; `1` by default.
        public init(status: Int = 200, headers: [String: String] = [:], body: Data = Data(), pieces: Int = 1) {
            self.status = status
            self.headers = headers
            self.body = body
            self.pieces = pieces
        }

        /// A response of `status` with no body.
        /// - Parameters:
        ///   - status: The status code.
        ///   - headers: The header fields; none by default.
        public static func status(_ status: Int, headers: [String: String] = [:]) -> Response {
            Response(status: status, headers: headers)
        }

        /// A response whose body is `text`, JSON already written, with `Content-Type: application/json`.
        /// - Parameters:
        ///   - text: The JSON text, sent as UTF-8 as it is (not encoded again).
        ///   - status: The status code; `200` by default.
        public static func json(_ text: String, status: Int = 200) -> Response {
            json(Data(text.utf8), status: status)
        }

        /// A response whose body is `data`, JSON already encoded, with `Content-Type: application/json`.
        /// - Parameters:
        ///   - data: The JSON bytes, sent as they are.
        ///   - status: The status code; `200` by default.
        public static func json(_ data: Data, status: Int = 200) -> Response {
            Response(status: status, headers: ["Content-Type": "application/json"], body: data)
        }

        /// A response whose body is `value` encoded as JSON, with `Content-Type: application/json`.
        /// - Parameters:
        ///   - value: The value to encode. (A `String` or `Data` argument picks the overloads that send it as it is.)
        ///   - status: The status code; `200` by default.
        ///   - encoder: The encoder; a plain `JSONEncoder()` by default.
        /// - Throws: `EncodingError` when `value` cannot be encoded.
        public static func json(
            _ value: some Encodable, status: Int = 200, encoder: JSONEncoder = JSONEncoder()
        ) throws -> Response {
            json(try encoder.encode(value), status: status)
        }

        /// A response whose body is `text` in UTF-8, with `Content-Type: text/plain; charset=utf-8`.
        /// - Parameters:
        ///   - text: The body.
        ///   - status: The status code; `200` by default.
        public static func text(_ text: String, status: Int = 200) -> Response {
            Response(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Data(text.utf8))
        }

        /// A redirect to `location`, which Courier follows (or refuses) as it would a server's.
        /// - Parameters:
        ///   - location: The `Location` header, absolute or relative to the request's URL.
        ///   - status: The status code; `302` by default.
        public static func redirect(to location: String, status: Int = 302) -> Response {
            Response(status: status, headers: ["Location": location])
        }

        /// Parses a raw HTTP/1.1 response message: a status line, header lines, a blank line, then the body.
        ///
        /// ```swift
        /// try InMemoryTransport.Response(parsing: "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n\r\n{}")
        /// ```
        ///
        /// Lines may end with `\r\n` or `\n` (a multi-line string literal's), in the head only: the body is every byte
        /// after the blank line, as UTF-8. A field that appears twice is joined with `, `. A `Content-Length`, when
        /// present, must be the body's size in bytes.
        /// - Parameter message: The message.
        /// - Throws: `URLError(.cannotParseResponse)`, whose description says what is wrong, when the message has no
        ///   valid status line, a header line without `:`, a `Content-Length` other than the body's size, or a
        ///   `Transfer-Encoding` (give the body as it is instead).
        public init(parsing message: String) throws {
            let bytes = Data(message.utf8)
            let crlf = bytes.range(of: Data("\r\n\r\n".utf8))
            let lf = bytes.range(of: Data("\n\n".utf8))
            let separator = [crlf, lf].compactMap { $0 }.min { $0.lowerBound < $1.lowerBound }
            let headEnd = separator?.lowerBound ?? bytes.endIndex
            let head = String(decoding: bytes[bytes.startIndex..<headEnd], as: UTF8.self)
            let body = separator.map { bytes[$0.upperBound...] }.map { Data($0) } ?? Data()
            // "\r\n" is one Character in Swift: split on either line ending.
            var lines = head.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }.map(String.init)
            let statusLine = lines.isEmpty ? "" : lines.removeFirst()
            let parts = statusLine.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), parts[1].count == 3, let status = Int(parts[1]),
                (100...999).contains(status)
            else {
                throw Self.unparsable("the status line \"\(statusLine)\" is not \"HTTP/1.1 <3-digit code> <reason>\"")
            }
            var headers: [String: String] = [:]
            for line in lines {
                guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                    throw Self.unparsable("the header line \"\(line)\" has no name followed by \":\"")
                }
                let name = line[..<colon].trimmingCharacters(in: .whitespaces)
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                if let existing = headers.keys.first(where: { $0.caseInsensitiveCompare(name) == .orderedSame }) {
                    headers[existing] = headers[existing, default: ""] + ", " + value
                } else {
                    headers[name] = value
                }
            }
            let response = Response(status: status, headers: headers, body: body)
            if response.header("Transfer-Encoding") != nil {
                throw Self.unparsable("a Transfer-Encoding is not decoded: give the body as it is, without it")
            }
            if let declared = response.header("Content-Length"), Int(declared) != body.count {
                throw Self.unparsable("Content-Length is \(declared) but the body has \(body.count) bytes")
            }
            self = response
        }

        /// The value of the header field `name`, compared case-insensitively.
        func header(_ name: String) -> String? {
            headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
        }

        /// The body cut into ``pieces`` pieces of nearly equal size, none empty.
        var bodyPieces: [Data] {
            guard !body.isEmpty else { return [] }
            let count = min(max(pieces, 1), body.count)
            let size = (body.count + count - 1) / count
            return stride(from: body.startIndex, to: body.endIndex, by: size).map { start in
                body.subdata(in: start..<min(start + size, body.endIndex))
            }
        }

        private static func unparsable(_ reason: String) -> URLError {
            URLError(
                .cannotParseResponse,
                userInfo: [NSLocalizedDescriptionKey: "InMemoryTransport.Response(parsing:): \(reason)"])
        }
    }

    private let answer: @Sendable (Request) async throws -> Response
    private let recorded = Locked<[Request]>([])

    /// Creates a transport that answers each request with what `answer` returns for it.
    /// - Parameter answer: Called once per request (and per redirect Courier follows) with the ``Request`` as sent;
    ///   returns the ``Response``, or throws to fail the call with ``NetworkClientError/transportFailed(_:)``. It is
    ///   cancelled, and no longer awaited, when Courier stops the exchange.
    public init(_ answer: @escaping @Sendable (Request) async throws -> Response) {
        self.answer = answer
    }

    /// Every request the transport received, in the order they arrived (a redirect's request after the one
    /// redirected). A request whose body could not be read is not recorded.
    public var requests: [Request] {
        recorded.withLock { $0 }
    }

    /// Reads the body Courier sends, records the request, and reports the answer's response to `exchange`.
    ///
    /// - Throws: What the answer throws; the file's error when a ``FileUpload`` body cannot be read (Courier reports
    ///   it as ``NetworkClientError/fileAccessFailed(url:reason:)``); `URLError(.badServerResponse)` when the answer's
    ///   status cannot make an `HTTPURLResponse`. What it throws after Courier stopped the exchange is ignored.
    public func send(_ exchange: HTTPExchange) async throws {
        guard let url = exchange.request.url else { throw URLError(.badURL) }
        let body = try Self.bodyBytes(of: exchange)
        var sent = exchange.request
        if exchange.body != .none, sent.value(forHTTPHeaderField: "Content-Length") == nil {
            // What an HTTP/1.1 transport adds for a body of known size (the seam leaves it to the transport).
            sent.setValue(String(body.count), forHTTPHeaderField: "Content-Length")
        }
        let request = Request(urlRequest: sent, url: url, body: body)
        recorded.withLock { $0.append(request) }
        guard let response = try await answered(request, for: exchange) else { return }
        guard
            let head = HTTPURLResponse(
                url: url, statusCode: response.status, httpVersion: "HTTP/1.1", headerFields: response.headers)
        else { throw URLError(.badServerResponse) }
        guard exchange.receive(head) else { return }
        // A HEAD response has no body, whatever its headers say.
        guard request.method != "HEAD" else { return }
        for piece in response.bodyPieces {
            // A streamed response's reader may hold the body back, as a socket would.
            guard await exchange.readyForMore(), !Task.isCancelled, exchange.receive(piece) else { return }
        }
    }

    /// The bytes of the exchange's body, read as a transport sends them (a file through Courier's checked stream),
    /// with the progress of the upload reported.
    private static func bodyBytes(of exchange: HTTPExchange) throws -> Data {
        switch exchange.body {
        case .none:
            return Data()
        case .data(let data):
            exchange.sent(Int64(data.count), of: Int64(data.count))
            return data
        case .file(let url, let byteCount):
            let stream = try exchange.makeBodyStream()
            stream.open()
            defer { stream.close() }
            var bytes = Data()
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = stream.read(&buffer, maxLength: buffer.count)
                if count == 0 { break }
                guard count > 0 else {
                    throw stream.streamError
                        ?? NetworkClientError.fileAccessFailed(url: url, reason: "the file could not be read")
                }
                bytes.append(buffer, count: count)
                exchange.sent(Int64(bytes.count), of: byteCount)
            }
            return bytes
        }
    }

    /// What the answer returns for `request`, or `nil` as soon as Courier stops the exchange (the answer's task is
    /// then cancelled and no longer awaited, so an answer that never returns holds up nothing).
    ///
    /// - Throws: What the answer throws; `CancellationError` when the calling task is cancelled first.
    private func answered(_ request: Request, for exchange: HTTPExchange) async throws -> Response? {
        let answer = self.answer
        let race = Race()
        let work = Task {
            do {
                race.finish(.success(try await answer(request)))
            } catch {
                race.finish(.failure(error))
            }
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation)
                exchange.whenStopped {
                    work.cancel()
                    race.finish(.success(nil))
                }
            }
        } onCancel: {
            work.cancel()
            race.finish(.failure(CancellationError()))
        }
    }
}

/// The first of the answer and the stop of the exchange: resumes one continuation once, whichever comes first (a
/// result that arrives before the continuation is kept for it).
private final class Race: Sendable {
    private struct State {
        var continuation: CheckedContinuation<InMemoryTransport.Response?, any Error>?
        var result: Result<InMemoryTransport.Response?, any Error>?
        var resumed = false
    }

    private let state = Locked(State())

    func start(_ continuation: CheckedContinuation<InMemoryTransport.Response?, any Error>) {
        let result = state.withLock { state -> Result<InMemoryTransport.Response?, any Error>? in
            guard let result = state.result else {
                state.continuation = continuation
                return nil
            }
            state.resumed = true
            return result
        }
        if let result { continuation.resume(with: result) }
    }

    func finish(_ result: Result<InMemoryTransport.Response?, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<InMemoryTransport.Response?, any Error>? in
            guard !state.resumed else { return nil }
            guard let continuation = state.continuation else {
                if state.result == nil { state.result = result }
                return nil
            }
            state.resumed = true
            state.continuation = nil
            return continuation
        }
        continuation?.resume(with: result)
    }
}
