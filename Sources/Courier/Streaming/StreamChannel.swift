import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The body of one streamed connection on its way from the transport, which writes each piece as it arrives, to the
/// one reader that takes them: a bounded buffer, and the two ways a producer is held back when the reader is slower
/// than the network.
///
/// - A transport that can wait calls ``HTTPExchange/readyForMore()`` before it reads the next piece: it suspends while
///   ``NetworkConfiguration/streamBufferCapacity`` bytes wait unread, so what is buffered never exceeds the capacity plus one
///   piece, and the server feels the backpressure through its own socket. `InMemoryTransport` and the
///   AsyncHTTPClient transport do this.
/// - A transport that cannot wait hands pieces from a callback: Courier's `URLSession` delegate. There ``write(_:)``
///   holds the callback's thread while the buffer is full and the reader reads, ``NetworkConfiguration/maximumStreamHold`` at a
///   time, which holds libcurl back; but only while no other of Courier's `URLSession` calls is in flight
///   (`mayHoldTransport`, asked again at every wake-up, and a call that starts wakes the holders:
///   ``wakeHolders()``): on Linux every session in the process shares that thread, and holding it would hold them
///   all. A reader that takes nothing for a whole hold is not waited for until it reads again. Without holding,
///   pieces are buffered up to ``NetworkConfiguration/maximumStreamBacklog`` more, and then the stream ends with
///   ``StreamError/readerFellBehind(limit:)`` (a transport that runs alone first gives a stalled reader
///   ``NetworkConfiguration/maximumStreamStall`` to read again). Memory stays bounded either way.
///
/// It also carries the opening: ``awaitOpening()`` returns the head once the stream's sink accepted it, or how the
/// exchange ended without opening (an error status with its body, a redirect to follow, a failure).
// Every stored `var` is read and written only while `condition` (an NSCondition) is locked; a producer that must be
// held back waits on it. Continuations are resumed after it is unlocked. The vars are `@exclusivity(unchecked)`: the
// lock already excludes overlapping access, and the run-time check would repeat it on every access.
final class StreamChannel: @unchecked Sendable {
    /// How a connection's exchange ended without opening a stream, or that it opened.
    enum Opening: Sendable {
        case opened(HTTPURLResponse)
        case ended(TransferStateMachine.Outcome)
    }

    /// The bytes a reader finds unread before a producer is held back.
    let capacity: Int
    /// How far past ``capacity`` a producer that cannot wait may push before the stream fails.
    let backlog: Int
    /// The longest a producer that cannot wait is held per piece while the reader reads.
    let hold: TimeInterval
    /// How long a stalled reader a whole backlog behind has to read again before the stream fails.
    let stall: TimeInterval
    /// Whether a producer that cannot wait may be held now; asked once per piece.
    private let mayHoldTransport: @Sendable () -> Bool

    private let condition = NSCondition()
    @exclusivity(unchecked) private var pieces: [Data] = []
    @exclusivity(unchecked) private var first = 0
    @exclusivity(unchecked) private var buffered = 0
    /// Body bytes received over the connection.
    @exclusivity(unchecked) private var received: Int64 = 0
    /// How the body ended: `nil` while it goes on; `.success` when it ended whole.
    @exclusivity(unchecked) private var end: Result<Void, any Error>?
    @exclusivity(unchecked) private var cancelled = false
    /// Bumped each time the reader takes a piece or reports an item (``noteProgress()``).
    @exclusivity(unchecked) private var readerProgress: UInt64 = 0
    /// The items the reader handed out from this connection.
    @exclusivity(unchecked) private var items = 0
    /// Set when a hold passed without any progress of the reader; cleared when it reads again.
    @exclusivity(unchecked) private var readerStalled = false
    /// Whether a producer waits for the reader's next progress (a stalled reader a whole backlog behind).
    @exclusivity(unchecked) private var producerWaitsForProgress = false
    @exclusivity(unchecked) private var reader: CheckedContinuation<Data?, any Error>?
    @exclusivity(unchecked) private var roomWaiter: CheckedContinuation<Bool, Never>?
    @exclusivity(unchecked) private var opening: Opening?
    @exclusivity(unchecked) private var openingWaiter: CheckedContinuation<Opening, Never>?
    /// Stops the transfer (the exchange), once, when the reader goes away.
    @exclusivity(unchecked) private var stopTransfer: (@Sendable () -> Void)?

