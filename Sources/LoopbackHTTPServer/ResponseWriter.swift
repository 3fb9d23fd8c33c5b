import Foundation

/// Writes the body of a `.writer` response as the handler decides, on the connection's thread: a streaming server
/// (server-sent events, JSON lines, a feed that drops or stalls) for tests and benchmarks.
///
/// Each ``send(_:)-(Data)`` is one chunk of a `Transfer-Encoding: chunked` body (or, for a response that is not
/// chunked, raw bytes of a body ended by closing the connection). A send blocks while the client does not read (the
/// socket's buffers are full): that is the backpressure a streaming client applies.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
public final class ResponseWriter {
    /// How the handler ends the response.
    public enum Ending: Sendable {
        /// The body ends properly (the terminating chunk of a chunked body) and the connection may be kept.
        case finish
        /// The connection is closed without ending the body: a dropped stream.
        case close
        /// The connection is reset (TCP RST).
        case reset
    }

    private let sendBytes: (UnsafeRawBufferPointer) -> Bool
    private let waitWatching: (Duration) -> Bool
    private let counted: (Int) -> Void
    let chunked: Bool
    /// Whether a send or a wait found the client gone (or the server stopping).
    public private(set) var clientWentAway = false
    /// Body bytes handed to the socket so far (the chunk framing not counted).
    public private(set) var bytesSent = 0

    init(
        chunked: Bool, send: @escaping (UnsafeRawBufferPointer) -> Bool, wait: @escaping (Duration) -> Bool,
        counted: @escaping (Int) -> Void
    ) {
        self.chunked = chunked
        self.sendBytes = send
        self.waitWatching = wait
        self.counted = counted
    }

    /// Sends `data` as the next piece of the body (an empty piece sends nothing). Returns `false` if the client went
    /// away, after which nothing more is sent.
    @discardableResult
    public func send(_ data: Data) -> Bool {
        guard !clientWentAway else { return false }
        guard !data.isEmpty else { return true }
        var framed = Data()
        if chunked {
            framed.reserveCapacity(data.count + 16)
            framed.append(contentsOf: Array((String(data.count, radix: 16) + "\r\n").utf8))
            framed.append(data)
            framed.append(contentsOf: [0x0D, 0x0A])
        } else {
            framed = data
        }
        guard framed.withUnsafeBytes(sendBytes) else {
            clientWentAway = true
            return false
        }
        bytesSent += data.count
        counted(data.count)
        return true
    }

    /// Sends `text` as UTF-8; see ``send(_:)-(Data)``.
    @discardableResult
    public func send(_ text: String) -> Bool {
        send(Data(text.utf8))
    }

    /// Waits `duration` while watching the connection. Returns `false` at once (within about 10 ms) if the client
    /// closed it or the server is stopping.
    @discardableResult
    public func wait(_ duration: Duration) -> Bool {
        guard !clientWentAway else { return false }
        if !waitWatching(duration) { clientWentAway = true }
        return !clientWentAway
    }

    /// Sends the terminating chunk of a chunked body.
    func finish() -> Bool {
        guard chunked, !clientWentAway else { return !clientWentAway }
        return Array("0\r\n\r\n".utf8).withUnsafeBytes(sendBytes)
    }
}
