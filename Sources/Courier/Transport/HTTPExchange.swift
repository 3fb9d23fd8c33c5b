import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where a response body goes when it is not held in memory: a download's file. The sink is a value kept under the
/// exchange's lock and taken out while its file work runs, so no file I/O happens under the lock and no two threads
/// touch it at once (``TransferStateMachine`` says when it is busy).
protocol ResponseBodySink: Sendable {
    /// Decides what to do with `head`: write its body to the file (opening it), keep it as the error's body, or send
    /// the request again.
    mutating func open(for head: HTTPURLResponse) -> TransferStateMachine.SinkOpening
    /// Writes `piece` and returns the bytes in the file so far.
    mutating func write(_ piece: Data) throws -> Int64
    /// The body is complete: moves the file into place and returns its size and the response value (a
    /// ``DownloadedFile``).
    mutating func finish(for head: HTTPURLResponse) -> Result<(byteCount: Int64, value: any Sendable), any Error>
    /// The body did not complete: keeps its bytes for a later run of the same request, or deletes them.
    func settle(keep: Bool)
    /// The reader of a streamed body, which a transport that can pause waits for (``HTTPExchange/readyForMore()``);
    /// `nil` (a file) by default.
    var streamChannel: StreamChannel? { get }
}

extension ResponseBodySink {
    var streamChannel: StreamChannel? { nil }
}

/// One request on its way through an ``HTTPTransport``: what to send, and where the transport reports the response.
///
/// Courier creates an exchange for every request it sends (and for every redirect it follows) and keeps its rules
/// here: the response head and each piece of the body pass through its state machine, which holds the body to
/// the size limit, writes a download's file, follows no redirect on its own and ends the exchange when the caller is
/// cancelled or the deadline passes. A transport reads ``request`` and ``body``, and reports with
/// ``receive(_:)-(HTTPURLResponse)``, ``receive(_:)-(Data)`` and ``sent(_:of:)``, from any thread, one call at a time.
public final class HTTPExchange: Sendable {
    /// The request to send: method, URL, every header field (the body's `Content-Type` included), and for
    /// ``HTTPRequestBody/data(_:)`` the body as `httpBody`. Courier has applied the interceptors, the credential rules
    /// and the redirect rules; send it as it is. Framing is the transport's: it sends `Content-Length` for ``body``
    /// (the bytes' count, or a file's `byteCount`), as `URLSession` does.
    public let request: URLRequest
    /// The body to send.
    public let body: HTTPRequestBody

    private struct State: Sendable {
        var machine: TransferStateMachine
        /// `nil` while it is taken out for file work.
        var sink: (any ResponseBodySink)?
        /// Whether the sink is out of the state for file work (an open, a write, a settlement, the final move).
        var sinkBusy = false
        /// The caller waiting in ``end(_:)`` for the sink's work to return, so that it hears of the end only once the
        /// file is settled (a retry then finds the kept bytes).
        var idleWaiter: CheckedContinuation<Void, Never>?
        /// Courier's own transport call, told of a stop without a closure (``onStop(_:)``).
        var stopObserver: (any ExchangeStopObserver)?
        var stopHandlers: [@Sendable () -> Void] = []
        var stopped = false
        /// The value the sink produced (a ``DownloadedFile``).
        var sinkValue: (any Sendable)?
        /// When the last response head arrived, in uptime nanoseconds (``RequestMetrics``); `0` before.
        var headArrived: UInt64 = 0
    }

    private let state: Locked<State>
    private let reporter: ProgressReporter?
    /// The reader of a streamed body, for ``readyForMore()``.
    private let stream: StreamChannel?

    init(
        request: URLRequest, body: HTTPRequestBody, limit: Int, sink: (any ResponseBodySink)?,
        reporter: ProgressReporter?
    ) {
        self.request = request
        self.body = body
        self.reporter = reporter
        self.stream = sink?.streamChannel
        let machine = TransferStateMachine(
            mode: sink == nil ? .memory : .sink, limit: limit, reportsProgress: reporter != nil)
        self.state = Locked(State(machine: machine, sink: sink))
    }

    // MARK: What a transport calls

    /// The response head arrived. Returns `false` when Courier needs nothing more: stop reading and return.
    public func receive(_ head: HTTPURLResponse) -> Bool {
        let arrived = DispatchTime.now().uptimeNanoseconds
        let (action, sink) = state.withLock { state in
            state.headArrived = arrived
            let action = state.machine.receivedHead(head)
            return (action, Self.takeSink(for: action, &state))
        }
        return perform(action, sink)
    }

    /// A piece of the body arrived, in order, after decompression. Returns `false` when Courier needs nothing more
    /// (the body broke the size limit, a file could not be written, the exchange was stopped): stop reading and
    /// return.
    public func receive(_ piece: Data) -> Bool {
        let (action, sink) = state.withLock { state in
            let action = state.machine.receivedBody(piece)
            return (action, Self.takeSink(for: action, &state))
        }
        guard case .write = action, var sink else { return perform(action, sink) }
        // Written outside the lock; the machine knows the sink is busy meanwhile.
        var failure: (any Error)?
        var written: Int64 = 0
        do { written = try sink.write(piece) } catch { failure = error }
        let (next, again, waiter) = state.withLock { state in
            state.sink = sink
            let next = state.machine.wrote(failure, bytesWritten: written)
            let again = Self.takeSink(for: next, &state)
            return (next, again, again == nil ? Self.idle(&state) : nil)
        }
        waiter?.resume()
        return perform(next, again)
    }

