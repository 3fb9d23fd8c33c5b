import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The iterator of a streamed response: ``ServerSentEvents`` (of ``ServerSentEvent``s), ``JSONLines`` (of its
/// `Element`) and ``ByteStream`` (of `Data` chunks) share it. A `for try await` loop makes it; you rarely name it.
///
/// It takes the body from the connection as it arrives, parses it into items the way its sequence says, hands them
/// out one at a time, and opens a new connection when the request's ``StreamReconnection`` says so. A stream has one
/// iterator: a second one ends at once with ``NetworkClientError/invalidRequest(reason:)``. Dropping the iterator
/// (breaking out of the loop) stops the transfer. What ends the sequence, and what ``next()`` throws then, is on each
/// sequence's page.
public struct StreamIterator<Element: Sendable>: AsyncIteratorProtocol {
    private let reading: StreamReading?
    /// The connection being read: told of each item handed out.
    private var channel: StreamChannel?
    /// The kind's parser; `nil` for canned items.
    private let parser: StreamParsing<Element>?
    private var ready: [Element] = []
    private var index = 0
    /// What ends the sequence once `ready` is drained: `nil` while it goes on.
    private var ending: Result<Void, any Error>?
    private var finished = false

    /// Reads `source` with `parser`; a second iterator of the same source ends at once with
    /// ``NetworkClientError/invalidRequest(reason:)``.
    init<Parser: StreamItemParser>(source: StreamSource, parser: Parser, kind: String) where Parser.Item == Element {
        self.parser = ParserBox(parser)
        if source.claimIterator() {
            reading = StreamReading(source)
            channel = source.channel
        } else {
            reading = nil
            ending = .failure(
                NetworkClientError.invalidRequest(
                    reason: "a \(kind) sequence can be iterated once, and this one already has an iterator"))
        }
    }

    /// Yields `items`, then ends: a canned stream.
    init(canned items: [Element]) {
        self.reading = nil
        self.parser = nil
        self.ready = items
        self.ending = .success(())
    }

    /// The next item, or `nil` once the sequence ended.
    /// - Throws: What ended the sequence, as its type documents it (``ServerSentEvents``, ``JSONLines``,
    ///   ``ByteStream``): ``NetworkClientError`` (a dropped connection, an item over the limit, a line that does not
    ///   decode), ``StreamError``, or `CancellationError`.
    public mutating func next() async throws -> Element? {
        if let item = nextReady() { return item }
        return try await refill()
    }

    /// The next item, as ``next()``; what a `for try await` loop calls (Swift 6).
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
    public mutating func next(isolation actor: isolated (any Actor)?) async throws -> Element? {
        if let item = nextReady() { return item }
        return try await refill()
    }

    /// The next item when one is parsed already: the path of nearly every item, without a suspension or a call to
    /// the parser.
    @inline(__always)
    private mutating func nextReady() -> Element? {
        guard index < ready.count else { return nil }
        let item = ready[index]
        index += 1
        channel?.noteProgress()
        return item
    }

    /// Reads and parses until an item is ready or the sequence ends: once per piece of the body, not per item.
    private mutating func refill(isolation: isolated (any Actor)? = #isolation) async throws -> Element? {
        while true {
            if let item = nextReady() { return item }
            ready.removeAll(keepingCapacity: true)
            index = 0
            if let ending { return try end(ending) }
            guard let source = reading?.source, let parser else { return try end(.success(())) }
            do {
                if let bytes = try await channel?.next() {
                    do {
                        try parser.parse(bytes, into: &ready)
                    } catch {
                        ending = .failure(error)
                    }
                    continue
                }
                // What the connection dispatched is known before the parser forgets it.
                let resumption = parser.resumption
                try parser.connectionEnded(cleanly: true, into: &ready)
                if try await !source.reconnect(after: nil, resumption: resumption) {
                    ending = .success(())
                }
                channel = source.channel
            } catch {
                if error is CancellationError || Task.isCancelled {
                    ending = .failure(CancellationError())
                    continue
                }
                // The connection failed: what it did not complete is forgotten; a reconnection may follow.
                let resumption = parser.resumption
                var discarded: [Element] = []
                try? parser.connectionEnded(cleanly: false, into: &discarded)
                do {
                    if try await !source.reconnect(after: error, resumption: resumption) {
                        ending = .success(())
                    }
                    channel = source.channel
                } catch {
                    ending = .failure(error is CancellationError || Task.isCancelled ? CancellationError() : error)
                }
            }
        }
    }

    /// Ends the sequence with `ending`, once, telling the source.
    private mutating func end(_ ending: Result<Void, any Error>) throws -> Element? {
        guard !finished else { return nil }
        finished = true
        switch ending {
        case .success:
            reading?.source.finish(nil, byReader: false)
            return nil
        case .failure(let error):
            reading?.source.finish(error, byReader: error is CancellationError)
            // An error of the parsing ends the sequence before the body did: the transfer stops.
            reading?.source.readerLeft()
            throw error
        }
    }
}

/// A stream kind's parser with its type erased to its items, so that one iterator type serves every kind: called once
/// per piece of the body (a class method call), never per item.
class StreamParsing<Item: Sendable> {
    func parse(_ bytes: Data, into items: inout [Item]) throws {
        preconditionFailure("StreamParsing is abstract: ParserBox overrides it")
    }

    func connectionEnded(cleanly: Bool, into items: inout [Item]) throws {
        preconditionFailure("StreamParsing is abstract: ParserBox overrides it")
    }

    var resumption: StreamResumption {
        preconditionFailure("StreamParsing is abstract: ParserBox overrides it")
    }
}

/// A ``StreamItemParser`` as a ``StreamParsing``.
final class ParserBox<Parser: StreamItemParser>: StreamParsing<Parser.Item> {
    private var parser: Parser

    init(_ parser: Parser) {
        self.parser = parser
    }

    override func parse(_ bytes: Data, into items: inout [Parser.Item]) throws {
        try parser.parse(bytes, into: &items)
    }

    override func connectionEnded(cleanly: Bool, into items: inout [Parser.Item]) throws {
        try parser.connectionEnded(cleanly: cleanly, into: &items)
    }

    override var resumption: StreamResumption { parser.resumption }
}
