import Foundation
import Testing

@testable import Courier

/// Newline-delimited records split out of a body, whatever the chunk boundaries.
@Suite("LineSplitter: newline-delimited records")
struct LineSplitterTests {
    /// The lines `text` gives, as strings, fed whole to a fresh splitter.
    private static func lines(_ text: String) throws -> [String] {
        var splitter = LineSplitter(maximumLineSize: 1024)
        return try splitter.split(Data(text.utf8)).map { String(decoding: $0, as: UTF8.self) }
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

    @Test("Lines end with LF, which is not part of the line")
    func lineFeed() throws {
        #expect(try Self.lines("{\"a\":1}\n{\"a\":2}\n") == ["{\"a\":1}", "{\"a\":2}"])
    }

    @Test("Lines end with CRLF, which is not part of the line; a lone CR is not a line end")
    func carriageReturnLineFeed() throws {
        #expect(try Self.lines("{\"a\":1}\r\n{\"a\":2}\r\n") == ["{\"a\":1}", "{\"a\":2}"])
        #expect(try Self.lines("a\rb\n") == ["a\rb"])
        #expect(try Self.lines("a\r\r\n") == ["a\r"])
    }

    @Test("Empty lines and lines of only ASCII whitespace are skipped; other lines are kept as they are")
    func blankLinesSkipped() throws {
        #expect(try Self.lines("\n\r\n \n\t\r\n \u{0C} \n{}\n\n") == ["{}"])
        #expect(try Self.lines(" {} \n\t[]\n") == [" {} ", "\t[]"])
        #expect(try Self.lines("\u{0B}\n\u{A0}\n") == ["\u{0B}", "\u{A0}"])  // not ASCII whitespace
    }

    @Test("A line split across many chunks, even inside a CRLF, is handed on whole once it ends")
    func lineAcrossChunks() throws {
        var splitter = LineSplitter(maximumLineSize: 64)
        var lines: [Data] = []
        for byte in "{\"name\":\"é€😀\"}\r\n[1]\n".utf8 {
            lines += try splitter.split(Data([byte]))
        }
        #expect(lines == [Data("{\"name\":\"é€😀\"}".utf8), Data("[1]".utf8)])
        #expect(try splitter.split(Data("{\"a\"".utf8)) == [])
        #expect(splitter.pendingLineByteCount == 4)
        #expect(try splitter.split(Data(":1}\r".utf8)) == [])
        #expect(try splitter.split(Data("\n{".utf8)) == [Data("{\"a\":1}".utf8)])
        #expect(splitter.pendingLineByteCount == 1)
    }

    @Test("A Data slice is read from its own start index")
    func dataSlice() throws {
        var splitter = LineSplitter(maximumLineSize: 64)
        let whole = Data("xx{}\n[]\nyy".utf8)
        #expect(try splitter.split(whole[2..<whole.count - 2]) == [Data("{}".utf8), Data("[]".utf8)])
    }

    @Test("finish() returns the last line when the body did not end with a newline, and nil otherwise")
    func finishReturnsUnterminatedLine() throws {
        var splitter = LineSplitter(maximumLineSize: 64)
        #expect(try splitter.split(Data("{\"a\":1}\n{\"a\"".utf8)) == [Data("{\"a\":1}".utf8)])
        #expect(try splitter.split(Data(":2}".utf8)) == [])
        #expect(splitter.finish() == Data("{\"a\":2}".utf8))
        #expect(splitter.finish() == nil)

        var terminated = LineSplitter(maximumLineSize: 64)
        #expect(try terminated.split(Data("{}\n".utf8)) == [Data("{}".utf8)])
        #expect(terminated.finish() == nil)

        var blank = LineSplitter(maximumLineSize: 64)
        #expect(try blank.split(Data("{}\n \t".utf8)) == [Data("{}".utf8)])
        #expect(blank.finish() == nil)

        var endsWithCR = LineSplitter(maximumLineSize: 64)
        #expect(try endsWithCR.split(Data("{}\r".utf8)) == [])
        #expect(endsWithCR.finish() == Data("{}".utf8))

        var empty = LineSplitter(maximumLineSize: 64)
        #expect(empty.finish() == nil)
    }

    @Test("A line longer than maximumLineSize throws responseTooLarge with that limit; its line end does not count")
    func lineLimit() throws {
        var exact = LineSplitter(maximumLineSize: 8)
        #expect(try exact.split(Data("12345678\n".utf8)) == [Data("12345678".utf8)])
        #expect(try exact.split(Data("12345678\r".utf8)) == [])
        #expect(try exact.split(Data("\n12345678".utf8)) == [Data("12345678".utf8)])
        #expect(exact.finish() == Data("12345678".utf8))

        Self.expectTooLarge(limit: 8) {
            var splitter = LineSplitter(maximumLineSize: 8)
            _ = try splitter.split(Data("123456789\n".utf8))
        }
        Self.expectTooLarge(limit: 8) {
            var splitter = LineSplitter(maximumLineSize: 8)
            _ = try splitter.split(Data("123456789\r\n".utf8))
        }
        Self.expectTooLarge(limit: 8) {
            var splitter = LineSplitter(maximumLineSize: 8)
            _ = try splitter.split(Data("1234".utf8))
            _ = try splitter.split(Data("56789".utf8))
        }
        Self.expectTooLarge(limit: 8) {
            var splitter = LineSplitter(maximumLineSize: 8)
            _ = try splitter.split(Data("12345678\r".utf8))
            _ = try splitter.split(Data("9\n".utf8))
        }
        Self.expectTooLarge(limit: 8) {
            var splitter = LineSplitter(maximumLineSize: 8)
            _ = try splitter.split(Data("         \n".utf8))  // nine spaces: blank, but too long all the same
        }
    }

    @Test("A 10 MB body without a newline throws within limit + one chunk, holding at most the limit")
    func endlessLine() throws {
        let limit = 1 << 20
        let chunkSize = 64 * 1024
        let chunk = Data(repeating: UInt8(ascii: "a"), count: chunkSize)
        var splitter = LineSplitter(maximumLineSize: limit)
        var fed = 0
        Self.expectTooLarge(limit: limit) {
            while fed < 10_000_000 {
                fed += chunk.count
                let lines = try splitter.split(chunk)
                #expect(lines == [])
                #expect(splitter.pendingLineByteCount <= limit)
            }
        }
        #expect(fed > limit)
        #expect(fed <= limit + chunkSize)
        #expect(splitter.pendingLineByteCount <= limit)
    }
}