    /// Returns once Courier can take another piece of the body, or `false` when it needs no more (stop reading).
    ///
    /// Only a streamed response (``ServerSentEvents``, ``JSONLines``, ``ByteStream``) ever waits here: while its reader
    /// has ``NetworkConfiguration/streamBufferCapacity`` bytes unread. A transport that can pause reading calls it before it reads
    /// each next piece, so that a slow reader holds the server back through the connection itself; a transport that
    /// cannot (one driven by callbacks) need not call it, and ``receive(_:)-(Data)`` then holds the calling thread,
    /// for a bounded time (see ``NetworkConfiguration/maximumStreamHold``).
    public func readyForMore() async -> Bool {
        guard let stream else { return !isStopped }
        // A stop (the deadline, the caller's cancellation) or the transport's own cancellation ends the wait at once.
        let ready = await withTaskCancellationHandler {
            await stream.readyForMore()
        } onCancel: {
            stream.releaseProducer()
        }
        return ready && !isStopped
    }

    /// Request body bytes went out: `totalBytes` so far, of `expected` when the transport knows it.
    public func sent(_ totalBytes: Int64, of expected: Int64?) {
        let action = state.withLock { $0.machine.sent(totalBytes, of: expected) }
        if case .report(let progress) = action { reporter?.report(progress) }
    }