    /// The channels that hold, or are about to hold, their transport's thread: told to look again when another call
    /// starts (``wakeHolders()``).
    private static let holders = Locked([ObjectIdentifier: StreamChannel]())
    /// Set once the transport must not wait for room any more (its exchange stopped, or its task was cancelled).
    @exclusivity(unchecked) private var producerReleased = false

    /// Whether a stream holds its transport's thread now (see ``write(_:)``). On Linux every `URLSession` shares the
    /// thread a held delegate callback blocks, and creating or resuming a task waits for that thread: while this is
    /// `true`, Courier does that work off the cooperative pool, whose few threads the stream's reader needs.
    static var mayHoldTransports: Bool {
        holders.withLock { !$0.isEmpty }
    }

    /// Another call is starting: every holding stream looks again whether it may still hold (it lets go), now rather
    /// than at the end of its current hold.
    static func wakeHolders() {
        let holding = holders.withLock { $0.isEmpty ? [] : Array($0.values) }
        for channel in holding {
            channel.condition.lock()
            channel.condition.broadcast()
            channel.condition.unlock()
        }
    }

    init(
        capacity: Int = NetworkConfiguration.streamBufferCapacity,
        backlog: Int = NetworkConfiguration.maximumStreamBacklog,
        hold: TimeInterval = NetworkConfiguration.maximumStreamHold,
        stall: TimeInterval = NetworkConfiguration.maximumStreamStall,
        mayHoldTransport: @escaping @Sendable () -> Bool = { TransportCall.runsAlone }
    ) {
        self.mayHoldTransport = mayHoldTransport
        self.capacity = max(1, capacity)
        self.backlog = max(0, backlog)
        self.hold = max(0, hold)
        self.stall = max(0, stall)
    }

    /// A channel that already holds all of `body` and has ended: a canned stream (``StubNetworkClient``).
    static func replaying(_ body: [Data]) -> StreamChannel {
        let channel = StreamChannel()
        channel.pieces = body.filter { !$0.isEmpty }
        channel.buffered = channel.pieces.reduce(0) { $0 + $1.count }
        channel.received = Int64(channel.buffered)
        channel.end = .success(())
        return channel
    }

    // MARK: The transfer's side

    /// Sets what stops the transfer when the reader goes away; runs it at once if the reader already went.
    func attach(stop: @escaping @Sendable () -> Void) {
        condition.lock()
        let runNow = cancelled
        if !runNow { stopTransfer = stop }
        condition.unlock()
        if runNow { stop() }
    }

    /// The stream's sink accepted `head`: the caller of `run` gets the stream.
    func opened(_ head: HTTPURLResponse) {
        settleOpening(.opened(head))
    }

    /// Waits until the head was accepted or the exchange ended without it.
    func awaitOpening() async -> Opening {
        await withCheckedContinuation { (continuation: CheckedContinuation<Opening, Never>) in
            condition.lock()
            if let opening {
                condition.unlock()
                continuation.resume(returning: opening)
            } else {
                openingWaiter = continuation
                condition.unlock()
            }
        }
    }

