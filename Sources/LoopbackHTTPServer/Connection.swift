import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Serves one accepted connection on its own thread: reads requests into a reusable buffer, calls the handler and
/// writes responses. Confined to that thread.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
final class Connection {
    /// The largest accepted request head (request line + headers).
    static let maximumHeadSize = 64 * 1024
    /// Longest chunk-size or trailer line accepted in a chunked body.
    static let maximumChunkLineSize = 8 * 1024
    /// The largest accepted request body; larger ones get a 413.
    static let maximumBodySize = 1 << 30
    /// Content-Length bodies up to this size are received straight into a buffer of the declared size.
    static let preallocatedBodyLimit = 4 << 20
    /// Bodies up to this size are copied behind the response head so that the response takes a single `send`.
    static let coalescedBodyLimit = 256 * 1024
    /// How often a waiting connection checks whether the client went away or the server stopped.
    static let watchSliceMilliseconds: Int32 = 10

    private static let capacity = maximumHeadSize + 16 * 1024
    private static let continueResponse = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    private let core: ServerCore
    private let id: Int
    private let fd: Int32
    private let buffer: UnsafeMutablePointer<UInt8>
    /// Unconsumed input is `buffer[start..<end]`.
    private var start = 0
    private var end = 0
    private var output: [UInt8] = []

    init(core: ServerCore, id: Int, fd: Int32) {
        self.core = core
        self.id = id
        self.fd = fd
        self.buffer = .allocate(capacity: Self.capacity)
        output.reserveCapacity(1024)
    }

    deinit {
        buffer.deallocate()
    }

    private enum Next {
        case keepAlive
        case close
        case reset
    }

    /// Serves requests until the connection is done. Returns true if it should be closed with a TCP RST.
    func run() -> Bool {
        while true {
            switch serveOneRequest() {
            case .keepAlive: continue
            case .close: return false
            case .reset: return true
            }
        }
    }

    // MARK: Reading

    /// Reads more input into the buffer, compacting it first if needed. False at end of stream, on error or if the
    /// buffer is full.
    private func fill() -> Bool {
        if start == end {
            start = 0
            end = 0
        } else if Self.capacity - end < 4096 && start > 0 {
            (buffer + 0).update(from: buffer + start, count: end - start)
            end -= start
            start = 0
        }
        guard end < Self.capacity else { return false }
        let received = receive(fd, buffer + end, Self.capacity - end)
        guard received > 0 else { return false }
        end += received
        return true
    }

    private enum HeadResult {
        case head(RequestHead)
        case closed
        case tooLarge
        case malformed
    }

    /// Index just past the first empty line ("\n\n" or "\n\r\n") at or after `from`, or nil.
    private func findHeadEnd(from: Int) -> Int? {
        var index = from
        let base = UnsafeMutableRawPointer(buffer)
        while index < end {
            guard let found = memchr(base + index, Int32(asciiLF), end - index) else { return nil }
            let lf = base.distance(to: found)
            if lf + 1 < end && buffer[lf + 1] == asciiLF { return lf + 2 }
            if lf + 2 < end && buffer[lf + 1] == asciiCR && buffer[lf + 2] == asciiLF { return lf + 3 }
            index = lf + 1
        }
        return nil
    }

    private func readHead() -> HeadResult {
        var scanned = 0  // bytes after `start` already known not to contain the end of the head
        while true {
            // Empty lines before a request line are ignored (RFC 9112 §2.2).
            while start < end && (buffer[start] == asciiCR || buffer[start] == asciiLF) {
                start += 1
                scanned = 0
            }
            if let headEnd = findHeadEnd(from: start + scanned) {
                guard headEnd - start <= Self.maximumHeadSize else { return .tooLarge }
                let head = parseRequestHead(Bytes(start: buffer + start, count: headEnd - start))
                start = headEnd
                return head.map { .head($0) } ?? .malformed
            }
            guard end - start <= Self.maximumHeadSize else { return .tooLarge }
            scanned = max(0, end - start - 2)
            guard fill() else { return .closed }
        }
    }

