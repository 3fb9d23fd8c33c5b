import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transfer as a value: every transition of ``TransferStateMachine``, without a socket, a file or a clock.
/// Actions and outcomes are compared as short descriptions written out by hand.
@Suite("Transfer state machine")
struct TransferStateMachineTests {
    typealias Machine = TransferStateMachine

    static let url = URL(string: "https://api.example/file")!

    static func head(_ status: Int, _ headers: [String: String] = [:]) -> HTTPURLResponse {
        HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)!
    }

    static func bytes(_ count: Int) -> Data { Data(repeating: 7, count: count) }

    static func memory(limit: Int = 100, progress: Bool = false) -> Machine {
        Machine(mode: .memory, limit: limit, reportsProgress: progress)
    }

    static func sink(limit: Int = 100, progress: Bool = false) -> Machine {
        Machine(mode: .sink, limit: limit, reportsProgress: progress)
    }

    /// A sink machine whose file is open and idle, after a 200 head.
    static func writingSink(progress: Bool = false) -> Machine {
        var machine = sink(progress: progress)
        _ = machine.receivedHead(head(200))
        _ = machine.sinkOpened(.writing(written: 0, total: 10))
        return machine
    }

    // MARK: In memory

    @Test("An in-memory body is collected piece by piece and delivered with its head when the transport returns")
    func memoryBody() {
        var machine = Self.memory()
        #expect(describe(machine.receivedHead(Self.head(200, ["Content-Length": "7"]))) == "proceed")
        #expect(describe(machine.receivedBody(Self.bytes(3))) == "proceed")
        #expect(describe(machine.receivedBody(Self.bytes(4))) == "proceed")
        #expect(describe(machine.transportEnded(nil)) == "delivered(200, 7 bytes)")
        #expect(describe(machine.transportEnded(nil)) == "delivered(200, 7 bytes)", "the end is final")
        #expect(describe(machine.receivedBody(Self.bytes(1))) == "ignore", "nothing arrives after the end")
    }

    @Test("Progress is reported for each piece, and the last report is the body's size")
    func memoryProgress() {
        var machine = Self.memory(progress: true)
        _ = machine.receivedHead(Self.head(200, ["Content-Length": "50"]))
        #expect(describe(machine.receivedBody(Self.bytes(5))) == "report(received 5 of 50)")
        #expect(describe(machine.receivedBody(Self.bytes(5))) == "report(received 10 of 50)")
        _ = machine.transportEnded(nil)
        let last = machine.finalProgress()
        #expect(last?.bytesReceived == 10)
        #expect(last?.totalBytesExpectedToReceive == 10, "the server declared 50 and sent 10: the total is 10")
    }

    @Test("A declared length above the limit stops the exchange at the head: tooLarge")
    func declaredTooLarge() {
        var machine = Self.memory(limit: 100)
        #expect(describe(machine.receivedHead(Self.head(200, ["Content-Length": "101"]))) == "stop")
        #expect(describe(machine.receivedBody(Self.bytes(1))) == "ignore")
        #expect(describe(machine.transportEnded(URLError(.cancelled))) == "tooLarge")
    }

    @Test("A body that grows past the limit stops at the piece that passes it, and the bytes are dropped")
    func growsTooLarge() {
        var machine = Self.memory(limit: 10)
        _ = machine.receivedHead(Self.head(200))
        #expect(describe(machine.receivedBody(Self.bytes(10))) == "proceed", "exactly the limit is allowed")
        #expect(describe(machine.receivedBody(Self.bytes(1))) == "stop")
        #expect(machine.body.isEmpty)
        #expect(describe(machine.transportEnded(nil)) == "tooLarge")
    }

    @Test("A second head on one exchange (a resend with a credential) replaces the first and its body")
    func secondHead() {
        var machine = Self.memory()
        _ = machine.receivedHead(Self.head(401))
        _ = machine.receivedBody(Self.bytes(4))
        #expect(describe(machine.receivedHead(Self.head(200))) == "proceed")
        _ = machine.receivedBody(Self.bytes(2))
        #expect(describe(machine.transportEnded(nil)) == "delivered(200, 2 bytes)")
    }

    @Test("A transport that fails before, during or after the body: failed with its error")
    func transportFailures() {
        var before = Self.memory()
        #expect(describe(before.transportEnded(URLError(.cannotConnectToHost))) == "failed(-1004)")
        var during = Self.memory()
        _ = during.receivedHead(Self.head(200))
        _ = during.receivedBody(Self.bytes(3))
        #expect(describe(during.transportEnded(URLError(.networkConnectionLost))) == "failed(-1005)")
        var silent = Self.memory()
        #expect(
            describe(silent.transportEnded(nil)) == "failed(-1011)", "returned without a head: badServerResponse")
    }

    @Test("A transport that breaks the contract (a piece before the head) fails the exchange with badServerResponse")
    func outOfOrder() {
        var machine = Self.memory()
        #expect(describe(machine.receivedBody(Self.bytes(1))) == "stop")
        #expect(describe(machine.transportEnded(nil)) == "failed(-1011)")
    }

    // MARK: Redirects

    @Test("A redirect with a Location is read and dropped, in memory or to a sink, and ends as redirected")
    func redirectAtHead() {
        // A download's kept bytes (under the first URL) go back to the store for a later run.
        for (var machine, ending) in [
            (Self.memory(), "redirected(302)"), (Self.sink(), "settle(keep: true) then redirected(302)"),
        ] {
            #expect(describe(machine.receivedHead(Self.head(302, ["Location": "/next"]))) == "proceed")
            #expect(describe(machine.receivedBody(Self.bytes(50))) == "proceed")
            #expect(machine.body.isEmpty, "a redirect's body is not kept")
            #expect(describe(machine.transportEnded(nil)) == ending)
        }
    }

    @Test("Each followed status is a redirect; a 3xx without Location, a 300 or a 304 is a response")
    func whichRedirects() {
        for status in [301, 302, 303, 307, 308] {
            var machine = Self.memory()
            _ = machine.receivedHead(Self.head(status, ["Location": "https://other.example/"]))
            #expect(describe(machine.transportEnded(nil)) == "redirected(\(status))")
        }
        for (status, headers) in [(302, [:]), (300, ["Location": "/a"]), (304, ["Location": "/a"])] {
            var machine = Self.memory()
            _ = machine.receivedHead(Self.head(status, headers))
            #expect(describe(machine.transportEnded(nil)) == "delivered(\(status), 0 bytes)")
        }
    }

    @Test("A redirect whose body goes on past 64 KiB is followed without the rest")
    func longRedirectBody() {
        var machine = Self.memory()
        _ = machine.receivedHead(Self.head(307, ["Location": "/next"]))
        #expect(describe(machine.receivedBody(Self.bytes(64 * 1024))) == "proceed")
        #expect(describe(machine.receivedBody(Self.bytes(1))) == "stop")
        #expect(describe(machine.transportEnded(URLError(.cancelled))) == "redirected(307)")
    }

    @Test(
        "A redirect head that replaces an earlier head (a resend after a 401) is a redirect; one during a write fails")
    func redirectReplacingHead() {
        var memory = Self.memory()
        _ = memory.receivedHead(Self.head(401))
        _ = memory.receivedBody(Self.bytes(3))
        #expect(describe(memory.receivedHead(Self.head(302, ["Location": "/next"]))) == "proceed")
        #expect(describe(memory.transportEnded(nil)) == "redirected(302)")
        var idle = Self.writingSink()
        #expect(describe(idle.receivedHead(Self.head(302, ["Location": "/next"]))) == "proceed")
        var busy = Self.writingSink()
        _ = busy.receivedBody(Self.bytes(3))
        #expect(describe(busy.receivedHead(Self.head(302, ["Location": "/next"]))) == "stop")
        #expect(describe(busy.transportEnded(nil)) == "failed(-1011)")
        #expect(describe(busy.wrote(nil, bytesWritten: 3)) == "settle(keep: false)")
    }

    @Test("A redirect that arrives after a stop is ignored: the stop's outcome stands")
    func redirectAfterStop() {
        var machine = Self.memory()
        _ = machine.stop(.cancelled)
        #expect(describe(machine.receivedHead(Self.head(302, ["Location": "/next"]))) == "ignore")
        #expect(describe(machine.transportEnded(nil)) == "cancelled")
    }

    @Test("A connection lost while a redirect's body is read fails the exchange")
    func redirectBodyLost() {
        var machine = Self.memory()
        _ = machine.receivedHead(Self.head(302, ["Location": "/next"]))
        #expect(describe(machine.transportEnded(URLError(.networkConnectionLost))) == "failed(-1005)")
    }

    // MARK: Cancel and deadline at each phase

    /// The machine brought to each phase without file work, with the name of the phase. A download's end (the error
    /// body) also settles the bytes an earlier run kept: deleted after a cancel, kept after the deadline.
    static func phases() -> [(String, Machine)] {
        let waiting = memory()
        var memoryBody = memory()
        _ = memoryBody.receivedHead(head(200))
        _ = memoryBody.receivedBody(bytes(3))
        var redirect = memory()
        _ = redirect.receivedHead(head(302, ["Location": "/x"]))
        var errorBody = sink()
        _ = errorBody.receivedHead(head(503))
        _ = errorBody.sinkOpened(.errorBody)
        return [
            ("waiting for the head", waiting), ("in-memory body", memoryBody), ("redirect body", redirect),
            ("error body", errorBody),
        ]
    }

    @Test("A cancel at any phase without file work stops at once and ends as cancelled, whatever the transport says")
    func cancelAtEachPhase() {
        for (phase, var machine) in Self.phases() {
            #expect(describe(machine.stop(.cancelled)) == "stop", "\(phase)")
            #expect(describe(machine.stop(.timedOut)) == "ignore", "\(phase): a second stop changes nothing")
            #expect(describe(machine.receivedBody(Self.bytes(1))) == "ignore", "\(phase)")
            let settles = machine.mode == .sink ? "settle(keep: false) then " : ""
            #expect(describe(machine.transportEnded(nil)) == settles + "cancelled", "\(phase)")
        }
    }

    @Test("A deadline at any phase without file work ends as timedOut, even if the transport then succeeds")
    func deadlineAtEachPhase() {
        for (phase, var machine) in Self.phases() {
            #expect(describe(machine.stop(.timedOut)) == "stop", "\(phase)")
            let settles = machine.mode == .sink ? "settle(keep: true) then " : ""
            #expect(describe(machine.transportEnded(nil)) == settles + "timedOut", "\(phase)")
        }
    }

    @Test("A stop after the end changes nothing")
    func stopAfterEnd() {
        var machine = Self.memory()
        _ = machine.receivedHead(Self.head(200))
        _ = machine.transportEnded(nil)
        #expect(describe(machine.stop(.timedOut)) == "ignore")
        #expect(describe(machine.transportEnded(nil)) == "delivered(200, 0 bytes)")
    }

    // MARK: Sinks (downloads)

    @Test("A download: the head opens the sink, each piece is a write, the end finishes the file")
    func sinkSuccess() {
        var machine = Self.sink(progress: true)
        #expect(describe(machine.receivedHead(Self.head(200))) == "openSink")
        #expect(describe(machine.sinkOpened(.writing(written: 0, total: 10))) == "proceed")
        #expect(describe(machine.receivedBody(Self.bytes(6))) == "write")
        #expect(describe(machine.wrote(nil, bytesWritten: 6)) == "report(received 6 of 10)")
        #expect(describe(machine.receivedBody(Self.bytes(4))) == "write")
        #expect(describe(machine.wrote(nil, bytesWritten: 10)) == "report(received 10 of 10)")
        #expect(describe(machine.transportEnded(nil)) == "finishSink")
        #expect(describe(machine.sinkFinished(.success(10))) == "delivered(200, 0 bytes)")
        #expect(machine.finalProgress()?.bytesReceived == 10)
    }

    @Test("A resumed download counts the kept bytes in its first report")
    func sinkResumed() {
        var machine = Self.sink(progress: true)
        _ = machine.receivedHead(Self.head(206))
        _ = machine.sinkOpened(.writing(written: 1_000, total: 1_500))
        _ = machine.receivedBody(Self.bytes(100))
        #expect(describe(machine.wrote(nil, bytesWritten: 1_100)) == "report(received 1100 of 1500)")
    }

    @Test("A download is not held to the in-memory size limit")
    func sinkHasNoLimit() {
        var machine = Self.sink(limit: 10)
        _ = machine.receivedHead(Self.head(200, ["Content-Length": "1000"]))
        _ = machine.sinkOpened(.writing(written: 0, total: 1000))
        #expect(describe(machine.receivedBody(Self.bytes(1000))) == "write")
    }

    @Test("A status the sink does not take keeps its body in memory up to the limit, then stops: the error's body")
    func sinkErrorBody() {
        var machine = Self.sink(limit: 10)
        _ = machine.receivedHead(Self.head(404))
        #expect(describe(machine.sinkOpened(.errorBody)) == "proceed")
        #expect(describe(machine.receivedBody(Self.bytes(6))) == "proceed")
        #expect(describe(machine.receivedBody(Self.bytes(6))) == "stop")
        #expect(
            describe(machine.transportEnded(URLError(.cancelled)))
                == "settle(keep: false) then delivered(404, 10 bytes)")
    }

    @Test("A 503 to a resumed download keeps the kept bytes for a later run")
    func sinkErrorStatusKeeps() {
        var machine = Self.sink()
        _ = machine.receivedHead(Self.head(503))
        _ = machine.sinkOpened(.errorBody)
        #expect(describe(machine.transportEnded(nil)) == "settle(keep: true) then delivered(503, 0 bytes)")
    }

    @Test("A stale 206 restarts the download: the sink settles, the exchange ends as restarting, not as a redirect")
    func staleRangeRestarts() {
        var machine = Self.sink()
        _ = machine.receivedHead(Self.head(206))
        var fresh = URLRequest(url: Self.url)
        fresh.setValue(nil, forHTTPHeaderField: "Range")
        #expect(describe(machine.sinkOpened(.restart(fresh))) == "stop(settle: false)")
        #expect(describe(machine.receivedBody(Self.bytes(5))) == "ignore", "the stale body is not read")
        #expect(describe(machine.transportEnded(URLError(.cancelled))) == "restarting")
    }

    @Test("A sink that cannot open its file fails the exchange")
    func sinkOpenFails() {
        var machine = Self.sink()
        _ = machine.receivedHead(Self.head(200))
        let failure = NetworkClientError.fileAccessFailed(url: Self.url, reason: "read-only")
        #expect(describe(machine.sinkOpened(.failed(failure))) == "stop(settle: false)")
        #expect(describe(machine.transportEnded(nil)) == "failed(fileAccessFailed)")
    }

    @Test("A write that fails stops the exchange and deletes the bytes")
    func writeFails() {
        var machine = Self.writingSink()
        _ = machine.receivedBody(Self.bytes(5))
        let failure = NetworkClientError.fileAccessFailed(url: Self.url, reason: "disk full")
        #expect(describe(machine.wrote(failure, bytesWritten: 0)) == "stop(settle: false)")
        #expect(describe(machine.transportEnded(nil)) == "failed(fileAccessFailed)")
    }

    @Test("Cancel while the file is idle settles it at once and deletes the bytes; the deadline keeps them")
    func stopIdleSink() {
        var cancelled = Self.writingSink()
        #expect(describe(cancelled.stop(.cancelled)) == "stop(settle: false)")
        #expect(describe(cancelled.transportEnded(nil)) == "cancelled", "settled once, not again at the end")
        var timedOut = Self.writingSink()
        #expect(describe(timedOut.stop(.timedOut)) == "stop(settle: true)")
        #expect(describe(timedOut.transportEnded(nil)) == "timedOut")
    }

    @Test("Cancel or deadline while a piece is written: the write, when it returns, settles the file")
    func stopWhileWriting() {
        for (reason, keep) in [(Machine.StopReason.cancelled, false), (.timedOut, true)] {
            var machine = Self.writingSink()
            _ = machine.receivedBody(Self.bytes(5))
            #expect(describe(machine.stop(reason)) == "stop", "no settlement while the sink is busy")
            #expect(describe(machine.transportEnded(nil)) == (keep ? "timedOut" : "cancelled"))
            #expect(describe(machine.wrote(nil, bytesWritten: 5)) == "settle(keep: \(keep))")
        }
    }

    @Test("Cancel or deadline while the sink opens its file: the open, when it returns, settles the file")
    func stopWhileOpening() {
        for (reason, keep) in [(Machine.StopReason.cancelled, false), (.timedOut, true)] {
            var machine = Self.sink()
            _ = machine.receivedHead(Self.head(200))
            #expect(describe(machine.stop(reason)) == "stop")
            #expect(describe(machine.sinkOpened(.writing(written: 0, total: nil))) == "settle(keep: \(keep))")
            #expect(describe(machine.transportEnded(nil)) == (keep ? "timedOut" : "cancelled"))
        }
    }

    @Test("Cancel or deadline before a download's head: the bytes an earlier run kept are settled at the end")
    func stopBeforeSinkHead() {
        var cancelled = Self.sink()
        _ = cancelled.stop(.cancelled)
        #expect(describe(cancelled.transportEnded(nil)) == "settle(keep: false) then cancelled")
        var timedOut = Self.sink()
        _ = timedOut.stop(.timedOut)
        #expect(describe(timedOut.transportEnded(nil)) == "settle(keep: true) then timedOut")
    }

    @Test("A download whose connection drops keeps its bytes; one cancelled by the transport does not")
    func sinkTransportFailure() {
        var lost = Self.writingSink()
        #expect(
            describe(lost.transportEnded(URLError(.networkConnectionLost)))
                == "settle(keep: true) then failed(-1005)")
        var cancelled = Self.writingSink()
        #expect(describe(cancelled.transportEnded(URLError(.cancelled))) == "settle(keep: false) then failed(-999)")
    }

    @Test("A transport that returns while a piece is still being written fails; the write settles the file")
    func transportReturnsWhileWriting() {
        var machine = Self.writingSink()
        _ = machine.receivedBody(Self.bytes(5))
        #expect(describe(machine.transportEnded(nil)) == "failed(-1011)")
        #expect(describe(machine.wrote(nil, bytesWritten: 5)) == "settle(keep: false)")
    }

    @Test("A file that cannot be moved into place fails the exchange")
    func finishFails() {
        var machine = Self.writingSink()
        _ = machine.transportEnded(nil)
        let failure = NetworkClientError.fileAccessFailed(url: Self.url, reason: "the destination is a directory")
        #expect(describe(machine.sinkFinished(.failure(failure))) == "failed(fileAccessFailed)")
    }

    @Test("Upload progress never goes back and is not reported once the exchange stopped")
    func uploadProgress() {
        var machine = Self.memory(progress: true)
        #expect(describe(machine.sent(10, of: 100)) == "report(sent 10 of 100)")
        #expect(describe(machine.sent(5, of: 100)) == "proceed", "a smaller count is not a report")
        _ = machine.stop(.cancelled)
        #expect(describe(machine.sent(50, of: 100)) == "proceed")
    }
}

