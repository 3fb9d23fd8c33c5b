import Foundation
import Testing

@testable import Courier

/// The WHATWG HTML standard's event stream interpretation, one rule per test. Every expected value is written out from
/// the standard, never computed by the parser.
@Suite("EventStreamParser: the WHATWG event stream interpretation")
struct EventStreamParserTests {
    // MARK: - Helpers

    /// The events a fresh parser dispatches for `text` fed whole.
    private static func events(_ text: String) throws -> [ServerSentEvent] {
        var parser = EventStreamParser(maximumItemSize: 1 << 20)
        return try parser.parse(Data(text.utf8))
    }

    /// The events a fresh parser dispatches for `bytes` fed whole.
    private static func events(_ bytes: [UInt8]) throws -> [ServerSentEvent] {
        var parser = EventStreamParser(maximumItemSize: 1 << 20)
        return try parser.parse(Data(bytes))
    }

    /// The events a parser dispatches for `chunks` fed one after another, all concatenated.
    private static func events(chunks: [[UInt8]], parser: inout EventStreamParser) throws -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for chunk in chunks { events += try parser.parse(Data(chunk)) }
        return events
    }

    /// The events a fresh parser dispatches for `chunks` fed one after another.
    private static func events(chunks: [[UInt8]]) throws -> [ServerSentEvent] {
        var parser = EventStreamParser(maximumItemSize: 1 << 20)
        return try events(chunks: chunks, parser: &parser)
    }

    /// `bytes` cut at each of `boundaries` (ascending offsets).
    private static func split(_ bytes: [UInt8], at boundaries: [Int]) -> [[UInt8]] {
        var chunks: [[UInt8]] = []
        var start = 0
        for boundary in boundaries {
            chunks.append(Array(bytes[start..<boundary]))
            start = boundary
        }
        chunks.append(Array(bytes[start...]))
        return chunks
    }

    /// Records an issue unless `body` throws `responseTooLarge` with `limit`.
    private static func expectTooLarge(
        limit: Int, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
    ) {
        do {
            try body()
            Issue.record(
                "expected responseTooLarge(limit: \(limit)), nothing was thrown", sourceLocation: sourceLocation)
        } catch NetworkClientError.responseTooLarge(let reported) {
            #expect(reported == limit, sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected responseTooLarge(limit: \(limit)), got \(error)", sourceLocation: sourceLocation)
        }
    }

    /// A reproducible pseudo-random generator (SplitMix64), so that a failure can be replayed.
    private struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64

        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    // MARK: - Fields

    @Test("A parser starts with no last event ID, no retry value and nothing dispatched")
    func initialState() {
        let parser = EventStreamParser(maximumItemSize: 64)
        #expect(parser.lastEventID == "")
        #expect(parser.retry == nil)
        #expect(parser.dispatchedSinceConnectionStart == false)
        #expect(parser.pendingLineByteCount == 0)
    }

    @Test("A line that starts with a colon is a comment and is ignored; a block of comments dispatches nothing")
    func comments() throws {
        #expect(try Self.events(": keep-alive\n\n") == [])
        #expect(try Self.events(":\ndata: a\n: data: b\n:data: c\n\n") == [ServerSentEvent(data: "a")])
    }

    @Test("The event field names the event type; a block without one, or with an empty one, is a \"message\"")
    func eventNames() throws {
        let text = "event: add\ndata: 1\n\ndata: 2\n\nevent:\ndata: 3\n\nevent: a\nevent: b\ndata: 4\n\n"
        #expect(
            try Self.events(text) == [
                ServerSentEvent(event: "add", data: "1"),
                ServerSentEvent(event: "message", data: "2"),
                ServerSentEvent(event: "message", data: "3"),
                ServerSentEvent(event: "b", data: "4"),
            ])
    }

    @Test("The event type of a block without data is reset by its blank line, not carried to the next block")
    func eventTypeOfAnEmptyBlockIsReset() throws {
        #expect(try Self.events("event: lost\n\ndata: x\n\n") == [ServerSentEvent(event: "message", data: "x")])
    }

    @Test("The data fields of a block are joined with LF")
    func multiLineData() throws {
        #expect(try Self.events("data: a\ndata: b\ndata: c\n\n") == [ServerSentEvent(data: "a\nb\nc")])
        #expect(try Self.events("data: {\"a\":\ndata: 1}\n\n") == [ServerSentEvent(data: "{\"a\":\n1}")])
    }

    @Test("One trailing LF is removed from the data buffer, once")
    func trailingLineFeedRemovedOnce() throws {
        #expect(try Self.events("data: a\ndata:\n\n") == [ServerSentEvent(data: "a\n")])
        #expect(try Self.events("data:\ndata:\n\n") == [ServerSentEvent(data: "\n")])
        #expect(try Self.events("data:\n\n") == [ServerSentEvent(data: "")])
    }

    @Test("A block without data dispatches nothing, but its blank line still sets the last event ID")
    func emptyDataDispatchesNothingButUpdatesLastEventID() throws {
        var parser = EventStreamParser(maximumItemSize: 64)
        #expect(try parser.parse(Data("id: 7\n\n".utf8)) == [])
        #expect(parser.lastEventID == "7")
        #expect(parser.dispatchedSinceConnectionStart == false)
        #expect(try parser.parse(Data("data: x\n\n".utf8)) == [ServerSentEvent(data: "x", id: "7")])
    }

    @Test("The last event ID changes only at a blank line, not when the id field is read")
    func lastEventIDChangesAtDispatch() throws {
        var parser = EventStreamParser(maximumItemSize: 64)
        #expect(try parser.parse(Data("id: 1\ndata: a\n".utf8)) == [])
        #expect(parser.lastEventID == "")
        #expect(try parser.parse(Data("\n".utf8)) == [ServerSentEvent(data: "a", id: "1")])
        #expect(parser.lastEventID == "1")
    }

    @Test("An id field whose value contains U+0000 is ignored")
    func idWithNullIgnored() throws {
        var parser = EventStreamParser(maximumItemSize: 64)
        let events = try parser.parse(Data("id: 1\ndata: a\n\nid: 2\u{0}3\ndata: b\n\nid: \u{0}\ndata: c\n\n".utf8))
        #expect(
            events == [
                ServerSentEvent(data: "a", id: "1"),
                ServerSentEvent(data: "b", id: "1"),
                ServerSentEvent(data: "c", id: "1"),
            ])
        #expect(parser.lastEventID == "1")
    }

    @Test("The last event ID persists across events and across connectionEnded()")
    func idPersists() throws {
        var parser = EventStreamParser(maximumItemSize: 64)
        #expect(
            try parser.parse(Data("id: 42\ndata: a\n\ndata: b\n\n".utf8)) == [
                ServerSentEvent(data: "a", id: "42"),
                ServerSentEvent(data: "b", id: "42"),
            ])
        parser.connectionEnded()
        #expect(parser.lastEventID == "42")
        #expect(try parser.parse(Data("data: c\n\n".utf8)) == [ServerSentEvent(data: "c", id: "42")])
    }

    @Test("The id field of a block cut off by the end of the connection is forgotten with the block")
    func idOfDiscardedBlockForgotten() throws {
        var parser = EventStreamParser(maximumItemSize: 64)
        #expect(
            try parser.parse(Data("id: 1\ndata: a\n\nid: 2\ndata: b\n".utf8)) == [ServerSentEvent(data: "a", id: "1")])
        parser.connectionEnded()
        #expect(parser.lastEventID == "1")
        #expect(try parser.parse(Data("data: c\n\n".utf8)) == [ServerSentEvent(data: "c", id: "1")])
    }

    @Test("An empty id field resets the last event ID: later events have a nil id")
    func emptyIDResets() throws {
        var parser = EventStreamParser(maximumItemSize: 64)
        let events = try parser.parse(Data("id: 1\ndata: a\n\nid:\ndata: b\n\nid: 2\ndata: c\n\nid\ndata: d\n\n".utf8))
        #expect(
            events == [
                ServerSentEvent(data: "a", id: "1"),
                ServerSentEvent(data: "b", id: nil),
                ServerSentEvent(data: "c", id: "2"),
                ServerSentEvent(data: "d", id: nil),
            ])
        #expect(parser.lastEventID == "")
    }

    @Test("retry sets the reconnection time only when its value is ASCII digits; it dispatches nothing")
    func retryDigitsOnly() throws {
        var parser = EventStreamParser(maximumItemSize: 64)
        #expect(try parser.parse(Data("retry: 3000\n\n".utf8)) == [])
        #expect(parser.retry == 3000)
        let ignored = [
            "retry: 12a", "retry: -1", "retry: +5", "retry:", "retry: ", "retry:  5", "retry: 5 ", "retry: 1.5",
            "retry: 99999999999999999999999", "retry: \u{0661}",
        ]
        for line in ignored {
            _ = try parser.parse(Data((line + "\n").utf8))
            #expect(parser.retry == 3000, "\(line)")
        }
        _ = try parser.parse(Data("retry:0\n".utf8))
        #expect(parser.retry == 0)
        _ = try parser.parse(Data("retry: 0012\n".utf8))
        #expect(parser.retry == 12)
        #expect(parser.dispatchedSinceConnectionStart == false)
    }

    @Test("The retry value persists across connectionEnded()")
    func retryPersists() throws {
        var parser = EventStreamParser(maximumItemSize: 64)
        _ = try parser.parse(Data("retry: 1500\n".utf8))
        parser.connectionEnded()
        #expect(parser.retry == 1500)
    }

    @Test("Fields other than event, data, id and retry are ignored")
    func unknownFieldsIgnored() throws {
        #expect(try Self.events("foo: bar\ndata: a\nbar\nevents: x\ndatas: y\n\n") == [ServerSentEvent(data: "a")])
        #expect(try Self.events("foo: bar\n\n") == [])
    }

    @Test("A line without a colon is a field name with an empty value")
    func fieldWithoutColon() throws {
        #expect(try Self.events("data\ndata\n\n") == [ServerSentEvent(data: "\n")])
        #expect(try Self.events("event: x\nevent\ndata: a\n\n") == [ServerSentEvent(event: "message", data: "a")])
    }

    @Test("A value without the leading space is taken whole")
    func valueWithoutLeadingSpace() throws {
        #expect(try Self.events("event:add\ndata:a\nid:1\n\n") == [ServerSentEvent(event: "add", data: "a", id: "1")])
    }

    @Test("Only one leading space is removed from a value; trailing spaces are kept")
    func onlyOneLeadingSpaceRemoved() throws {
        #expect(try Self.events("data:  a \n\n") == [ServerSentEvent(data: " a ")])
        #expect(try Self.events("event:  add\ndata:\u{20}\n\n") == [ServerSentEvent(event: " add", data: "")])
        #expect(try Self.events("data:\ta\n\n") == [ServerSentEvent(data: "\ta")])
    }

    @Test("The field name ends at the first colon; later colons belong to the value")
    func fieldNameEndsAtFirstColon() throws {
        #expect(try Self.events("data: a: b:c\n\n") == [ServerSentEvent(data: "a: b:c")])
        #expect(try Self.events("data::\n\n") == [ServerSentEvent(data: ":")])
    }

    @Test("Field names are case-sensitive")
    func caseSensitiveNames() throws {
        #expect(try Self.events("Data: a\nDATA: b\nEvent: x\nID: 5\nRetry: 10\n\n") == [])
        var parser = EventStreamParser(maximumItemSize: 64)
        #expect(try parser.parse(Data("EVENT: x\nId: 5\nRETRY: 10\ndata: c\n\n".utf8)) == [ServerSentEvent(data: "c")])
        #expect(parser.retry == nil)
        #expect(parser.lastEventID == "")
    }

    // MARK: - Line ends

    @Test("Lines end with CRLF")
    func crlfLineEnds() throws {
        #expect(
            try Self.events("event: e\r\ndata: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n") == [
                ServerSentEvent(event: "e", data: "a\nb"), ServerSentEvent(data: "c"),
            ])
    }

    @Test("Lines end with LF")
    func lfLineEnds() throws {
        #expect(
            try Self.events("event: e\ndata: a\ndata: b\n\ndata: c\n\n") == [
                ServerSentEvent(event: "e", data: "a\nb"), ServerSentEvent(data: "c"),
            ])
    }

    @Test("Lines end with a lone CR")
    func crLineEnds() throws {
        #expect(
            try Self.events("event: e\rdata: a\rdata: b\r\rdata: c\r\r") == [
                ServerSentEvent(event: "e", data: "a\nb"), ServerSentEvent(data: "c"),
            ])
    }

    @Test("Mixed line ends: CRLF is one line end, LF CR is two")
    func mixedLineEnds() throws {
        #expect(
            try Self.events("data: a\r\ndata: b\rdata: c\n\r\ndata: d\n\rdata: e\r\n\n") == [
                ServerSentEvent(data: "a\nb\nc"), ServerSentEvent(data: "d"), ServerSentEvent(data: "e"),
            ])
    }

    // MARK: - Decoding

    @Test("A leading byte order mark is stripped once per connection; a second one is text")
    func byteOrderMark() throws {
        var parser = EventStreamParser(maximumItemSize: 64)
        #expect(try parser.parse(Data(Self.byteOrderMark + Array("data: a\n\n".utf8))) == [ServerSentEvent(data: "a")])
        // Not at the start of the stream: part of the field name "\u{FEFF}data", which is ignored.
        #expect(try parser.parse(Data(Self.byteOrderMark + Array("data: b\n\n".utf8))) == [])
        parser.connectionEnded()
        #expect(try parser.parse(Data(Self.byteOrderMark + Array("data: c\n\n".utf8))) == [ServerSentEvent(data: "c")])
        parser.connectionEnded()
        let twice = Self.byteOrderMark + Self.byteOrderMark + Array("data: d\n\ndata: \u{FEFF}e\n\n".utf8)
        #expect(try parser.parse(Data(twice)) == [ServerSentEvent(data: "\u{FEFF}e")])
    }

    @Test("Without a byte order mark the first line is read as it is")
    func noByteOrderMark() throws {
        #expect(try Self.events("data: a\n\n") == [ServerSentEvent(data: "a")])
        #expect(try Self.events([0xEF, 0xBB, 0x0A] + Array("data: a\n\n".utf8)) == [ServerSentEvent(data: "a")])
        #expect(try Self.events([0xEF, 0xBB] + Array("data: a\n\n".utf8)) == [])  // "\u{FFFD}data" is no field
    }

    @Test("The last block without a blank line is discarded when the connection ends")
    func lastBlockDiscardedAtConnectionEnd() throws {
        var parser = EventStreamParser(maximumItemSize: 64)
        #expect(try parser.parse(Data("data: a\n\nevent: x\ndata: b\n".utf8)) == [ServerSentEvent(data: "a")])
        parser.connectionEnded()
        #expect(try parser.parse(Data("data: c\n\n".utf8)) == [ServerSentEvent(data: "c")])
        #expect(try parser.parse(Data("data: d".utf8)) == [])
        #expect(parser.pendingLineByteCount == 7)
        parser.connectionEnded()
        #expect(parser.pendingLineByteCount == 0)
        #expect(try parser.parse(Data("\ndata: e\n\n".utf8)) == [ServerSentEvent(data: "e")])
    }

    @Test("dispatchedSinceConnectionStart tells whether an event was dispatched on the current connection")
    func dispatchedSinceConnectionStart() throws {
        var parser = EventStreamParser(maximumItemSize: 64)
        _ = try parser.parse(Data(": hi\n\nid: 1\n\nretry: 5\n\n".utf8))
        #expect(parser.dispatchedSinceConnectionStart == false)
        _ = try parser.parse(Data("data: a\n\n".utf8))
        #expect(parser.dispatchedSinceConnectionStart)
        parser.connectionEnded()
        #expect(parser.dispatchedSinceConnectionStart == false)
    }

    @Test("Bytes that are not valid UTF-8 become U+FFFD, one per maximal invalid subpart")
    func invalidUTF8() throws {
        let bytes: [UInt8] =
            Array("data: a".utf8) + [0xFF] + Array("b".utf8) + [0x0A]  // a stray byte
            + Array("data: ".utf8) + [0xE2, 0x82] + [0x0A]  // a truncated 3-byte character
            + Array("data: ".utf8) + [0xF0, 0x9F, 0x98] + Array("c".utf8) + [0x0A]  // a truncated 4-byte character
            + Array("data: ".utf8) + [0xC0, 0x80] + [0x0A]  // an overlong encoding: two invalid bytes
            + Array("event: ".utf8) + [0xED, 0xA0, 0x80] + [0x0A]  // a surrogate: three invalid bytes
            + Array("id: ".utf8) + [0xFE] + [0x0A, 0x0A]
        #expect(
            try Self.events(bytes) == [
                ServerSentEvent(
                    event: "\u{FFFD}\u{FFFD}\u{FFFD}", data: "a\u{FFFD}b\n\u{FFFD}\n\u{FFFD}c\n\u{FFFD}\u{FFFD}",
                    id: "\u{FFFD}")
            ])
    }

    // MARK: - Chunk boundaries

    private static let threeEvents =
        "retry: 100\nevent: a\ndata: 1\nid: x\n\n: note\ndata: 2\r\ndata: 3\r\n\r\ndata: é€😀\r\r"
    private static let threeEventsExpected = [
        ServerSentEvent(event: "a", data: "1", id: "x"),
        ServerSentEvent(event: "message", data: "2\n3", id: "x"),
        ServerSentEvent(event: "message", data: "é€😀", id: "x"),
    ]

    @Test("A three-event stream fed one byte per chunk gives exactly the events of the whole stream")
    func oneBytePerChunk() throws {
        let bytes = Array(Self.threeEvents.utf8)
        #expect(try Self.events(bytes) == Self.threeEventsExpected)
        var parser = EventStreamParser(maximumItemSize: 64)
        #expect(try Self.events(chunks: bytes.map { [$0] }, parser: &parser) == Self.threeEventsExpected)
        #expect(parser.retry == 100)
        #expect(parser.lastEventID == "x")
    }

    @Test("A chunk boundary between the CR and the LF of a CRLF makes one line end, even with empty chunks between")
    func boundaryInsideCRLF() throws {
        #expect(
            try Self.events(chunks: [Array("data: a\r".utf8), Array("\ndata: b\r\n\r".utf8), [0x0A]]) == [
                ServerSentEvent(data: "a\nb")
            ])
        #expect(
            try Self.events(chunks: [Array("data: a\r".utf8), [], [], Array("\ndata: b\r\n\r\n".utf8)]) == [
                ServerSentEvent(data: "a\nb")
            ])
        // A CR at the end of a chunk followed by something else is a line end of its own.
        #expect(
            try Self.events(chunks: [Array("data: a\r".utf8), Array("data: b\r".utf8), [0x0D]]) == [
                ServerSentEvent(data: "a\nb")
            ])
        #expect(try Self.events(chunks: [Array("data: a\r".utf8), Array("\r".utf8)]) == [ServerSentEvent(data: "a")])
    }

    @Test("A chunk boundary inside a 2-, 3- or 4-byte UTF-8 character leaves the character whole")
    func boundaryInsideMultiByteCharacters() throws {
        for (character, length) in [("é", 2), ("€", 3), ("😀", 4)] {
            let bytes = Array("event: \(character)\nid: \(character)\ndata: \(character)\n\n".utf8)
            let expected = [ServerSentEvent(event: character, data: character, id: character)]
            // The character follows "event: ", then "\nid: ", then "\ndata: ".
            let starts = [7, 7 + length + 5, 7 + length + 5 + length + 7]
            for start in starts {
                #expect(Array(bytes[start..<start + length]) == Array(character.utf8))
                for cut in start + 1..<start + length {
                    let events = try Self.events(chunks: Self.split(bytes, at: [cut]))
                    #expect(events == expected, "\(character) split before byte \(cut)")
                }
                let betweenEveryByte = Array(start + 1..<start + length)
                #expect(try Self.events(chunks: Self.split(bytes, at: betweenEveryByte)) == expected)
            }
        }
    }

    @Test("A chunk boundary inside the byte order mark still strips it")
    func boundaryInsideByteOrderMark() throws {
        let bytes = Self.byteOrderMark + Array("data: a\n\n".utf8)
        for boundaries in [[1], [2], [3], [1, 2], [1, 2, 3], [1, 1, 2, 2, 3, 4]] {
            #expect(try Self.events(chunks: Self.split(bytes, at: boundaries)) == [ServerSentEvent(data: "a")])
        }
        // The second connection strips its own mark, split too.
        var parser = EventStreamParser(maximumItemSize: 64)
        #expect(try Self.events(chunks: Self.split(bytes, at: [1]), parser: &parser) == [ServerSentEvent(data: "a")])
        parser.connectionEnded()
        #expect(try Self.events(chunks: Self.split(bytes, at: [2]), parser: &parser) == [ServerSentEvent(data: "a")])
        // The first bytes of a mark followed by something else are text.
        let notAMark: [UInt8] = [0xEF, 0xBB] + Array("\ndata: b\n\n".utf8)
        #expect(try Self.events(chunks: Self.split(notAMark, at: [1, 2])) == [ServerSentEvent(data: "b")])
    }

    @Test("A Data slice is read from its own start index")
    func dataSlice() throws {
        var parser = EventStreamParser(maximumItemSize: 64)
        let whole = Data("xxdata: a\n\ndata: b\n\nyy".utf8)
        #expect(
            try parser.parse(whole[2..<whole.count - 2]) == [ServerSentEvent(data: "a"), ServerSentEvent(data: "b")])
    }

    /// A stream that exercises every rule, with a chunk boundary worth testing after almost every byte.
    private static let variedStream: [UInt8] =
        byteOrderMark + Array(": comment\r\nretry: 2500\nevent: update\r\ndata: first\r\ndata:second\n\n".utf8)
        + Array("id: 7\r\rdata:  spaced \nDATA: no\nfoo: bar\ndata\n\n".utf8)
        + Array("id: 8\u{0}\nevent:\ndata: é€😀\r\n\r\n".utf8)
        + Array("data: ".utf8) + [0xF0, 0x9F, 0x98] + Array("!\n".utf8) + [0x0D, 0x0A]
        + Array("id\nretry: 9x\ndata: :colon: \r\r".utf8)
        + Array("data: never dispatched\n".utf8)
    private static let variedStreamExpected = [
        ServerSentEvent(event: "update", data: "first\nsecond", id: nil),
        ServerSentEvent(event: "message", data: " spaced \n", id: "7"),
        ServerSentEvent(event: "message", data: "é€😀", id: "7"),
        ServerSentEvent(event: "message", data: "\u{FFFD}!", id: "7"),
        ServerSentEvent(event: "message", data: ":colon: ", id: nil),
    ]

    @Test("A varied stream split at every single boundary gives the events written out from the standard")
    func everySingleBoundary() throws {
        let bytes = Self.variedStream
        for boundary in 0...bytes.count {
            var parser = EventStreamParser(maximumItemSize: 64)
            let events = try Self.events(chunks: Self.split(bytes, at: [boundary]), parser: &parser)
            #expect(events == Self.variedStreamExpected, "boundary \(boundary)")
            #expect(parser.retry == 2500)
            #expect(parser.lastEventID == "")
        }
    }

    @Test("A varied stream split at random boundaries (fixed seed) gives the events written out from the standard")
    func randomBoundaries() throws {
        let bytes = Self.variedStream
        var generator = SeededGenerator(state: 20_240_611)
        for round in 0..<500 {
            let count = Int.random(in: 1...40, using: &generator)
            let boundaries = (0..<count).map { _ in Int.random(in: 0...bytes.count, using: &generator) }.sorted()
            var parser = EventStreamParser(maximumItemSize: 64)
            let events = try Self.events(chunks: Self.split(bytes, at: boundaries), parser: &parser)
            #expect(events == Self.variedStreamExpected, "round \(round): \(boundaries)")
            #expect(parser.retry == 2500)
        }
    }

    // MARK: - Limits

    @Test("A parser with a limit of 0 can be made, and throws for any line but a blank one")
    func zeroLimit() throws {
        var parser = EventStreamParser(maximumItemSize: 0)
        #expect(try parser.parse(Data("\n\r\n".utf8)) == [])
        Self.expectTooLarge(limit: 0) { _ = try parser.parse(Data(":".utf8)) }
    }

    @Test("A line longer than maximumItemSize throws responseTooLarge with that limit, whole or split")
    func lineLongerThanLimit() throws {
        var exact = EventStreamParser(maximumItemSize: 16)
        #expect(try exact.parse(Data("data: 0123456789\n\n".utf8)) == [ServerSentEvent(data: "0123456789")])
        Self.expectTooLarge(limit: 16) {
            var parser = EventStreamParser(maximumItemSize: 16)
            _ = try parser.parse(Data("data: 01234567890\n\n".utf8))
        }
        Self.expectTooLarge(limit: 16) {
            var parser = EventStreamParser(maximumItemSize: 16)
            _ = try parser.parse(Data(": a comment of 17\n".utf8))
        }
        Self.expectTooLarge(limit: 16) {
            var parser = EventStreamParser(maximumItemSize: 16)
            _ = try parser.parse(Data("data: 0123".utf8))
            #expect(parser.pendingLineByteCount == 10)
            _ = try parser.parse(Data("4567890\n".utf8))
        }
        Self.expectTooLarge(limit: 16) {
            var parser = EventStreamParser(maximumItemSize: 16)
            _ = try parser.parse(Data("data: 0123".utf8))
            _ = try parser.parse(Data("4567890".utf8))
        }
    }

    @Test("A 10 MB stream without a line end throws within limit + one chunk, holding at most the limit")
    func endlessLine() throws {
        let limit = 1 << 20
        let chunkSize = 64 * 1024
        let chunk = Data(repeating: UInt8(ascii: "a"), count: chunkSize)
        var parser = EventStreamParser(maximumItemSize: limit)
        var fed = 0
        Self.expectTooLarge(limit: limit) {
            while fed < 10_000_000 {
                fed += chunk.count
                let events = try parser.parse(chunk)
                #expect(events == [])
                #expect(parser.pendingLineByteCount <= limit)
            }
        }
        #expect(fed > limit)
        #expect(fed <= limit + chunkSize)
        #expect(parser.pendingLineByteCount <= limit)
    }

    @Test("Data lines whose data buffer together grows past maximumItemSize throw responseTooLarge")
    func dataBufferLimit() throws {
        // Each line adds its 10-byte value and an LF: two lines make 22 bytes, three make 33.
        var parser = EventStreamParser(maximumItemSize: 22)
        #expect(
            try parser.parse(Data("data: 0123456789\ndata: 0123456789\n\n".utf8)) == [
                ServerSentEvent(data: "0123456789\n0123456789")
            ])
        Self.expectTooLarge(limit: 22) {
            _ = try parser.parse(Data("data: 0123456789\ndata: 0123456789\ndata: 0123456789\n".utf8))
        }
        Self.expectTooLarge(limit: 21) {
            var smaller = EventStreamParser(maximumItemSize: 21)
            _ = try smaller.parse(Data("data: 0123456789\ndata: 0123456789\n".utf8))
        }
    }
}