    /// Reads one line (without its CR LF) for the chunked decoder; nil on end of stream or an overlong line.
    private func readLine() -> Bytes? {
        var scanned = 0
        while true {
            let base = UnsafeMutableRawPointer(buffer)
            if let found = memchr(base + start + scanned, Int32(asciiLF), end - start - scanned) {
                let lf = base.distance(to: found)
                var lineEnd = lf
                if lineEnd > start && buffer[lineEnd - 1] == asciiCR { lineEnd -= 1 }
                let line = Bytes(start: buffer + start, count: lineEnd - start)
                start = lf + 1
                return line
            }
            guard end - start <= Self.maximumChunkLineSize else { return nil }
            scanned = end - start
            guard fill() else { return nil }
        }
    }

    private enum BodyResult {
        case body(Data)
        /// Read and dropped (``RequestBodyMode/discard``).
        case discarded(DiscardedRequestBody)
        case closed
        case malformed
        case tooLarge
    }

    private func readBody(_ framing: BodyFraming) -> BodyResult {
        switch framing {
        case .none:
            return .body(Data())
        case .length(let length):
            guard length <= Self.maximumBodySize else { return .tooLarge }
            if length > Self.preallocatedBodyLimit {
                // Grow with the data actually received rather than trusting a huge declared length up front.
                var body = Data()
                body.reserveCapacity(Self.preallocatedBodyLimit)
                while body.count < length {
                    if start == end { guard fill() else { return .closed } }
                    let take = min(length - body.count, end - start)
                    body.append(buffer + start, count: take)
                    start += take
                }
                return .body(body)
            }
            var body = Data(count: length)
            let complete = body.withUnsafeMutableBytes { raw -> Bool in
                guard let destination = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return true }
                let buffered = min(end - start, length)
                destination.update(from: buffer + start, count: buffered)
                start += buffered
                var filled = buffered
                while filled < length {
                    let received = receive(fd, destination + filled, length - filled)
                    guard received > 0 else { return false }
                    filled += received
                }
                return true
            }
            return complete ? .body(body) : .closed
        case .chunked:
            var body = Data()
            while true {
                guard let sizeLine = readLine() else { return .closed }
                guard let size = parseChunkSize(sizeLine) else { return .malformed }
                if size == 0 {
                    // Trailer fields up to the empty line are read and dropped.
                    while true {
                        guard let trailer = readLine() else { return .closed }
                        if trailer.isEmpty { return .body(body) }
                    }
                }
                guard size <= Self.maximumBodySize - body.count else { return .tooLarge }
                var remaining = size
                while remaining > 0 {
                    if start == end { guard fill() else { return .closed } }
                    let take = min(remaining, end - start)
                    body.append(buffer + start, count: take)
                    start += take
                    remaining -= take
                }
                guard let terminator = readLine() else { return .closed }
                guard terminator.isEmpty else { return .malformed }
            }
        }
    }

    // MARK: Discarding request bodies

    /// Reads a body of `framing` piece by piece and keeps only its size and Adler-32 (``RequestBodyMode/discard``):
    /// memory stays flat, and there is no size limit.
    private func discardBody(_ framing: BodyFraming) -> BodyResult {
        var checksum = Adler32()
        var byteCount = 0
        /// Consumes the next `count` body bytes; false if the client went away first.
        func consume(_ count: Int) -> Bool {
            var remaining = count
            while remaining > 0 {
                if start == end { guard fill() else { return false } }
                let take = min(remaining, end - start)
                checksum.update(UnsafeRawBufferPointer(start: buffer + start, count: take))
                start += take
                remaining -= take
                byteCount += take
            }
            return true
        }
        switch framing {
        case .none:
            break
        case .length(let length):
            guard consume(length) else { return .closed }
        case .chunked:
            chunks: while true {
                guard let sizeLine = readLine() else { return .closed }
                guard let size = parseChunkSize(sizeLine) else { return .malformed }
                if size == 0 {
                    while true {
                        guard let trailer = readLine() else { return .closed }
                        if trailer.isEmpty { break chunks }
                    }
                }
                guard consume(size) else { return .closed }
                guard let terminator = readLine() else { return .closed }
                guard terminator.isEmpty else { return .malformed }
            }
        }
        return .discarded(DiscardedRequestBody(byteCount: byteCount, adler32: checksum.value))
    }

    // MARK: Serving

    private func serveOneRequest() -> Next {
        let head: RequestHead
        switch readHead() {
        case .head(let parsed): head = parsed
        case .closed: return .close
        case .tooLarge:
            sendErrorAndClose(431)
            return .close
        case .malformed:
            sendErrorAndClose(400)
            return .close
        }

        let bodyMode = core.requestBodyMode(head.method, head.path)
        if bodyMode == .buffer, case .length(let length) = head.framing, length > Self.maximumBodySize {
            sendErrorAndClose(413)
            return .close
        }
        if head.expectsContinue && !isBodyBuffered(head.framing) {
            guard Self.continueResponse.withUnsafeBytes({ sendAll(fd, $0) }) else { return .close }
        }

        let body: Data
        var discardedBody: DiscardedRequestBody?
        switch bodyMode == .discard ? discardBody(head.framing) : readBody(head.framing) {
        case .body(let data): body = data
        case .discarded(let summary):
            body = Data()
            discardedBody = summary
        case .closed: return .close
        case .malformed:
            sendErrorAndClose(400)
            return .close
        case .tooLarge:
            sendErrorAndClose(413)
            return .close
        }

        let formItems =
            head.isFormEncoded && !body.isEmpty
            ? body.withUnsafeBytes { parseFormItems($0.bindMemory(to: UInt8.self)) } : []
        let connectionID = id
        let request = core.requestStarted { sequenceNumber in
            ServerRequest(
                method: head.method, target: head.target, rawPath: head.rawPath, path: head.path,
                rawQuery: head.rawQuery, queryItems: head.queryItems, headers: head.headers, body: body,
                discardedBody: discardedBody, formItems: formItems, connectionID: connectionID,
                sequenceNumber: sequenceNumber
            )
        }
        let (next, clientClosed) = perform(core.handler(request), request: request, head: head)
        core.requestFinished(clientClosed: clientClosed)
        return next
    }

    /// Whether the whole body (or, for chunked, at least some of it) is already in the buffer.
    private func isBodyBuffered(_ framing: BodyFraming) -> Bool {
        switch framing {
        case .none: true
        case .length(let length): end - start >= length
        case .chunked: end > start
        }
    }

    /// Carries out a handler's response. Returns what to do with the connection and whether the client went away.
    private func perform(_ response: ServerResponse, request: ServerRequest, head: RequestHead) -> (Next, Bool) {
        switch response {
        case .respond(let status, let headers, let body, let delay):
            return respond(status: status, headers: headers, body: body, delay: delay, head: head)

        case .echo(let delay):
            let json = (try? JSONEncoder().encode(EchoedRequest(request))) ?? Data()
            let headers = [ServerHeader(name: "Content-Type", value: "application/json")]
            return respond(status: 200, headers: headers, body: json, delay: delay, head: head)

        case .redirect(let status, let location, let extraHeaders):
            let headers = [ServerHeader(name: "Location", value: location)] + extraHeaders
            return respond(status: status, headers: headers, body: Data(), delay: .zero, head: head)

        case .partialBody(let status, let declaredLength, let body),
            .resetMidBody(let status, let declaredLength, let body):
            let headers = [ServerHeader(name: "Content-Length", value: String(declaredLength))]
            buildHead(status: status, headers: headers, contentLength: nil, close: false)
            let sent = sendHeadAndBody(head.isHEAD ? Data() : body)
            if case .resetMidBody = response { return (.reset, !sent) }
            return (.close, !sent)

        case .raw(let bytes):
            let sent = bytes.withUnsafeBytes { sendAll(fd, $0) }
            return (.close, !sent)

        case .hang:
            return (.close, waitWatchingClient(for: nil) == .clientClosed)

        case .drip(let status, let body, let interval):
            let close = head.wantsClose
            buildHead(status: status, headers: [], contentLength: body.count, close: close)
            guard sendHeadAndBody(Data()) else { return (.close, true) }
            if !head.isHEAD {
                for byte in body {
                    switch waitWatchingClient(for: interval) {
                    case .elapsed: break
                    case .clientClosed: return (.close, true)
                    case .stopped: return (.close, false)
                    }
                    guard withUnsafeBytes(of: byte, { sendAll(fd, $0) }) else { return (.close, true) }
                    core.bodyBytesSent(1)
                }
            }
            return (close ? .close : .keepAlive, false)

        case .stream(let status, let headers, let length, let chunked, let declaredLength, let holdAfter, let offset):
            let declared = chunked ? length : (declaredLength ?? length)
            return sendGenerated(
                .counting(length: max(0, length), offset: max(0, offset)), status: status, headers: headers,
                chunked: chunked, declaredLength: declared, holdAfter: holdAfter, head: head)

        case .gzipBomb(let expandedSize, let status, let extraHeaders, let holdAfter):
            let bomb = GzipZeros(expandedSize: max(0, expandedSize))
            let headers =
                [
                    ServerHeader(name: "Content-Type", value: "application/octet-stream"),
                    ServerHeader(name: "Content-Encoding", value: "gzip"),
                ] + extraHeaders
            return sendGenerated(
                bomb.body, status: status, headers: headers, chunked: false, declaredLength: bomb.compressedSize,
                holdAfter: holdAfter, head: head)

        case .split(let status, let headers, let body, let splitAt, let between):
            let close = head.wantsClose
            buildHead(status: status, headers: headers, contentLength: body.count, close: close)
            let first = head.isHEAD ? Data() : body.prefix(max(0, min(splitAt, body.count)))
            guard sendHeadAndBody(first) else { return (.close, true) }
            if head.isHEAD { return (close ? .close : .keepAlive, false) }
            between()
            let rest = body.dropFirst(first.count)
            guard rest.isEmpty || rest.withUnsafeBytes({ sendAll(fd, $0) }) else { return (.close, true) }
            if !rest.isEmpty { core.bodyBytesSent(rest.count) }
            return (close ? .close : .keepAlive, false)

        case .writer(let status, let headers, let chunked, let write):
            let close = head.wantsClose || !chunked || headers.contains { isConnectionClose($0) }
            let framing = chunked ? [ServerHeader(name: "Transfer-Encoding", value: "chunked")] : []
            buildHead(status: status, headers: headers + framing, contentLength: nil, close: close)
            guard sendHeadAndBody(Data()) else { return (.close, true) }
            if head.isHEAD { return (close ? .close : .keepAlive, false) }
            let writer = ResponseWriter(
                chunked: chunked, send: { [fd] in sendAll(fd, $0) },
                wait: { [unowned self] in waitWatchingClient(for: $0) == .elapsed },
                counted: { [core] in core.bodyBytesSent($0) })
            let ending = write(writer)
            if writer.clientWentAway { return (.close, !core.isStopped) }
            switch ending {
            case .finish:
                guard writer.finish() else { return (.close, true) }
                return (close ? .close : .keepAlive, false)
            case .close: return (.close, false)
            case .reset: return (.reset, false)
            }

        case .interimForever(let status, let interval):
            output.removeAll(keepingCapacity: true)
            append("HTTP/1.1 ")
            appendDecimal(status)
            output.append(asciiSpace)
            append(reasonPhrase(status))
            append("\r\n\r\n")
            while true {
                guard output.withUnsafeBytes({ sendAll(fd, $0) }) else { return (.close, true) }
                core.interimResponseSent()
                switch waitWatchingClient(for: interval) {
                case .elapsed: continue
                case .clientClosed: return (.close, true)
                case .stopped: return (.close, false)
                }
            }
        }
    }

    /// Sends a generated body: the head (with `Content-Length: declaredLength`, or chunked), then the body piece by
    /// piece up to `holdAfter` bytes, then holds the connection if the body was cut short.
    private func sendGenerated(
        _ body: GeneratedBody, status: Int, headers: [ServerHeader], chunked: Bool, declaredLength: Int,
        holdAfter: Int?, head: RequestHead
    ) -> (Next, Bool) {
        let framing =
            chunked
            ? ServerHeader(name: "Transfer-Encoding", value: "chunked")
            : ServerHeader(name: "Content-Length", value: String(declaredLength))
        let lies = !chunked && declaredLength != body.count
        let close = head.wantsClose || lies || headers.contains { isConnectionClose($0) }
        buildHead(status: status, headers: headers + [framing], contentLength: nil, close: close)
        guard sendHeadAndBody(Data()) else { return (.close, true) }
        if head.isHEAD { return (close ? .close : .keepAlive, false) }

        let toSend = min(body.count, max(0, holdAfter ?? .max))
        // Room for a chunk-size line before the data and a CRLF after it.
        let lineRoom = 18
        let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: GeneratedBody.pieceSize + lineRoom + 2)
        defer { scratch.deallocate() }
        var offset = 0
        while offset < toSend {
            if core.isStopped { return (.close, false) }
            let count = body.copy(
                into: scratch + lineRoom, capacity: min(GeneratedBody.pieceSize, toSend - offset), from: offset)
            var start = lineRoom
            var end = lineRoom + count
            if chunked {
                let line = Array((String(count, radix: 16) + "\r\n").utf8)
                start -= line.count
                line.withUnsafeBufferPointer { (scratch + start).update(from: $0.baseAddress!, count: line.count) }
                scratch[end] = asciiCR
                scratch[end + 1] = asciiLF
                end += 2
            }
            guard sendAll(fd, UnsafeRawBufferPointer(start: scratch + start, count: end - start)) else {
                return (.close, true)
            }
            core.bodyBytesSent(count)
            offset += count
        }
        if toSend < body.count {
            switch waitWatchingClient(for: nil) {
            case .elapsed, .stopped: return (.close, false)
            case .clientClosed: return (.close, true)
            }
        }
        if chunked {
            guard Array("0\r\n\r\n".utf8).withUnsafeBytes({ sendAll(fd, $0) }) else { return (.close, true) }
        }
        return (close ? .close : .keepAlive, false)
    }

    private func respond(status: Int, headers: [ServerHeader], body: Data, delay: Duration, head: RequestHead)
        -> (Next, Bool)
    {
        if delay > .zero {
            switch waitWatchingClient(for: delay) {
            case .elapsed: break
            case .clientClosed: return (.close, true)
            case .stopped: return (.close, false)
            }
        }
        let close = head.wantsClose || headers.contains { isConnectionClose($0) }
        let hasNoBody = (100..<200).contains(status) || status == 204 || status == 304
        buildHead(status: status, headers: headers, contentLength: hasNoBody ? nil : body.count, close: close)
        guard sendHeadAndBody(hasNoBody || head.isHEAD ? Data() : body) else { return (.close, true) }
        return (close ? .close : .keepAlive, false)
    }

    private func isConnectionClose(_ header: ServerHeader) -> Bool {
        asciiCaseInsensitiveEquals(header.name, "Connection")
            && header.value.split(separator: ",").contains {
                asciiCaseInsensitiveEquals($0.trimmingCharacters(in: .whitespaces), "close")
            }
    }

    // MARK: Writing

    private func append(_ text: String) {
        output.append(contentsOf: text.utf8)
    }

    private func appendDecimal(_ value: Int) {
        if value < 0 { output.append(0x2D) }
        appendDigits(value.magnitude)
    }

    private func appendDigits(_ value: UInt) {
        if value >= 10 { appendDigits(value / 10) }
        output.append(0x30 + UInt8(value % 10))
    }

    /// Writes the status line and header fields into `output`, adding `Content-Length` (unless `contentLength` is
    /// nil or the handler gave `Content-Length`/`Transfer-Encoding`) and `Connection: close` if `close`.
    private func buildHead(status: Int, headers: [ServerHeader], contentLength: Int?, close: Bool) {
        output.removeAll(keepingCapacity: true)
        append("HTTP/1.1 ")
        appendDecimal(status)
        output.append(asciiSpace)
        append(reasonPhrase(status))
        append("\r\n")
        var hasFraming = false
        var hasConnection = false
        for header in headers {
            append(header.name)
            append(": ")
            append(header.value)
            append("\r\n")
            if asciiCaseInsensitiveEquals(header.name, "Content-Length")
                || asciiCaseInsensitiveEquals(header.name, "Transfer-Encoding")
            {
                hasFraming = true
            } else if asciiCaseInsensitiveEquals(header.name, "Connection") {
                hasConnection = true
            }
        }
        if let contentLength, !hasFraming {
            append("Content-Length: ")
            appendDecimal(contentLength)
            append("\r\n")
        }
        if close && !hasConnection { append("Connection: close\r\n") }
        append("\r\n")
    }

    /// Sends `output` followed by `body`: as one `send` for small bodies, else as two.
    private func sendHeadAndBody(_ body: Data) -> Bool {
        if body.count <= Self.coalescedBodyLimit {
            output.append(contentsOf: body)
            guard output.withUnsafeBytes({ sendAll(fd, $0) }) else { return false }
        } else {
            guard output.withUnsafeBytes({ sendAll(fd, $0) }) else { return false }
            guard body.withUnsafeBytes({ sendAll(fd, $0) }) else { return false }
        }
        if !body.isEmpty { core.bodyBytesSent(body.count) }
        return true
    }

    /// Answers a request that could not be parsed, then half-closes and briefly drains the input so that the client
    /// sees the response instead of a reset caused by unread data.
    private func sendErrorAndClose(_ status: Int) {
        buildHead(status: status, headers: [], contentLength: 0, close: true)
        guard sendHeadAndBody(Data()) else { return }
        _ = shutdown(fd, Int32(SHUT_WR))
        var drained = 0
        for _ in 0..<20 {
            if core.isStopped { return }
            guard pollReadable(fd, milliseconds: Self.watchSliceMilliseconds) else { continue }
            start = 0
            end = 0
            guard let received = receiveNow(fd, buffer, Self.capacity) else { continue }
            guard received > 0 else { return }
            drained += received
            if drained > 1 << 20 { return }
        }
    }

    // MARK: Waiting

    private enum WaitOutcome {
        case elapsed
        case clientClosed
        case stopped
    }

    /// Waits for `duration` (nil: until the client closes or the server stops) in slices of at most 10 ms, checking
    /// for a closed/reset client connection and for `stop()` after each slice.
    private func waitWatchingClient(for duration: Duration?) -> WaitOutcome {
        let clock = ContinuousClock()
        let deadline = duration.map { clock.now.advanced(by: $0) }
        while true {
            if core.isStopped { return .stopped }
            var slice = Self.watchSliceMilliseconds
            if let deadline {
                let remaining = clock.now.duration(to: deadline)
                if remaining <= .zero { return .elapsed }
                let (seconds, attoseconds) = remaining.components
                let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
                slice = Int32(min(Int64(slice), max(1, milliseconds)))
            }
            guard pollReadable(fd, milliseconds: slice) else { continue }
            if core.isStopped { return .stopped }
            if end < Self.capacity {
                // Readable: either end of stream/reset, or pipelined bytes, which are kept for the next request.
                guard let received = receiveNow(fd, buffer + end, Self.capacity - end) else { continue }
                if received <= 0 { return .clientClosed }
                end += received
            } else {
                var byte: UInt8 = 0
                guard let received = receiveNow(fd, &byte, 1, peek: true) else { continue }
                if received <= 0 { return .clientClosed }
                sleepMilliseconds(slice)
            }
        }
    }
}