// MARK: - Descriptions

private func describe(_ action: TransferStateMachine.Action) -> String {
    switch action {
    case .proceed: "proceed"
    case .report(let progress):
        if progress.bytesSent > 0 {
            "report(sent \(progress.bytesSent) of \(progress.totalBytesExpectedToSend.map(String.init) ?? "?"))"
        } else {
            "report(received \(progress.bytesReceived) of "
                + "\(progress.totalBytesExpectedToReceive.map(String.init) ?? "?"))"
        }
    case .openSink: "openSink"
    case .write: "write"
    case .stop(nil): "stop"
    case .stop(let keep?): "stop(settle: \(keep))"
    case .settleSink(let keep): "settle(keep: \(keep))"
    case .ignore: "ignore"
    }
}

private func describe(_ outcome: TransferStateMachine.Outcome) -> String {
    switch outcome {
    case .delivered(let head, let body): "delivered(\(head.statusCode), \(body.count) bytes)"
    case .redirected(let head): "redirected(\(head.statusCode))"
    case .restarting: "restarting"
    case .cancelled: "cancelled"
    case .timedOut: "timedOut"
    case .tooLarge: "tooLarge"
    case .failed(let error as URLError): "failed(\(error.code.rawValue))"
    case .failed(NetworkClientError.fileAccessFailed): "failed(fileAccessFailed)"
    case .failed(let error): "failed(\(error))"
    }
}

private func describe(_ ending: TransferStateMachine.Ending) -> String {
    switch ending {
    case .outcome(let outcome): describe(outcome)
    case .settleSink(let keep, let outcome): "settle(keep: \(keep)) then \(describe(outcome))"
    case .finishSink: "finishSink"
    }
}
