import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The rules of one exchange, as a value: each event (the head arrived, a piece arrived, a write finished, Courier
/// stopped it, the transport returned) is a transition that returns what to do, and ``HTTPExchange`` does it outside
/// its lock. No I/O, no clock and no callback here: every transition is tested directly, without a socket.
///
/// Where the body goes is decided at the head: into memory (held to the size limit), nowhere (the body of a redirect
/// Courier follows: see ``Redirects``), or to a sink (a download's file), whose unacceptable statuses keep their body in
/// memory as the error's. File work is an action: while it runs outside the lock the machine remembers that the sink is
/// busy, and a stop that comes meanwhile leaves the sink to be settled when that work returns.
struct TransferStateMachine: Sendable {
    /// Where an acceptable body goes.
    enum BodyMode: Sendable, Equatable {
        /// Into memory, up to the size limit.
        case memory
        /// To the exchange's sink (a download).
        case sink
    }

    /// Why Courier stopped an exchange before the transport ended it.
    enum StopReason: Sendable {
        /// The caller was cancelled.
        case cancelled
        /// The deadline passed.
        case timedOut
        /// The body grew past the size limit (or declared a length above it).
        case tooLarge
        /// The exchange cannot go on: a file could not be written or read, or the response cannot be what was asked.
        case failed(any Error)
        /// The kept bytes of a download do not fit the response (a stale range): send this request instead. Not a
        /// redirect: it does not count against the redirect budget.
        case restart(URLRequest)
        /// Courier read all it needs (a redirect's body, or an error body up to the limit): what arrived is the
        /// response.
        case enough
    }

    /// Where the exchange is.
    enum State: Sendable {
        /// Sent, or about to be: no head yet.
        case waitingForHead
        /// An acceptable body (or any body of an in-memory request), into memory.
        case memoryBody(HTTPURLResponse)
        /// The body of a redirect Courier follows: read and dropped.
        case redirectBody(HTTPURLResponse)
        /// The sink is deciding what to do with this head, outside the lock.
        case openingSink(HTTPURLResponse)
        /// The body goes to the sink; `writing` while a piece is written outside the lock.
        case sinkBody(HTTPURLResponse, writing: Bool)
        /// A status the sink does not take: the body is the error's, in memory up to the limit.
        case errorBody(HTTPURLResponse)
        /// Courier stopped the exchange; the transport is winding down. `sinkBusy` while the sink's work (an open or
        /// a write) started before the stop has not returned: that work then settles the sink.
        case stopping(StopReason, head: HTTPURLResponse?, sinkBusy: Bool)
        /// The transport ended a sink's body: the sink moves its file into place, outside the lock.
        case finishingSink(HTTPURLResponse)
        /// The end: nothing changes any more.
        case finished(Outcome)
    }

    /// How an exchange ended: its terminal states.
    enum Outcome: Sendable {
        /// A final response, with its body in memory (empty for a sink's file: the sink holds the result).
        case delivered(HTTPURLResponse, Data)
        /// A redirect for ``Redirects`` to follow.
        case redirected(HTTPURLResponse)
        /// Send this request instead (see ``StopReason/restart(_:)``).
        case restarting(URLRequest)
        /// The caller was cancelled.
        case cancelled
        /// The deadline passed.
        case timedOut
        /// The body was larger than the limit.
        case tooLarge
        /// The exchange failed with this error (the transport's, a file's, or a response that breaks a rule).
        case failed(any Error)
    }

    /// What the transport is told about a head or a piece, and the work for ``HTTPExchange`` to do.
    enum Action: Sendable {
        /// Nothing to do; the transport goes on.
        case proceed
        /// Report this progress; the transport goes on.
        case report(TransferProgress)
        /// Let the sink open its file for the head (outside the lock), then call ``sinkOpened(_:)``.
        case openSink(HTTPURLResponse)
        /// Write this piece to the sink (outside the lock), then call ``wrote(_:)``.
        case write
        /// Stop: tell the transport, and settle the sink (keep its bytes for a later run or delete them) when
        /// `settleSink` is set.
        case stop(settleSink: Bool?)
        /// Settle the sink now (its work returned after a stop); the transport is already told.
        case settleSink(keep: Bool)
        /// Nothing to do, and the transport needs to send nothing more: the exchange already stopped or ended.
        case ignore
    }

    /// What to do once the transport returned.
    enum Ending: Sendable {
        /// The exchange ended with this outcome.
        case outcome(Outcome)
        /// Settle the sink (the body did not complete), then the exchange ends with this outcome.
        case settleSink(keep: Bool, then: Outcome)
        /// Let the sink move its complete file into place (outside the lock), then call ``sinkFinished(_:)``.
        case finishSink
    }

    /// What the sink decided for a head.
    enum SinkOpening: Sendable {
        /// The body goes to the file, which already holds `written` bytes (a resumed download) of `total`.
        case writing(written: Int64, total: Int64?)
        /// Not a status the sink takes: the body is the error's, in memory.
        case errorBody
        /// The kept bytes do not fit: send this request instead.
        case restart(URLRequest)
        /// The sink cannot take the body.
        case failed(any Error)
    }

    /// The most bytes of a redirect's body read before Courier follows it without the rest: 64 KiB.
    static let redirectBodyLimit = 64 * 1024

    /// The most memory reserved for a body held in memory before its bytes arrive: 1 MiB. A declared
    /// `Content-Length` is only a claim: reserving it whole let a server that declared 60 GB (under a 64 GB limit)
    /// trap the process. Beyond this the body grows with the bytes that actually arrive.
    static let maximumUpfrontReservation = 1 << 20

    private(set) var state = State.waitingForHead
    /// The body held in memory: an in-memory response's, or an error's.
    private(set) var body = Data()
    private(set) var progress = TransferProgress(
        bytesSent: 0, totalBytesExpectedToSend: nil, bytesReceived: 0, totalBytesExpectedToReceive: nil)
    let mode: BodyMode
    /// The most body bytes held in memory.
    let limit: Int
    /// Whether progress is reported at all (the request has a handler).
    let reportsProgress: Bool
    /// Bytes of a redirect's body dropped so far.
    private var dropped = 0
    /// The declared length of an in-memory body (`-1` when unknown).
    private var declaredLength: Int64 = -1
    /// Whether the sink was settled (or handed its work that settles it): it is settled once.
    private var sinkSettled = false
    /// Set when the exchange ended while the sink's work was running: that work, when it returns, settles the sink
    /// (keeping its bytes or not).
    private var settleWhenIdle: Bool?

    init(mode: BodyMode, limit: Int, reportsProgress: Bool) {
        self.mode = mode
        self.limit = limit
        self.reportsProgress = reportsProgress
    }

    /// Whether Courier stopped the exchange or it ended.
    var isOver: Bool {
        switch state {
        case .stopping, .finished, .finishingSink: true
        default: false
        }
    }

    // MARK: Transitions

    /// The response head arrived. A second head on one exchange (corelibs resending a request with a credential after
    /// a 401) replaces the first.
    mutating func receivedHead(_ head: HTTPURLResponse) -> Action {
        switch state {
        case .waitingForHead, .memoryBody, .redirectBody, .errorBody, .sinkBody(_, writing: false):
            body = Data()
            dropped = 0
            progress.bytesReceived = 0
            if Redirects.isFollowable(head) {
                state = .redirectBody(head)
                return .proceed
            }
            if mode == .sink {
                state = .openingSink(head)
                return .openSink(head)
            }
            let declared = head.expectedContentLength
            if declared > Int64(limit) { return stop(.tooLarge) }
            declaredLength = declared
            state = .memoryBody(head)
            progress.totalBytesExpectedToReceive = declared >= 0 ? declared : nil
            return .proceed
        case .openingSink, .sinkBody(_, writing: true):
            return stop(.failed(Self.outOfOrder("a response head arrived while the sink was busy")))
        case .stopping, .finishingSink, .finished:
            return .ignore
        }
    }

    /// The sink decided what to do with the head (``Action/openSink(_:)``).
    mutating func sinkOpened(_ opening: SinkOpening) -> Action {
        switch state {
        case .openingSink(let head):
            switch opening {
            case .writing(let written, let total):
                state = .sinkBody(head, writing: false)
                progress.bytesReceived = written
                progress.totalBytesExpectedToReceive = total
                return .proceed  // The first report comes with the first piece, counting the bytes kept.
            case .errorBody:
                state = .errorBody(head)
                return .proceed
            case .restart(let request):
                state = .sinkBody(head, writing: false)  // The sink's work returned: it is settled with the stop.
                return stop(.restart(request))
            case .failed(let error):
                state = .sinkBody(head, writing: false)
                return stop(.failed(error))
            }
        default:
            return sinkWorkReturned()
        }
    }

    /// A piece of the body arrived.
    mutating func receivedBody(_ piece: Data) -> Action {
        switch state {
        case .memoryBody:
            guard body.count + piece.count <= limit else { return stop(.tooLarge) }
            if body.isEmpty && declaredLength <= Int64(piece.count) {
                body = piece  // The whole body in one piece (a small response): kept, not copied.
            } else {
                if body.isEmpty && declaredLength > 0 {
                    body.reserveCapacity(Int(min(declaredLength, Int64(Self.maximumUpfrontReservation))))
                }
                body.append(piece)
            }
            progress.bytesReceived += Int64(piece.count)
            return reportsProgress ? .report(progress) : .proceed
        case .redirectBody:
            dropped += piece.count
            return dropped > Self.redirectBodyLimit ? stop(.enough) : .proceed
        case .errorBody:
            body.append(piece.prefix(limit - body.count))
            return body.count >= limit ? stop(.enough) : .proceed
        case .sinkBody(let head, writing: false):
            state = .sinkBody(head, writing: true)
            return .write
        case .openingSink, .sinkBody(_, writing: true):
            return stop(.failed(Self.outOfOrder("a piece of the body arrived while the sink was busy")))
        case .waitingForHead:
            return stop(.failed(Self.outOfOrder("a piece of the body arrived before the response head")))
        case .stopping, .finishingSink, .finished:
            return .ignore
        }
    }

    /// The sink wrote a piece (``Action/write``): `bytesWritten` in its file so far, or `error`.
    mutating func wrote(_ error: (any Error)?, bytesWritten: Int64) -> Action {
        switch state {
        case .sinkBody(let head, writing: true):
            state = .sinkBody(head, writing: false)
            if let error { return stop(.failed(error)) }
            progress.bytesReceived = bytesWritten
            return reportsProgress ? .report(progress) : .proceed
        default:
            return sinkWorkReturned()
        }
    }

    /// Body bytes went out: `total` so far, of `expected` when known.
    mutating func sent(_ total: Int64, of expected: Int64?) -> Action {
        guard reportsProgress, !isOver else { return .proceed }
        let before = progress
        progress.bytesSent = max(progress.bytesSent, total)
        if let expected, expected >= 0 { progress.totalBytesExpectedToSend = expected }
        return progress == before ? .proceed : .report(progress)
    }

    /// Courier stops the exchange for `reason`: ``Action/stop(settleSink:)`` the first time, ``Action/ignore`` once
    /// it is over.
    mutating func stop(_ reason: StopReason) -> Action {
        let head: HTTPURLResponse?
        var settle: Bool?
        var busy = false
        switch state {
        case .stopping, .finishingSink, .finished: return .ignore
        case .waitingForHead: head = nil
        case .memoryBody(let response), .redirectBody(let response), .errorBody(let response): head = response
        case .openingSink(let response): (head, busy) = (response, true)
        case .sinkBody(let response, let writing):
            head = response
            busy = writing
            if !writing {
                settle = Self.keepsBytes(reason)
                sinkSettled = true
            }
        }
        if case .enough = reason {} else { body = Data() }
        state = .stopping(reason, head: head, sinkBusy: busy)
        return .stop(settleSink: settle)
    }

    /// The transport returned, with `error` if it threw.
    mutating func transportEnded(_ error: (any Error)?) -> Ending {
        let outcome: Outcome
        var keep: Bool
        switch state {
        case .finished(let ended):
            return .outcome(ended)
        case .stopping(let reason, let head, let busy):
            outcome = finish(stoppedBy: reason, head: head)
            keep = Self.keepsBytes(reason)
            if busy {
                // The sink's work settles it when it returns.
                sinkSettled = true
                settleWhenIdle = keep
            }
        case .waitingForHead:
            let error = error ?? Self.outOfOrder("the transport ended without a response head")
            outcome = finish(.failed(error))
            keep = Self.keepsBytes(afterTransportError: error)
        case .memoryBody(let head), .errorBody(let head):
            if let error {
                outcome = finish(.failed(error))
                keep = Self.keepsBytes(afterTransportError: error)
            } else {
                let delivered = body
                body = Data()
                outcome = finish(.delivered(head, delivered))
                keep = true  // An error status (a 503, say): a later run may still resume.
            }
        case .redirectBody(let head):
            outcome = finish(error.map { .failed($0) } ?? .redirected(head))
            keep = true
        case .sinkBody(let head, writing: false):
            if let error {
                outcome = finish(.failed(error))
                keep = Self.keepsBytes(afterTransportError: error)
            } else {
                state = .finishingSink(head)
                sinkSettled = true  // The sink finishes: it keeps or moves its bytes itself.
                return .finishSink
            }
        case .openingSink(let head), .sinkBody(let head, writing: true):
            // The transport returned while the sink was still busy with its work: the work settles the sink.
            let error = error ?? Self.outOfOrder("the transport returned while a piece was being written")
            state = .stopping(.failed(error), head: head, sinkBusy: true)
            return .outcome(.failed(error))
        case .finishingSink:
            return .outcome(.failed(Self.outOfOrder("the transport returned twice")))
        }
        guard mode == .sink, !sinkSettled else { return .outcome(outcome) }
        sinkSettled = true
        return .settleSink(keep: keep, then: outcome)
    }

    /// The sink moved its file into place (``Ending/finishSink``), or could not.
    mutating func sinkFinished(_ result: Result<Int64, any Error>) -> Outcome {
        guard case .finishingSink(let head) = state else { return .failed(Self.outOfOrder("no sink was finishing")) }
        switch result {
        case .success(let byteCount):
            progress.bytesReceived = byteCount
            progress.totalBytesExpectedToReceive = byteCount
            return finish(.delivered(head, Data()))
        case .failure(let error):
            return finish(.failed(error))
        }
    }

    /// The last progress report of a delivered response: its total, whatever the server had declared.
    mutating func finalProgress() -> TransferProgress? {
        guard reportsProgress, case .finished(.delivered(_, let data)) = state else { return nil }
        if mode == .memory || !data.isEmpty {
            progress.bytesReceived = Int64(data.count)
            progress.totalBytesExpectedToReceive = Int64(data.count)
        } else if progress.totalBytesExpectedToReceive == nil {
            progress.totalBytesExpectedToReceive = progress.bytesReceived
        }
        return progress
    }

    // MARK: Helpers

    /// The sink's work (an open, a write) returned in a state that does not use it: after a stop, or after the end,
    /// the work settles the sink, once.
    private mutating func sinkWorkReturned() -> Action {
        if case .stopping(let reason, let head, sinkBusy: true) = state {
            state = .stopping(reason, head: head, sinkBusy: false)
            sinkSettled = true
            return .settleSink(keep: Self.keepsBytes(reason))
        }
        guard let keep = settleWhenIdle else { return .ignore }
        settleWhenIdle = nil
        return .settleSink(keep: keep)
    }

    private mutating func finish(_ outcome: Outcome) -> Outcome {
        state = .finished(outcome)
        return outcome
    }

    private mutating func finish(stoppedBy reason: StopReason, head: HTTPURLResponse?) -> Outcome {
        switch reason {
        case .cancelled: return finish(.cancelled)
        case .timedOut: return finish(.timedOut)
        case .tooLarge: return finish(.tooLarge)
        case .failed(let error): return finish(.failed(error))
        case .restart(let request): return finish(.restarting(request))
        case .enough:
            guard let head else { return finish(.failed(Self.outOfOrder("stopped without a head"))) }
            if Redirects.isFollowable(head) { return finish(.redirected(head)) }
            let delivered = body
            body = Data()
            return finish(.delivered(head, delivered))
        }
    }

    /// Whether a sink keeps its bytes for a later run when stopped for `reason`: after the deadline, yes; after a
    /// cancellation or a failure, no.
    static func keepsBytes(_ reason: StopReason) -> Bool {
        if case .timedOut = reason { return true }
        return false
    }

    /// Whether a sink keeps its bytes after the transport failed with `error`: any failure but a cancellation.
    static func keepsBytes(afterTransportError error: any Error) -> Bool {
        !(error is CancellationError) && (error as? URLError)?.code != .cancelled
    }

    /// A transport that broke the ``HTTPTransport`` contract.
    static func outOfOrder(_ what: String) -> URLError {
        URLError(.badServerResponse, userInfo: [NSLocalizedDescriptionKey: "the transport misbehaved: \(what)"])
    }
}