    /// Appends a piece of the body, holding the calling thread while the buffer is full and the reader is reading (see
    /// the type's notes). Returns the body bytes received so far.
    ///
    /// - Throws: `CancellationError` when the reader went away; ``StreamError/readerFellBehind(limit:)`` when
    ///   the reader is ``backlog`` bytes past the capacity behind and read nothing for ``stall``.
    func write(_ piece: Data) throws -> Int64 {
        condition.lock()
        // Registered before it asks whether it may hold, so that a call starting meanwhile either is seen by that
        // question or wakes this channel to ask again (``wakeHolders()``).
        var registered = false
        func register() {
            guard !registered else { return }
            registered = true
            Self.holders.withLock { $0[ObjectIdentifier(self)] = self }
        }
        defer { if registered { Self.holders.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(self)) } } }
        while !cancelled && hold > 0 {
            if buffered >= capacity && !readerStalled {
                register()
                // Asked again at every wake-up: another call that started lets the thread go at once.
                guard mayHoldTransport() else { break }
                let before = readerProgress
                if !condition.wait(until: Date(timeIntervalSinceNow: hold)) && readerProgress == before {
                    // A whole hold without the reader taking a piece or an item: it is busy elsewhere (perhaps
                    // waiting for another transfer that needs this very thread). Stop holding until it reads again.
                    readerStalled = true
                }
            } else if buffered + piece.count > capacity + backlog && buffered > 0 {
                register()
                // Beside other calls nothing waits: the stream ends below.
                guard mayHoldTransport() else { break }
                // The stalled reader is the whole backlog behind: one last wait for it to read (a reader starved of
                // the processor for a moment), then the stream ends, so that memory stays bounded.
                let before = readerProgress
                let until = Date(timeIntervalSinceNow: stall)
                producerWaitsForProgress = true
                // Another call starting ends the wait at once (``wakeHolders()``): beside it nothing waits.
                while readerProgress == before && !cancelled && condition.wait(until: until) && mayHoldTransport() {}
                producerWaitsForProgress = false
                guard readerProgress != before || cancelled else {
                    condition.unlock()
                    throw StreamError.readerFellBehind(limit: capacity + backlog)
                }
            } else {
                break
            }
        }
        if cancelled {
            condition.unlock()
            throw CancellationError()
        }
        if buffered + piece.count > capacity + backlog && buffered > 0 {
            condition.unlock()
            throw StreamError.readerFellBehind(limit: capacity + backlog)
        }
        received += Int64(piece.count)
        let total = received
        if let reader {
            // The reader waits: the buffer is empty, and the piece goes straight to it.
            self.reader = nil
            condition.unlock()
            reader.resume(returning: piece)
            return total
        }
        if !piece.isEmpty {
            pieces.append(piece)
            buffered += piece.count
        }
        condition.unlock()
        return total
    }

    /// Returns once the reader has room for another piece (or went away, or the body ended): `false` when the transfer
    /// should stop.
    func readyForMore() async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            condition.lock()
            if buffered < capacity || cancelled || end != nil || producerReleased {
                let proceed = !cancelled && !producerReleased
                condition.unlock()
                continuation.resume(returning: proceed)
            } else {
                roomWaiter = continuation
                condition.unlock()
            }
        }
    }

    /// The transport must not wait for room any more: its exchange stopped, or its task was cancelled.
    func releaseProducer() {
        condition.lock()
        producerReleased = true
        let roomWaiter = self.roomWaiter
        self.roomWaiter = nil
        condition.unlock()
        roomWaiter?.resume(returning: false)
    }

    /// The exchange ended: how the transport's work ended for the reader, and (when the head was never accepted) how
    /// the exchange ended for the caller still waiting in ``awaitOpening()``.
    func transportEnded(_ outcome: TransferStateMachine.Outcome, as result: Result<Void, any Error>) {
        condition.lock()
        if end == nil { end = result }
        stopTransfer = nil
        let reader = buffered == 0 ? self.reader : nil
        if reader != nil { self.reader = nil }
        let roomWaiter = self.roomWaiter
        self.roomWaiter = nil
        condition.broadcast()
        condition.unlock()
        roomWaiter?.resume(returning: false)
        if let reader { reader.resume(with: result.map { nil }) }
        settleOpening(.ended(outcome))
    }

    private func settleOpening(_ value: Opening) {
        condition.lock()
        guard opening == nil else {
            condition.unlock()
            return
        }
        opening = value
        let waiter = openingWaiter
        openingWaiter = nil
        condition.unlock()
        waiter?.resume(returning: value)
    }

    // MARK: The reader's side

    /// The next piece of the body, in order; `nil` once it ended whole.
    ///
    /// - Throws: How the body ended when it did not end whole; `CancellationError` when the reading task is cancelled
    ///   (the transfer is stopped then) or the reader went away.
    func next() async throws -> Data? {
        // A reader cancelled while pieces wait would otherwise read on, never suspending to hear of it.
        if Task.isCancelled {
            cancel()
            throw CancellationError()
        }
        if let ready = try takeNow() { return ready.piece }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data?, any Error>) in
                condition.lock()
                do {
                    if let ready = try takeLocked() {
                        condition.unlock()
                        continuation.resume(returning: ready.piece)
                        return
                    }
                } catch {
                    condition.unlock()
                    continuation.resume(throwing: error)
                    return
                }
                reader = continuation
                condition.unlock()
            }
        } onCancel: {
            cancel()
        }
    }

    /// The reader handed out an item from what it already took: it is still reading, so a producer may be held for
    /// it.
    func noteProgress() {
        condition.lock()
        readerProgress &+= 1
        items += 1
        readerStalled = false
        if producerWaitsForProgress { condition.broadcast() }
        condition.unlock()
    }

    /// The items the reader handed out from this connection.
    var itemsRead: Int {
        condition.lock()
        defer { condition.unlock() }
        return items
    }

    /// The reader went away: what is buffered is dropped, a held producer goes on, and the transfer stops.
    func cancel() {
        condition.lock()
        let stop = cancelled ? nil : stopTransfer
        cancelled = true
        stopTransfer = nil
        pieces = []
        first = 0
        buffered = 0
        let reader = self.reader
        self.reader = nil
        let roomWaiter = self.roomWaiter
        self.roomWaiter = nil
        condition.broadcast()
        condition.unlock()
        roomWaiter?.resume(returning: false)
        reader?.resume(throwing: CancellationError())
        stop?()
    }

    /// Body bytes received over the connection so far.
    var bytesReceived: Int64 {
        condition.lock()
        defer { condition.unlock() }
        return received
    }

    /// Bytes buffered and not yet read (for tests and the benchmark).
    var bufferedBytes: Int {
        condition.lock()
        defer { condition.unlock() }
        return buffered
    }

    /// What the reader takes: a piece, or the end of a body that ended whole.
    private enum Taken {
        case piece(Data)
        case ended

        var piece: Data? {
            if case .piece(let data) = self { return data }
            return nil
        }
    }

    /// A piece, or the end, if one is ready now; `nil` when the reader must wait.
    private func takeNow() throws -> Taken? {
        condition.lock()
        defer { condition.unlock() }
        return try takeLocked()
    }

    /// Under the lock: the next piece, or the end, or `nil` to wait. Wakes a producer held back when this makes room.
    private func takeLocked() throws -> Taken? {
        if cancelled { throw CancellationError() }
        if first < pieces.count {
            let piece = pieces[first]
            pieces[first] = Data()
            first += 1
            let wasFull = buffered >= capacity
            buffered -= piece.count
            readerProgress &+= 1
            readerStalled = false
            if first == pieces.count {
                pieces.removeAll(keepingCapacity: true)
                first = 0
            } else if first > 64 && first * 2 > pieces.count {
                pieces.removeFirst(first)
                first = 0
            }
            if wasFull && buffered < capacity || producerWaitsForProgress {
                condition.broadcast()
                if let roomWaiter {
                    self.roomWaiter = nil
                    // Resumed under the lock: resuming only schedules the waiting task.
                    roomWaiter.resume(returning: true)
                }
            }
            return .piece(piece)
        }
        switch end {
        case nil: return nil
        case .success: return .ended
        case .failure(let error): throw error
        }
    }
}

