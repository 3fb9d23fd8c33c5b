import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// A small HTTP/1.1 server on 127.0.0.1 for the tests, plain or over TLS (optionally requiring a client
/// certificate), answering from a route closure. It records what it received and when a connection closed.
final class TestServer: Sendable {
    struct Request: Sendable {
        let method: HTTPMethod
        let uri: String
        let headers: HTTPHeaders
        let body: [UInt8]
    }

    struct Response: Sendable {
        var status: HTTPResponseStatus = .ok
        var headers: [(String, String)] = []
        var body: [UInt8] = []
        /// The body goes out in this many writes, without a `Content-Length` (chunked) when more than one.
        var pieces = 1
        /// Instead of `body`: a chunked body the test writes over time, after the head.
        var writer: (@Sendable (BodyWriter) async throws -> Void)?
        /// Instead of `body`: a chunked body the server writes as fast as the connection takes it.
        var flood: Flood?

        static func text(_ text: String, status: HTTPResponseStatus = .ok) -> Response {
            Response(status: status, headers: [("Content-Type", "text/plain")], body: Array(text.utf8))
        }

        static func json(_ text: String) -> Response {
            Response(headers: [("Content-Type", "application/json")], body: Array(text.utf8))
        }

        static func redirect(to location: String, status: HTTPResponseStatus = .found) -> Response {
            Response(status: status, headers: [("Location", location)])
        }

        /// A `text/event-stream` body that `write` sends over time.
        static func eventStream(_ write: @escaping @Sendable (BodyWriter) async throws -> Void) -> Response {
            Response(headers: [("Content-Type", "text/event-stream")], writer: write)
        }
    }

    /// Writes a streamed body from a test: each send is one chunk, flushed, and returns once NIO wrote it to the
    /// socket (or throws when the connection is gone).
    struct BodyWriter: Sendable {
        let channel: any Channel

        func send(_ text: String) async throws {
            try await channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: text)))).get()
        }

        /// Ends the body (the last chunk).
        func end() async throws {
            try await channel.writeAndFlush(HTTPServerResponsePart.end(nil)).get()
        }

        /// Returns once the connection closed.
        func closed() async {
            try? await channel.closeFuture.get()
        }
    }

    /// A body of `lines` lines, each made by `line` from its index, written by the server on the connection's event
    /// loop while the channel is writable and resumed when it becomes writable again: as fast as the client's side
    /// takes it, and no faster. What the socket accepted is counted in ``bodyBytesWritten``. The connection's send
    /// buffer is set to 256 KiB (512 KiB as Linux counts it).
    struct Flood: Sendable {
        let lines: Int
        let line: @Sendable (Int) -> [UInt8]
    }

    /// Answers a request; `nil` never answers (a server that hangs).
    typealias Route = @Sendable (Request) -> Response?

    private let channel: any Channel
    private let state = NIOLockedValueBox<(requests: [Request], closed: Int, written: Int)>(([], 0, 0))
    private let closedSignal: AsyncStream<ContinuousClock.Instant>.Continuation
    /// When each connection the server saw closed.
    let closures: AsyncStream<ContinuousClock.Instant>
    let port: Int
    let scheme: String

    /// Starts a server; `tls` makes it HTTPS.
    init(tls: TLSConfiguration? = nil, route: @escaping Route) async throws {
        let context = try tls.map { try NIOSSLContext(configuration: $0) }
        (closures, closedSignal) = AsyncStream.makeStream(of: ContinuousClock.Instant.self)
        let box = Box()
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let context { try pipeline.addHandler(NIOSSLServerHandler(context: context)) }
                    try pipeline.configureHTTPServerPipeline()
                    try pipeline.addHandler(RouteHandler(route: route, server: box))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress?.port ?? 0
        scheme = tls == nil ? "http" : "https"
        box.server.withLockedValue { $0 = self }
    }

    /// `path` on this server, by the host name `host`.
    func url(_ path: String, host: String = "127.0.0.1") -> URL {
        URL(string: "\(scheme)://\(host):\(port)\(path)")!
    }

    var requests: [Request] { state.withLockedValue { $0.requests } }

    /// The bytes of `Flood` bodies that NIO wrote to the sockets (their writes completed), over all connections.
    var bodyBytesWritten: Int { state.withLockedValue { $0.written } }

    func stop() async throws {
        try await channel.close()
        closedSignal.finish()
    }

    fileprivate func record(_ request: Request) { state.withLockedValue { $0.requests.append(request) } }

    fileprivate func recordWritten(_ count: Int) { state.withLockedValue { $0.written += count } }

    fileprivate func recordClosed() {
        state.withLockedValue { $0.closed += 1 }
        closedSignal.yield(ContinuousClock.now)
    }

    /// Reaches the server from its connections' handlers once it is started.
    final class Box: Sendable {
        let server = NIOLockedValueBox<TestServer?>(nil)
    }
}

