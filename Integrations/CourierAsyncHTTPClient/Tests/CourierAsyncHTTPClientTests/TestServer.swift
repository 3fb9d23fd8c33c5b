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

        static func text(_ text: String, status: HTTPResponseStatus = .ok) -> Response {
            Response(status: status, headers: [("Content-Type", "text/plain")], body: Array(text.utf8))
        }

        static func json(_ text: String) -> Response {
            Response(headers: [("Content-Type", "application/json")], body: Array(text.utf8))
        }

        static func redirect(to location: String, status: HTTPResponseStatus = .found) -> Response {
            Response(status: status, headers: [("Location", location)])
        }
    }

    /// Answers a request; `nil` never answers (a server that hangs).
    typealias Route = @Sendable (Request) -> Response?

    private let channel: any Channel
    private let state = NIOLockedValueBox<(requests: [Request], closed: Int)>(([], 0))
    private let closedSignal: AsyncStream<Void>.Continuation
    /// One element for each connection the server saw close.
    let closures: AsyncStream<Void>
    let port: Int
    let scheme: String

    /// Starts a server; `tls` makes it HTTPS.
    init(tls: TLSConfiguration? = nil, route: @escaping Route) async throws {
        let context = try tls.map { try NIOSSLContext(configuration: $0) }
        (closures, closedSignal) = AsyncStream.makeStream(of: Void.self)
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

    func stop() async throws {
        try await channel.close()
        closedSignal.finish()
    }

    fileprivate func record(_ request: Request) { state.withLockedValue { $0.requests.append(request) } }

    fileprivate func recordClosed() {
        state.withLockedValue { $0.closed += 1 }
        closedSignal.yield()
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
            if response.pieces <= 1 { headers.replaceOrAdd(name: "Content-Length", value: String(response.body.count)) }
            context.write(
                wrapOutboundOut(
                    .head(HTTPResponseHead(version: head.version, status: response.status, headers: headers))),
                promise: nil)
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

    func channelInactive(context: ChannelHandlerContext) {
        server.server.withLockedValue { $0 }?.recordClosed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
