import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The part of the server that the threads keep alive: descriptors, handler and the locked state. The public
/// `LoopbackServer` owns it and stops it on deinit; threads never reference the `LoopbackServer` itself.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
final class ServerCore: Sendable {
    let state = ServerState()
    let handler: @Sendable (ServerRequest) -> ServerResponse
    /// Chooses how each request's body is received, from its method and path.
    let requestBodyMode: @Sendable (_ method: String, _ path: String) -> RequestBodyMode
    let listenFD: Int32
    let wakeReadFD: Int32
    let wakeWriteFD: Int32
    /// Identifies this server's threads in their thread dictionary (so `stop` from a handler does not self-join).
    let threadToken: Int

    private static let threadTokenKey = "LoopbackHTTPServer.threadToken"

    init(
        listenFD: Int32,
        requestBodyMode: @escaping @Sendable (_ method: String, _ path: String) -> RequestBodyMode,
        handler: @escaping @Sendable (ServerRequest) -> ServerResponse
    ) throws {
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else {
            throw LoopbackServerError(operation: "pipe", code: errno)
        }
        setCloseOnExec(pipeFDs[0])
        setCloseOnExec(pipeFDs[1])
        self.listenFD = listenFD
        self.wakeReadFD = pipeFDs[0]
        self.wakeWriteFD = pipeFDs[1]
        self.handler = handler
        self.requestBodyMode = requestBodyMode
        self.threadToken = Int(bitPattern: UInt(bitPattern: ObjectIdentifier(state)))
    }

    var isStopped: Bool {
        state.locked { state.stopped }
    }

    // MARK: Threads

    func start() {
        state.locked { state.liveThreads += 1 }
        let thread = Thread { [self] in
            markCurrentThread()
            acceptLoop()
            threadFinished()
        }
        thread.name = "LoopbackHTTPServer accept"
        thread.start()
    }

    private func markCurrentThread() {
        Thread.current.threadDictionary[Self.threadTokenKey] = threadToken
    }

    private var isServerThread: Bool {
        (Thread.current.threadDictionary[Self.threadTokenKey] as? Int) == threadToken
    }

    private func threadFinished() {
        state.locked {
            state.liveThreads -= 1
            if state.liveThreads == 0 { state.lock.broadcast() }
        }
    }

    private func acceptLoop() {
        var entries = [
            pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wakeReadFD, events: Int16(POLLIN), revents: 0),
        ]
        acceptLoop: while true {
            let ready = poll(&entries, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            if entries[1].revents != 0 { break }
            guard entries[0].revents != 0 else { continue }
            // The listener is non-blocking: drain all pending connections.
            while true {
                let fd = accept(listenFD, nil, nil)
                if fd < 0 {
                    switch errno {
                    case EINTR, ECONNABORTED: continue
                    case EAGAIN, EWOULDBLOCK: continue acceptLoop
                    case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                        sleepMilliseconds(10)
                        continue acceptLoop
                    default: break acceptLoop
                    }
                }
                configureAcceptedSocket(fd)
                guard let id = register(fd) else {
                    closeSocket(fd)
                    break acceptLoop
                }
                let thread = Thread { [self] in
                    markCurrentThread()
                    let connection = Connection(core: self, id: id, fd: fd)
                    let reset = connection.run()
                    unregisterAndClose(id: id, fd: fd, reset: reset)
                    threadFinished()
                }
                thread.name = "LoopbackHTTPServer connection \(id)"
                thread.start()
            }
        }
        state.locked {
            closeSocket(listenFD)
            closeSocket(wakeReadFD)
            closeSocket(wakeWriteFD)
            state.listenerClosed = true
        }
    }

    /// Registers an accepted socket and reserves a thread for it; nil if the server is stopping.
    private func register(_ fd: Int32) -> Int? {
        state.locked {
            guard !state.stopped else { return nil }
            let id = state.nextConnectionID
            state.nextConnectionID += 1
            state.connectionCount += 1
            state.connections[id] = fd
            state.liveThreads += 1
            return id
        }
    }

    private func unregisterAndClose(id: Int, fd: Int32, reset: Bool) {
        state.locked {
            state.connections[id] = nil
            if reset { setLingerZero(fd) }
            closeSocket(fd)
        }
    }

    // MARK: Requests

    /// Records a fully parsed request, numbering it; `make` runs under the lock and must be cheap.
    func requestStarted(_ make: (_ sequenceNumber: Int) -> ServerRequest) -> ServerRequest {
        state.locked {
            let request = make(state.nextSequenceNumber)
            state.nextSequenceNumber += 1
            state.requestCount += 1
            state.inProgressRequests += 1
            state.maxConcurrentRequests = max(state.maxConcurrentRequests, state.inProgressRequests)
            state.recorded.append(request)
            state.trimRecorded()
            return request
        }
    }

    /// Marks a request as no longer in progress; counts a client close unless the server is stopping.
    func requestFinished(clientClosed: Bool) {
        state.locked {
            state.inProgressRequests -= 1
            if clientClosed && !state.stopped { state.clientClosedCount += 1 }
        }
    }

    /// Counts response body bytes that `send` accepted.
    func bodyBytesSent(_ count: Int) {
        state.locked { state.bodyBytesSent += count }
    }

    /// Counts one interim (1xx) response sent by `.interimForever`.
    func interimResponseSent() {
        state.locked { state.interimResponsesSent += 1 }
    }

    // MARK: Stopping

    func stop() {
        let allowedThreads = isServerThread ? 1 : 0
        let deadline = Date(timeIntervalSinceNow: 5)
        state.locked {
            if !state.stopped {
                state.stopped = true
                if !state.listenerClosed {
                    var byte: UInt8 = 1
                    _ = write(wakeWriteFD, &byte, 1)
                }
                for fd in state.connections.values { shutdownSocket(fd) }
            }
            while state.liveThreads > allowedThreads {
                if !state.lock.wait(until: deadline) { break }
            }
        }
    }
}
