import Foundation

/// Splits a body of newline-delimited records (NDJSON, JSON Lines) into lines, whatever the chunk boundaries.
///
/// Lines end with LF or CRLF; a lone CR is not a line end. Lines that are empty or hold only ASCII whitespace (space,
/// tab, LF, FF, CR) are skipped. The bytes are not decoded: a line is handed on as it arrived.
struct LineSplitter: Sendable {
    /// The longest line, without its LF or CRLF, in bytes.
    let maximumLineSize: Int

    /// The bytes of the current line that arrived in earlier chunks. Never more than `maximumLineSize` bytes, or one
    /// more when the last is a CR, which may be the first half of a CRLF.
    private var pendingLine: [UInt8] = []

    /// How many bytes the splitter holds for the incomplete current line (for tests of the memory bound).
    var pendingLineByteCount: Int { pendingLine.count }

    /// A splitter at the start of a body.
    ///
    /// - Parameter maximumLineSize: The longest line, without its LF or CRLF, in bytes. With 0, every line but an
    ///   empty one throws (a splitter that is never fed may use it).
    init(maximumLineSize: Int) {
        self.maximumLineSize = maximumLineSize
    }

    /// Complete lines in `bytes` (joined with what earlier calls left pending), without their LF or CRLF, skipping
    /// lines that are empty or only ASCII whitespace. Throws ``NetworkClientError/responseTooLarge(limit:)`` with
    /// `maximumLineSize` when a line grows past `maximumLineSize` (bounded memory for a server that never sends a
    /// newline); the lines found earlier in the same chunk are then lost (``split(_:into:)`` keeps them).
    mutating func split(_ bytes: Data) throws(NetworkClientError) -> [Data] {
        var lines: [Data] = []
        try split(bytes, into: &lines)
        return lines
    }

    /// Appends the complete lines in `bytes` to `lines`, as ``split(_:)`` finds them; when a line breaks the limit,
    /// the lines before it are appended and then ``NetworkClientError/responseTooLarge(limit:)`` is thrown.
    mutating func split(_ bytes: Data, into lines: inout [Data]) throws(NetworkClientError) {
        try bytes.withTypedUnsafeBytes { buffer throws(NetworkClientError) in try scan(buffer, into: &lines) }
    }

    /// The body ended cleanly: the last line, if it had no newline and is not blank (a CR that ends the body is
    /// removed, as the first half of a CRLF). The splitter is then ready for a new body.
    mutating func finish() -> Data? {
        defer { pendingLine = [] }
        return pendingLine.withUnsafeBytes { line in
            let record = Self.record(inLine: line)
            return record.isBlank ? nil : Data(record)
        }
    }

    private mutating func scan(_ buffer: UnsafeRawBufferPointer, into lines: inout [Data]) throws(NetworkClientError) {
        var lineStart = 0
        var index = 0
        let end = buffer.count
        while index < end {
            guard buffer[index] == .lineFeed else {
                index += 1
                continue
            }
            let line = UnsafeRawBufferPointer(rebasing: buffer[lineStart..<index])
            index += 1
            lineStart = index
            if pendingLine.isEmpty {
                try append(line, to: &lines)
            } else {
                pendingLine.append(contentsOf: line)
                try pendingLine.withUnsafeBytes { line in
                    Result { () throws(NetworkClientError) in try append(line, to: &lines) }
                }.get()
                pendingLine.removeAll(keepingCapacity: true)
            }
        }
        let tail = UnsafeRawBufferPointer(rebasing: buffer[lineStart..<end])
        guard let last = tail.last else { return }
        let size = pendingLine.count + tail.count
        // One byte more is allowed when it is a CR: the LF that makes it part of the line end may come next.
        guard size <= maximumLineSize || (size == maximumLineSize + 1 && last == .carriageReturn) else {
            throw .responseTooLarge(limit: maximumLineSize)
        }
        pendingLine.append(contentsOf: tail)
    }

    /// Appends the record of a complete line, without its LF, unless it is blank.
    private func append(_ line: UnsafeRawBufferPointer, to lines: inout [Data]) throws(NetworkClientError) {
        let record = Self.record(inLine: line)
        guard record.count <= maximumLineSize else { throw .responseTooLarge(limit: maximumLineSize) }
        if !record.isBlank { lines.append(Data(record)) }
    }

    /// The line without the CR of a CRLF.
    private static func record(inLine line: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        line.last == .carriageReturn ? UnsafeRawBufferPointer(rebasing: line.dropLast()) : line
    }
}

extension UInt8 {
    fileprivate static let lineFeed = UInt8(ascii: "\n")
    fileprivate static let carriageReturn = UInt8(ascii: "\r")
}

extension UnsafeRawBufferPointer {
    /// Whether the bytes are all ASCII whitespace (space, tab, LF, FF, CR), or none.
    fileprivate var isBlank: Bool {
        allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0C || $0 == 0x0D }
    }
}

extension Data {
    /// `body` over the bytes, with its typed error: `Data.withUnsafeBytes` rethrows untyped errors, so the error
    /// leaves the closure as a value.
    func withTypedUnsafeBytes(
        _ body: (UnsafeRawBufferPointer) throws(NetworkClientError) -> Void
    ) throws(NetworkClientError) {
        var failure: NetworkClientError?
        withUnsafeBytes { buffer in
            do throws(NetworkClientError) {
                try body(buffer)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }
}
