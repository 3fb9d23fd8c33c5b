import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Reads the items of one stream kind out of its body's bytes: events, JSON lines or chunks.
protocol StreamItemParser: Sendable {
    associatedtype Item: Sendable

    /// Appends the items the next `bytes` of the current connection complete, in order. When a line breaks a rule
    /// (too long, not decodable) the items before it are appended first and then the error is thrown.
    mutating func parse(_ bytes: Data, into items: inout [Item]) throws
    /// The current connection ended, whole when `cleanly`: appends what that completes (a last line without a line
    /// end), and forgets what it does not (an event without its blank line).
    mutating func connectionEnded(cleanly: Bool, into items: inout [Item]) throws
    /// What a reconnection needs of what was parsed; only ``ServerSentEvents`` reconnects.
    var resumption: StreamResumption { get }
}

extension StreamItemParser {
    var resumption: StreamResumption { StreamResumption() }
}

/// What a reconnection sends and waits: the last event ID, the server's `retry`, and whether the connection that
/// ended dispatched anything.
struct StreamResumption: Sendable {
    var lastEventID = ""
    /// Milliseconds.
    var retry: Int?
    var dispatched = false
}

/// The reader's side of one streamed call, shared by the sequence value and its iterator: the current connection,
/// opening another one when the policy says so, and the summary told to whoever asked (``LoggingClient``) when the
/// sequence ends. When the last holder lets go of it (the sequence and its iterator dropped), the transfer stops.
final class StreamSource: Sendable {
    /// One open connection: its body, and the head that opened it.
    struct Connection: Sendable {
        let channel: StreamChannel
        let head: HTTPURLResponse
    }

    /// Opens the stream again, with `Last-Event-ID: lastEventID` when it is given.
    typealias Reopen = @Sendable (_ lastEventID: String?) async throws -> Connection

    /// The longest line or event, in bytes.
    let maximumItemSize: Int
    /// Decodes the items of ``JSONLines``.
    let decoder: JSONDecoder
    private let reconnection: StreamReconnection?
    private let reopen: Reopen?
    /// When the whole sequence must have ended (the request's `totalTimeout`), if ever.
    private let deadline: DispatchTime?
    /// When the call began (uptime nanoseconds), for the summary's duration.
    private let began: UInt64

    private struct State: Sendable {
        var channel: StreamChannel
        /// The status of the current connection's head: a `204` asks not to reconnect.
        var status: Int
        var iterated = false
        /// Items and bytes of the connections before the current one (each channel counts its own).
        var earlierItems = 0
        var earlierBytes: Int64 = 0
        var reconnections = 0
        /// When to open the next connection, and when to give up; `nil` without a reconnection policy.
        var schedule: ReconnectionSchedule?
        var ended = false
        var observers: [@Sendable (StreamSummary, (any Error)?) -> Void] = []
    }

    private let state: Locked<State>

    init(
        connection: StreamChannel, status: Int = 200, maximumItemSize: Int, decoder: JSONDecoder, began: UInt64,
        reconnection: StreamReconnection? = nil, deadline: DispatchTime? = nil, reopen: Reopen? = nil
    ) {
        self.maximumItemSize = maximumItemSize
        self.decoder = decoder
        self.began = began
        let reconnection = reopen == nil ? nil : reconnection
        self.reconnection = reconnection
        self.deadline = deadline
        self.reopen = reconnection == nil ? nil : reopen
        var state = State(channel: connection, status: status)
        // The connection is open: its head arrived.
        state.schedule = reconnection.map {
            ReconnectionSchedule(policy: $0, openedAt: $0.environment.monotonicSeconds())
        }
        self.state = Locked(state)
    }

    deinit {
        // Nobody can read it any more: the transfer stops, and whoever waits for the end hears of it.
        readerLeft()
    }

    // MARK: Reading

    /// Whether this is the first iterator: a stream is read once.
    func claimIterator() -> Bool {
        state.withLock { state in
            defer { state.iterated = true }
            return !state.iterated
        }
    }

    /// The current connection's body: the iterator reads it, and tells it of each item it hands out
    /// (``StreamChannel/noteProgress()``), until ``reconnect(after:resumption:)`` opens another.
    var channel: StreamChannel {
        state.withLock { $0.channel }
    }

    /// Bytes received on the current connection and not read yet (for tests and the benchmark).
    var bufferedBytes: Int {
        state.withLock { $0.channel }.bufferedBytes
    }

