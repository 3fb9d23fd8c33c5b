import Courier
import CourierAsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// A server on 127.0.0.1 that answers with raw bytes, plain or over TLS: the answers no HTTP library writes (a head
/// that never ends, a flood of header lines, a body cut off). It reads each request's head, then does what its
/// ``Behaviour`` says, and records what it wrote and when each connection closed.
///
/// A flooding server does not stop for the client's `close_notify` (the connection allows half-closure, as a server
/// that ignores TLS's goodbye does): it goes on writing until the connection is gone. The others close when the client
/// does.
///
/// `GET /warm` is answered with `204 No Content` and the connection kept: a test sends it first, so that the request
/// under test goes out on an open connection and what it times is the server's silence, not a TLS handshake on a
/// loaded machine.
final class RawServer: Sendable {
    enum Behaviour: Sendable {
        /// Reads the request and never answers; the connection stays open.
        case silent
        /// Writes these bytes, then nothing more; the connection stays open.
        case send([UInt8])
        /// Writes these bytes, then closes the connection (over TLS without `close_notify`: the TCP connection just
        /// ends).
        case sendAndDrop([UInt8])
        /// Writes `prefix`, then `filler` over and over as fast as the connection takes it (writability-driven), until
        /// the connection closes.
        case flood(prefix: [UInt8], filler: [UInt8])
        /// Writes these bytes as soon as the connection opens, before anything is read (plain HTTP only).
        case greet([UInt8])
        /// Stops reading after the request's head: a request body fills the socket buffers, then waits.
        case stopReading
    }

    private let channel: any Channel
    private let state = NIOLockedValueBox<(written: Int, requests: Int)>((0, 0))
    private let closedSignal: AsyncStream<ContinuousClock.Instant>.Continuation
    /// When each connection the server saw closed.
    let closures: AsyncStream<ContinuousClock.Instant>
    let port: Int
    let scheme: String

    init(tls: TLSConfiguration? = nil, behaviour: Behaviour) async throws {
        let context = try tls.map { try NIOSSLContext(configuration: $0) }
        (closures, closedSignal) = AsyncStream.makeStream(of: ContinuousClock.Instant.self)
        let raw = NIOLockedValueBox<RawServer?>(nil)
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(SocketCloser())
                    if let context { try pipeline.addHandler(NIOSSLServerHandler(context: context)) }
                    try pipeline.addHandler(RawHandler(behaviour: behaviour, server: raw))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress?.port ?? 0
        scheme = tls == nil ? "http" : "https"
        raw.withLockedValue { $0 = self }
    }

    func url(_ path: String, host: String = "127.0.0.1") -> URL {
        URL(string: "\(scheme)://\(host):\(port)\(path)")!
    }

    /// A client for this server (by `host`) whose connection is open: `GET /warm` went out on it.
    func warmClient(_ transport: AsyncHTTPClientTransport, host: String = "127.0.0.1") async throws -> NetworkClient {
        let client = client(transport, baseURL: url("/", host: host))
        _ = try await client.run(NetworkRequest<VoidRequest, VoidResponse>(path: "warm", method: .get))
        return client
    }

    /// The bytes the server's writes put on the connections (their writes completed), over all connections.
    var bytesWritten: Int { state.withLockedValue { $0.written } }

    /// The request heads the server read.
    var requestCount: Int { state.withLockedValue { $0.requests } }

    func stop() async throws {
        try await channel.close()
        closedSignal.finish()
    }

    fileprivate func recordRequest() { state.withLockedValue { $0.requests += 1 } }
    fileprivate func recordWritten(_ count: Int) { state.withLockedValue { $0.written += count } }
    fileprivate func recordClosed() { closedSignal.yield(ContinuousClock.now) }
}

private final class RawHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let behaviour: RawServer.Behaviour
    private let server: NIOLockedValueBox<RawServer?>
    private var received: [UInt8] = []
    private var answered = false
    private var filler: [UInt8]?
    private var pumping = false

    init(behaviour: RawServer.Behaviour, server: NIOLockedValueBox<RawServer?>) {
        self.behaviour = behaviour
        self.server = server
    }

    func channelActive(context: ChannelHandlerContext) {
        if case .greet(let bytes) = behaviour { write(bytes, context: context) }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        guard !answered else { return }
        received += buffer.readBytes(length: buffer.readableBytes) ?? []
        // The request's head ends with an empty line; the probes send no body, but for `stopReading`'s.
        guard received.firstRange(of: Array("\r\n\r\n".utf8)) != nil else { return }
        if received.starts(with: Array("GET /warm ".utf8)) {
            received = []
            write(Array("HTTP/1.1 204 No Content\r\n\r\n".utf8), context: context)
            return
        }
        answered = true
        server.withLockedValue { $0 }?.recordRequest()
        switch behaviour {
        case .silent, .greet:
            break
        case .stopReading:
            try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
        case .send(let bytes):
            write(bytes, context: context)
        case .sendAndDrop(let bytes):
            let written = context.eventLoop.makePromise(of: Void.self)
            write(bytes, context: context, promise: written)
            // Closes the socket under TLS: no close_notify, as a crashed server or a cut connection would.
            let closer = NIOLoopBound(
                try? context.pipeline.syncOperations.context(handlerType: SocketCloser.self),
                eventLoop: context.eventLoop)
            written.futureResult.whenComplete { _ in
                closer.value?.close(promise: nil)
            }
        case .flood(let prefix, let filler):
            try? context.channel.syncOptions?.setOption(ChannelOptions.socketOption(.so_sndbuf), value: 256 * 1_024)
            write(prefix, context: context)
            self.filler = filler
            pump(context: context)
        }
    }

    private func write(_ bytes: [UInt8], context: ChannelHandlerContext, promise: EventLoopPromise<Void>? = nil) {
        let count = bytes.count
        let written = promise ?? context.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenSuccess { [server] in server.withLockedValue { $0 }?.recordWritten(count) }
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: written)
    }

    /// Writes the filler, 64 KiB at a time, while the channel is writable.
    private func pump(context: ChannelHandlerContext) {
        guard !pumping, let filler, !filler.isEmpty else { return }
        pumping = true
        defer { pumping = false }
        let repeats = max(1, 64 * 1_024 / filler.count)
        let chunk = Array([[UInt8]](repeating: filler, count: repeats).joined())
        while context.channel.isWritable && context.channel.isActive {
            write(chunk, context: context)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { pump(context: context) }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The client closed its side (a FIN, or TLS's close_notify): a flood goes on until a write fails.
        if case ChannelEvent.inputClosed = event, filler == nil { context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        server.withLockedValue { $0 }?.recordClosed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// The first handler, next to the socket: closing from its context closes the socket without the TLS handler's
/// `close_notify`.
private final class SocketCloser: ChannelOutboundHandler {
    typealias OutboundIn = Any
}