    /// Runs `handler` once when Courier stops the exchange (the caller was cancelled, the deadline passed, the body
    /// broke a rule), at once if it already stopped. The transport cancels its work there and returns promptly.
    public func whenStopped(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.stopped { return true }
            state.stopHandlers.append(handler)
            return false
        }
        if runNow { handler() }
    }

    /// ``whenStopped(_:)`` for Courier's own transports: `observer` is told once, at once if the exchange already
    /// stopped.
    func onStop(_ observer: any ExchangeStopObserver) {
        let runNow = state.withLock { state -> Bool in
            if state.stopped { return true }
            state.stopObserver = observer
            return false
        }
        if runNow { observer.exchangeStopped() }
    }

    /// Whether Courier stopped the exchange, or it ended.
    public var isStopped: Bool {
        state.withLock { $0.stopped || $0.machine.isOver }
    }

    /// A stream of ``body``'s bytes: for ``HTTPRequestBody/file(_:byteCount:)``, the file opened without blocking
    /// (only a regular file), exactly `byteCount` bytes, and a file that changes size meanwhile stops the exchange
    /// with ``NetworkClientError/fileAccessFailed(url:reason:)`` and ends the stream with an error, so the server
    /// never receives a short body as complete; a stop ends it the same way. For the other bodies, their bytes.
    ///
    /// - Throws: ``NetworkClientError/fileAccessFailed(url:reason:)`` when the file is no longer a readable regular
    ///   file of `byteCount` bytes.
    public func makeBodyStream() throws -> InputStream {
        switch body {
        case .none: return InputStream(data: Data())
        case .data(let data): return InputStream(data: data)
        case .file(let url, let byteCount):
            let stream = try FileBodyStream(file: url)
            guard stream.length == byteCount else {
                throw NetworkClientError.fileAccessFailed(
                    url: url, reason: "the file changed size before it was sent (\(byteCount) bytes were measured)")
            }
            let control = stream.control
            control.onFailure { [weak self] error in self?.stop(.failed(error)) }
            whenStopped { control.stop() }
            return stream
        }
    }

    // MARK: What Courier calls

    /// Stops the exchange for `reason`, unless it already stopped or ended.
    func stop(_ reason: TransferStateMachine.StopReason) {
        let (action, sink) = state.withLock { state in
            let action = state.machine.stop(reason)
            return (action, Self.takeSink(for: action, &state))
        }
        _ = perform(action, sink)
    }

    /// The transport returned (with `error` if it threw): the outcome, once the sink's file work is done (a download
    /// stopped while a piece was written is settled before the caller hears of it).
    func end(_ error: (any Error)?) async -> TransferStateMachine.Outcome {
        let (ending, taken, busy) = state.withLock { state in
            let ending = state.machine.transportEnded(error)
            // The handlers hold the transport's side of the exchange (which holds the exchange): released now, and a
            // late registration runs at once.
            state.stopHandlers = []
            state.stopObserver = nil
            state.stopped = true
            switch ending {
            case .outcome:
                return (ending, nil as (any ResponseBodySink)?, state.sinkBusy)
            case .settleSink, .finishSink:
                let sink = state.sink
                state.sink = nil
                return (ending, sink, false)
            }
        }
        let outcome: TransferStateMachine.Outcome
        switch ending {
        case .outcome(let ended):
            outcome = ended
        case .settleSink(let keep, let ended):
            taken?.settle(keep: keep)
            outcome = ended
        case .finishSink:
            guard var sink = taken, case .finishingSink(let head) = state.withLock({ $0.machine.state }) else {
                return .failed(TransferStateMachine.outOfOrder("the sink was missing"))
            }
            let finished = sink.finish(for: head)  // The rename: outside the lock.
            outcome = state.withLock { state in
                if case .success(let result) = finished { state.sinkValue = result.value }
                return state.machine.sinkFinished(finished.map(\.byteCount))
            }
        }
        if busy { await idle() }
        return outcome
    }

    /// Whether a caller waits in ``end(_:)`` for the sink's work to return (for tests).
    var hasWaitingCaller: Bool { state.withLock { $0.idleWaiter != nil } }

    /// Returns once no file work on the sink is in flight.
    private func idle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                guard state.sinkBusy else { return true }
                state.idleWaiter = continuation
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Whether the body goes to a file (a download): a transport that can land a body in a file first may do so.
    var prefersFileBody: Bool { stream == nil && state.withLock { $0.machine.mode == .sink } }

    /// Whether the body is a stream's, read as it arrives (``ServerSentEvents``, ``JSONLines``, ``ByteStream``).
    var isStream: Bool { stream != nil }

    /// Whether a response head arrived and the exchange still goes on.
    var hasHead: Bool {
        state.withLock { state in
            switch state.machine.state {
            case .memoryBody, .redirectBody, .errorBody, .sinkBody: true
            default: false
            }
        }
    }

    /// When the response head arrived (uptime nanoseconds, `0` if none did) and the body bytes received, for
    /// ``RequestMetrics``.
    var readings: (headArrived: UInt64, bytesReceived: Int64) {
        state.withLock { ($0.headArrived, $0.machine.progress.bytesReceived) }
    }

    /// What the sink produced for a delivered response (a ``DownloadedFile``), if it did.
    var sinkValue: (any Sendable)? {
        state.withLock { $0.sinkValue }
    }

    /// The last progress report of a delivered response, if progress is reported.
    func finalProgress() -> TransferProgress? {
        state.withLock { $0.machine.finalProgress() }
    }

    // MARK: Doing what the machine says

    /// Takes the sink out of the state when `action` is work on it.
    private static func takeSink(for action: TransferStateMachine.Action, _ state: inout State) -> (
        any ResponseBodySink
    )? {
        switch action {
        case .openSink, .write, .settleSink, .stop(settleSink: .some):
            guard let sink = state.sink else { return nil }
            state.sink = nil
            state.sinkBusy = true
            return sink
        case .proceed, .report, .stop(settleSink: nil), .ignore:
            return nil
        }
    }

    /// Does `action` (outside the lock) and returns whether the transport goes on.
    private func perform(_ action: TransferStateMachine.Action, _ sink: (any ResponseBodySink)?) -> Bool {
        switch action {
        case .proceed:
            return true
        case .report(let progress):
            reporter?.report(progress)
            return true
        case .ignore:
            return false
        case .openSink(let head):
            guard var sink else { return false }
            let opening = sink.open(for: head)  // File work: outside the lock.
            let (next, again, waiter) = state.withLock { state in
                state.sink = sink
                let next = state.machine.sinkOpened(opening)
                let again = Self.takeSink(for: next, &state)
                return (next, again, again == nil ? Self.idle(&state) : nil)
            }
            waiter?.resume()
            return perform(next, again)
        case .write:
            return false  // Handled by `receive(_:)`; never reached.
        case .stop(let settle):
            if let settle, let sink {
                sink.settle(keep: settle)
                settled()
            }
            runStopHandlers()
            return false
        case .settleSink(let keep):
            if let sink {
                sink.settle(keep: keep)
                settled()
            }
            return false
        }
    }

    /// The sink's work is done for good (settled or moved into place): a caller waiting in ``end(_:)`` goes on.
    private func settled() {
        state.withLock { Self.idle(&$0) }?.resume()
    }

    /// Marks the sink idle and returns the caller waiting for that, if any.
    private static func idle(_ state: inout State) -> CheckedContinuation<Void, Never>? {
        state.sinkBusy = false
        defer { state.idleWaiter = nil }
        return state.idleWaiter
    }

    private func runStopHandlers() {
        let (observer, handlers) = state.withLock { state -> ((any ExchangeStopObserver)?, [@Sendable () -> Void]) in
            guard !state.stopped else { return (nil, []) }
            state.stopped = true
            defer { (state.stopObserver, state.stopHandlers) = (nil, []) }
            return (state.stopObserver, state.stopHandlers)
        }
        // A transport waiting in readyForMore() goes on, to find the exchange stopped.
        stream?.releaseProducer()
        observer?.exchangeStopped()
        for handler in handlers { handler() }
    }
}

/// Told once when Courier stops an exchange: Courier's own transports, without a closure per exchange.
protocol ExchangeStopObserver: AnyObject, Sendable {
    func exchangeStopped()
}

extension HTTPExchange: Expirable {
    func expire() {
        stop(.timedOut)
    }
}