    /// The current connection ended (with `error` when not whole): opens another when the policy allows (its
    /// ``ReconnectionSchedule``). Returns `true` when a new connection is open, `false` when the sequence ends here
    /// without an error.
    ///
    /// - Throws: The error that ends the sequence: `error` itself when it is not a transport failure or the policy
    ///   does not reconnect; after ``StreamReconnection/maxAttempts`` failed connections in a row, the last one's
    ///   error, or ``StreamError/gaveUpReconnecting(attempts:)`` when it ended cleanly; what stops a reconnection at
    ///   once (a status outside the acceptable ones, a wrong `Content-Type`), or `CancellationError`.
    func reconnect(after error: (any Error)?, resumption: StreamResumption) async throws -> Bool {
        // No policy, or a 204 (No Content: the server asks not to reconnect).
        guard let reconnection, let reopen, state.withLock({ $0.status }) != 204 else {
            if let error { throw error }
            return false
        }
        if let error, !Self.isReconnectable(error) { throw error }
        let environment = reconnection.environment
        let ended = environment.monotonicSeconds()
        var step = state.withLock { $0.schedule?.connectionEnded(at: ended, resumption: resumption) } ?? .giveUp
        var lastError = error
        while true {
            guard case .reconnect(let wait) = step else {
                throw lastError ?? StreamError.gaveUpReconnecting(attempts: reconnection.maxAttempts)
            }
            if let deadline {
                // Never past the request's total timeout: the sequence ends with it.
                let left = Double(Int64(bitPattern: deadline.uptimeNanoseconds &- DispatchTime.now().uptimeNanoseconds))
                if left / 1e9 <= wait {
                    if left > 0 { try await environment.sleep(left / 1e9) }
                    throw NetworkClientError.deadlinePassed(url: nil)
                }
            }
            try await environment.sleep(wait)
            try Task.checkCancellation()
            do {
                let connection = try await reopen(resumption.lastEventID.isEmpty ? nil : resumption.lastEventID)
                let opened = environment.monotonicSeconds()
                let old = state.withLock { state -> StreamChannel? in
                    guard !state.ended else { return nil }
                    let old = state.channel
                    state.earlierBytes += old.bytesReceived
                    state.earlierItems += old.itemsRead
                    state.channel = connection.channel
                    state.status = connection.head.statusCode
                    state.reconnections += 1
                    state.schedule?.opened(at: opened)
                    return old
                }
                guard old != nil else {
                    connection.channel.cancel()
                    throw CancellationError()
                }
                // 204 No Content: the server asks not to reconnect.
                return connection.head.statusCode != 204
            } catch {
                guard Self.isReconnectable(error) else { throw error }
                lastError = error
                step = state.withLock { $0.schedule?.openingFailed(retry: resumption.retry) } ?? .giveUp
            }
        }
    }

    /// A dropped connection or a timeout reconnects; a status, a wrong content type, a limit or a cancellation ends
    /// the sequence.
    private static func isReconnectable(_ error: any Error) -> Bool {
        guard case NetworkClientError.transportFailed(let failure) = error else { return false }
        return failure.code != .cancelled
    }

    // MARK: The end

    /// The sequence ended (with `error` unless it ended whole or the reader stopped): told once to the observers.
    func finish(_ error: (any Error)?, byReader: Bool) {
        let ended = state.withLock { state -> (StreamSummary, [@Sendable (StreamSummary, (any Error)?) -> Void])? in
            guard !state.ended else { return nil }
            state.ended = true
            defer { state.observers = [] }
            let duration = TimeInterval(DispatchTime.now().uptimeNanoseconds &- began) / 1e9
            let summary = StreamSummary(
                items: state.earlierItems + state.channel.itemsRead,
                bytes: state.earlierBytes + state.channel.bytesReceived,
                reconnections: state.reconnections, duration: duration, endedByReader: byReader)
            return (summary, state.observers)
        }
        guard let (summary, observers) = ended else { return }
        for observer in observers { observer(summary, byReader ? nil : error) }
    }

    /// The reader stopped reading (broke out of its loop, dropped the sequence, was cancelled, or the sequence ended
    /// with an error of its parsing): the transfer stops, and the end is told if it was not yet.
    func readerLeft() {
        let channel = state.withLock { $0.channel }
        channel.cancel()
        finish(nil, byReader: true)
    }

    /// Calls `observer` once with the summary and the error when the sequence ends; at once if it already ended.
    func onEnd(_ observer: @escaping @Sendable (StreamSummary, (any Error)?) -> Void) {
        let late = state.withLock { state -> Bool in
            if state.ended { return true }
            state.observers.append(observer)
            return false
        }
        if late {
            observer(StreamSummary(items: 0, bytes: 0, duration: 0, endedByReader: true), nil)
        }
    }
}

/// The iterator's hold on a ``StreamSource``: when the iterator goes (a `break`), the transfer stops.
final class StreamReading: Sendable {
    let source: StreamSource

    init(_ source: StreamSource) {
        self.source = source
    }

    deinit {
        source.readerLeft()
    }
}