private final class RouteHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let route: TestServer.Route
    private let server: TestServer.Box
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    /// The flood being written, and the index of its next line.
    private var flood: (flood: TestServer.Flood, next: Int)?
    /// Whether `pump` runs (a flush inside it may call it again through a writability change).
    private var pumping = false

    init(route: @escaping TestServer.Route, server: TestServer.Box) {
        self.route = route
        self.server = server
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(var buffer):
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            guard let head else { return }
            let request = TestServer.Request(method: head.method, uri: head.uri, headers: head.headers, body: body)
            server.server.withLockedValue { $0 }?.record(request)
            guard let response = route(request) else { return }  // Never answers.
            var headers = HTTPHeaders(response.headers)
            let streamed = response.writer != nil || response.flood != nil
            if response.pieces <= 1 && !streamed {
                headers.replaceOrAdd(name: "Content-Length", value: String(response.body.count))
            }
            context.writeAndFlush(
                wrapOutboundOut(
                    .head(HTTPResponseHead(version: head.version, status: response.status, headers: headers))),
                promise: nil)
            if let writer = response.writer {
                let writing = TestServer.BodyWriter(channel: context.channel)
                Task { try? await writer(writing) }
                return
            }
            if let flood = response.flood {
                // A fixed send buffer (Linux doubles it: 512 KiB) rather than one autotuned up to tcp_wmem's maximum
                // (4 MiB on the test machines): what the kernel holds on the server's side stays known.
                try? context.channel.syncOptions?.setOption(ChannelOptions.socketOption(.so_sndbuf), value: 256 * 1_024)
                self.flood = (flood, 0)
                pump(context: context)
                return
            }
            let size = max(1, (response.body.count + response.pieces - 1) / max(1, response.pieces))
            var start = 0
            while start < response.body.count {
                let end = min(response.body.count, start + size)
                let buffer = context.channel.allocator.buffer(bytes: response.body[start..<end])
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
                start = end
            }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }

    /// Writes the flood's next lines while the channel is writable, 64 lines a chunk; ends the body after the last.
    /// A flush may change the writability at once (and call back here): the state is saved before each flush.
    private func pump(context: ChannelHandlerContext) {
        guard !pumping else { return }
        pumping = true
        defer { pumping = false }
        while let (flood, next) = self.flood, context.channel.isWritable, context.channel.isActive {
            guard next < flood.lines else {
                self.flood = nil
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                return
            }
            var chunk = context.channel.allocator.buffer(capacity: 64 * 1024)
            let end = min(flood.lines, next + 64)
            for index in next..<end { chunk.writeBytes(flood.line(index)) }
            self.flood = (flood, end)
            let count = chunk.readableBytes
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.whenSuccess { [server] in server.server.withLockedValue { $0 }?.recordWritten(count) }
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(chunk))), promise: written)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { pump(context: context) }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        server.server.withLockedValue { $0 }?.recordClosed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
