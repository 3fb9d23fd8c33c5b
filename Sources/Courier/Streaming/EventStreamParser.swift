import Foundation

/// Turns the bytes of a `text/event-stream` body into ``ServerSentEvent``s, exactly as the WHATWG HTML standard's
/// event stream interpretation ("Interpreting an event stream") does, whatever the chunk boundaries.
///
/// The parser works on bytes and decodes UTF-8 (invalid sequences become U+FFFD) only for the values it keeps: line
/// ends, the colon and the space are ASCII, which UTF-8 never uses inside a multi-byte character, so this gives the
/// same strings as decoding the whole stream first. One parser serves one event source across reconnections: call
/// ``connectionEnded()`` when a connection ends, then feed the next connection's bytes.
///
/// The last event ID buffer starts each connection at the last event ID string (as browsers do), so an `id` field of
/// a block that was cut off by the end of a connection is forgotten with the rest of that block.
///
/// One departure from the standard: an `id` whose value holds a control character other than tab is ignored, as the
/// standard ignores one with U+0000. A reconnection sends the last event ID as `Last-Event-ID`, and no header value
/// may hold those; ignoring the field keeps the last id that can be sent.
struct EventStreamParser: Sendable {
    /// The longest line, and the largest data buffer of one event (its `data` values plus one LF each), in bytes.
    let maximumItemSize: Int

    /// The last event ID string (WHATWG): "" until an `id` field set it; persists across connections.
    private(set) var lastEventID = ""
    /// The last valid `retry` field's value in milliseconds; nil until one arrived. Persists across connections.
    private(set) var retry: Int?
    /// Whether any event was dispatched since the last ``connectionEnded()`` (or since init). A blank line after a
    /// block without data dispatches nothing and does not count.
    private(set) var dispatchedSinceConnectionStart = false

    /// The bytes of the current line that arrived in earlier chunks; never more than `maximumItemSize` bytes, except
    /// at the start of a connection, where it may hold the first one or two bytes of a byte order mark until the third
    /// arrives.
    private var pendingLine: [UInt8] = []
    /// The connection's first bytes were not all seen yet, so whether they begin with a byte order mark is open.
    private var atConnectionStart = true
    /// The last chunk ended with CR: an LF that starts the next chunk belongs to the same line end.
    private var skipsLeadingLF = false

    /// The data buffer: each `data` value followed by LF.
    private var dataBuffer: [UInt8] = []
    /// The event type buffer: the last `event` value of the block.
    private var eventTypeBuffer = ""
    /// The last event ID buffer: the last `id` value without U+0000; copied to `lastEventID` at each dispatch.
    private var lastEventIDBuffer = ""

    /// How many bytes the parser holds for the incomplete current line (for tests of the memory bound).
    var pendingLineByteCount: Int { pendingLine.count }

    /// A parser at the start of its first connection.
    ///
    /// - Parameter maximumItemSize: The longest line, and the largest data buffer of one event, in bytes. With 0,
    ///   every line but a blank one throws (a parser that is never fed, for canned events, may use it).
    init(maximumItemSize: Int) {
        self.maximumItemSize = maximumItemSize
    }