/// The sink of a streamed response: the exchange's state machine hands it the head (which it accepts or not) and each
/// piece of an accepted body, which it writes to its ``StreamChannel``.
struct StreamSink: ResponseBodySink {
    let channel: StreamChannel
    /// The statuses that open the stream; the others are errors, their body kept in memory.
    let acceptable: Set<Int>?
    /// Why an acceptable head cannot be read as the stream's kind (a wrong `Content-Type`); `nil` when it can.
    let refusal: @Sendable (HTTPURLResponse) -> NetworkClientError?

    var streamChannel: StreamChannel? { channel }

    mutating func open(for head: HTTPURLResponse) -> TransferStateMachine.SinkOpening {
        guard ResponseKinds.accepts(head.statusCode, acceptable) else { return .errorBody }
        if let refused = refusal(head) { return .failed(refused) }
        channel.opened(head)
        return .writing(written: 0, total: head.expectedContentLength >= 0 ? head.expectedContentLength : nil)
    }

    mutating func write(_ piece: Data) throws -> Int64 {
        try channel.write(piece)
    }

    mutating func finish(for head: HTTPURLResponse) -> Result<(byteCount: Int64, value: any Sendable), any Error> {
        .success((channel.bytesReceived, channel))
    }

    func settle(keep: Bool) {}
}