    /// Feeds the next bytes of the current connection, returns the events dispatched by them, in order.
    ///
    /// Throws ``NetworkClientError/responseTooLarge(limit:)`` with `maximumItemSize` when a line (the bytes since the
    /// last line end) or the event's data buffer grows past `maximumItemSize`: memory stays bounded whatever the
    /// server sends. The events dispatched earlier in the same chunk are then lost (``parse(_:into:)`` keeps them).
    mutating func parse(_ bytes: Data) throws(NetworkClientError) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        try parse(bytes, into: &events)
        return events
    }

    /// Feeds the next bytes of the current connection and appends the events they dispatch, in order; when a line or
    /// an event breaks the limit, the events before it are appended and then ``NetworkClientError/responseTooLarge(limit:)``
    /// is thrown.
    mutating func parse(_ bytes: Data, into events: inout [ServerSentEvent]) throws(NetworkClientError) {
        try bytes.withTypedUnsafeBytes { buffer throws(NetworkClientError) in try scan(buffer, into: &events) }
    }

    /// The connection ended (cleanly or not): an incomplete line and an event not yet dispatched are discarded (a
    /// last block without a blank line is never dispatched), and the next bytes are a new stream (its own optional
    /// byte order mark, no pending CR). The last event ID and the retry value persist.
    mutating func connectionEnded() {
        pendingLine = []
        atConnectionStart = true
        skipsLeadingLF = false
        dataBuffer = []
        eventTypeBuffer = ""
        lastEventIDBuffer = lastEventID
        dispatchedSinceConnectionStart = false
    }

    // MARK: - Lines

    private mutating func scan(
        _ buffer: UnsafeRawBufferPointer, into events: inout [ServerSentEvent]
    ) throws(NetworkClientError) {
        var index = 0
        if atConnectionStart {
            guard let afterByteOrderMark = skipByteOrderMark(buffer) else { return }
            index = afterByteOrderMark
        }
        let end = buffer.count
        if skipsLeadingLF && index < end {
            skipsLeadingLF = false
            if buffer[index] == .lineFeed { index += 1 }
        }
        var lineStart = index
        while index < end {
            let byte = buffer[index]
            index += 1
            // Line ends are the only bytes at or below CR that matter; one comparison rules out most bytes.
            guard byte <= .carriageReturn, byte == .lineFeed || byte == .carriageReturn else { continue }
            try endLine(UnsafeRawBufferPointer(rebasing: buffer[lineStart..<index - 1]), into: &events)
            if byte == .carriageReturn {
                if index == end {
                    skipsLeadingLF = true
                } else if buffer[index] == .lineFeed {
                    index += 1
                }
            }
            lineStart = index
        }
        let tail = UnsafeRawBufferPointer(rebasing: buffer[lineStart..<end])
        guard pendingLine.count + tail.count <= maximumItemSize else {
            throw .responseTooLarge(limit: maximumItemSize)
        }
        pendingLine.append(contentsOf: tail)
    }

    /// Decides whether the connection starts with a byte order mark (EF BB BF), whose first bytes may have arrived in
    /// earlier chunks (kept in `pendingLine`). Returns the index of the first byte of `buffer` after the mark, or 0
    /// when there is none; nil when `buffer` ended before the question was settled (its bytes are then kept).
    private mutating func skipByteOrderMark(_ buffer: UnsafeRawBufferPointer) -> Int? {
        let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]
        var matched = pendingLine.count
        var index = 0
        while matched < byteOrderMark.count && index < buffer.count && buffer[index] == byteOrderMark[matched] {
            matched += 1
            index += 1
        }
        if matched == byteOrderMark.count {
            pendingLine.removeAll()
            atConnectionStart = false
            return index
        }
        if index == buffer.count {
            // Still a proper prefix of the mark.
            pendingLine.append(contentsOf: buffer)
            return nil
        }
        // Not a mark: the bytes held and those matched are text of the first line.
        atConnectionStart = false
        return 0
    }

    /// Interprets a complete line: `line` joined to the bytes that arrived before it in earlier chunks.
    private mutating func endLine(
        _ line: UnsafeRawBufferPointer, into events: inout [ServerSentEvent]
    ) throws(NetworkClientError) {
        guard pendingLine.count + line.count <= maximumItemSize else {
            throw .responseTooLarge(limit: maximumItemSize)
        }
        if pendingLine.isEmpty {
            try interpret(line, into: &events)
            return
        }
        // Take the storage out of `self` so that it can be read while `interpret` mutates `self`, then give it back
        // emptied, with its capacity.
        var joined: [UInt8] = []
        swap(&joined, &pendingLine)
        joined.append(contentsOf: line)
        defer {
            joined.removeAll(keepingCapacity: true)
            swap(&joined, &pendingLine)
        }
        try joined.withUnsafeBytes { joined in
            Result { () throws(NetworkClientError) in try interpret(joined, into: &events) }
        }.get()
    }

    // MARK: - Fields

    /// The WHATWG steps for one line, without its line end.
    private mutating func interpret(
        _ line: UnsafeRawBufferPointer, into events: inout [ServerSentEvent]
    ) throws(NetworkClientError) {
        guard let first = line.first else {
            dispatch(into: &events)
            return
        }
        if first == .colon { return }  // A comment.
        var nameEnd = 0
        while nameEnd < line.count && line[nameEnd] != .colon { nameEnd += 1 }
        let name = UnsafeRawBufferPointer(rebasing: line[0..<nameEnd])
        var valueStart = Swift.min(nameEnd + 1, line.count)
        if valueStart < line.count && line[valueStart] == .space { valueStart += 1 }
        let value = UnsafeRawBufferPointer(rebasing: line[valueStart...])

        if name.matches("data") {
            guard dataBuffer.count + value.count + 1 <= maximumItemSize else {
                throw .responseTooLarge(limit: maximumItemSize)
            }
            dataBuffer.append(contentsOf: value)
            dataBuffer.append(.lineFeed)
        } else if name.matches("event") {
            eventTypeBuffer = String(decoding: value, as: UTF8.self)
        } else if name.matches("id") {
            // The standard ignores an id with U+0000 (UTF-8 encodes it as the byte 0 and nothing else as it). Courier
            // ignores one with any control character but tab the same way: a reconnection sends the last event ID in
            // a header, where they may not go, so it resumes from the last id it can send.
            if value.allSatisfy(HeaderValidation.isAllowedInValue) {
                lastEventIDBuffer = String(decoding: value, as: UTF8.self)
            }
        } else if name.matches("retry") {
            if let milliseconds = Self.decimalDigitsValue(value) { retry = milliseconds }
        }
        // Any other field is ignored.
    }

    /// Dispatches the event of the block that a blank line ended.
    private mutating func dispatch(into events: inout [ServerSentEvent]) {
        lastEventID = lastEventIDBuffer
        guard !dataBuffer.isEmpty else {
            eventTypeBuffer = ""
            return
        }
        dataBuffer.removeLast()  // The LF after the last value: every value is followed by one.
        let event = ServerSentEvent(
            event: eventTypeBuffer.isEmpty ? "message" : eventTypeBuffer,
            data: String(decoding: dataBuffer, as: UTF8.self),
            id: lastEventID.isEmpty ? nil : lastEventID
        )
        events.append(event)
        dataBuffer.removeAll(keepingCapacity: true)
        eventTypeBuffer = ""
        dispatchedSinceConnectionStart = true
    }

    /// The base-ten value of a non-empty string of ASCII digits; nil for anything else, or when it overflows `Int`.
    private static func decimalDigitsValue(_ value: UnsafeRawBufferPointer) -> Int? {
        guard !value.isEmpty else { return nil }
        var result = 0
        for byte in value {
            guard byte >= .zero && byte <= .nine else { return nil }
            let (shifted, overflowed) = result.multipliedReportingOverflow(by: 10)
            let (sum, overflowedToo) = shifted.addingReportingOverflow(Int(byte - .zero))
            guard !overflowed && !overflowedToo else { return nil }
            result = sum
        }
        return result
    }
}

extension UInt8 {
    fileprivate static let lineFeed = UInt8(ascii: "\n")
    fileprivate static let carriageReturn = UInt8(ascii: "\r")
    fileprivate static let colon = UInt8(ascii: ":")
    fileprivate static let space = UInt8(ascii: " ")
    fileprivate static let zero = UInt8(ascii: "0")
    fileprivate static let nine = UInt8(ascii: "9")
}

extension UnsafeRawBufferPointer {
    /// Whether the bytes are the UTF-8 of `name`, an ASCII field name (case-sensitive).
    fileprivate func matches(_ name: StaticString) -> Bool {
        guard count == name.utf8CodeUnitCount else { return false }
        for offset in 0..<count where self[offset] != name.utf8Start[offset] { return false }
        return true
    }
}
