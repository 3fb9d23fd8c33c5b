import AsyncHTTPClient
import Courier
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Courier over AsyncHTTPClient: an ``HTTPTransport`` that sends each exchange with an `HTTPClient` (SwiftNIO), for
/// servers that need what `URLSession` on Linux cannot give: trust of a private CA per client, client certificates
/// (mTLS), proxies, HTTP/2 and TLS session reuse (see ``TLSOptions``).
///
/// Everything Courier promises holds over it as over `URLSession`, since it sits above the seam: the decorators, the
/// size limit and the total deadline, Courier's redirect rules (the `HTTPClient` follows none), downloads to files
/// and progress, cancellation, redaction and the outbox.
///
/// ```swift
/// let transport = try AsyncHTTPClientTransport(tls: TLSOptions(trustRoots: .only(pem: privateCAPEM)))
/// let client = NetworkClient(
///     configuration: NetworkConfiguration(transport: transport, baseURL: URL(string: "https://internal.example")!))
/// ```
///
/// **Who shuts the `HTTPClient` down.** A client the transport creates
/// (``init(tls:proxy:httpVersion:connectTimeout:eventLoopGroup:)``) is the transport's: ``shutdown()`` shuts it down,
/// and when the last reference to the transport goes (the ``NetworkConfiguration`` holding it is released) without
/// that call, the transport starts the shutdown itself. A client you pass (``init(client:)``) is yours: the transport
/// never shuts it down, and you do once the last request ended.
public final class AsyncHTTPClientTransport: HTTPTransport {
    /// The client that sends the requests.
    public let client: HTTPClient
    /// Whether the transport created ``client`` and shuts it down.
    public let ownsClient: Bool
    /// Set once ``shutdown()`` ran.
    private let shutDown = NIOLockedValueBox(false)
    /// The connect timeout, when the client connects to servers directly (no proxy): a chain that does not verify is
    /// then diagnosed (``CertificateDiagnosis``). `nil` when a proxy is in the way, or unknown.
    private let directConnectTimeout: TimeAmount?

    /// A transport over `client`, which stays yours: shut it down after the last request (the transport never does).
    ///
    /// The client must not follow redirects (Courier follows them, under its rules: which are followed, what they carry
    /// across origins, the budget): configure it with `redirectConfiguration: .disallow`. A client that follows
    /// redirects is refused here; ``configuration(tls:proxy:httpVersion:connectTimeout:)`` builds a fitting one.
    ///
    /// - Throws: ``AsyncHTTPClientTransportError/clientFollowsRedirects`` when `client` follows redirects.
    public init(client: HTTPClient) throws(AsyncHTTPClientTransportError) {
        if Self.followsRedirects(client) { throw .clientFollowsRedirects }
        self.client = client
        self.ownsClient = false
        self.directConnectTimeout = Self.directConnectTimeout(of: client)
    }

    /// A transport over an `HTTPClient` it creates from
    /// ``configuration(tls:proxy:httpVersion:connectTimeout:)`` and shuts down (``shutdown()``, or when the transport
    /// is released).
    ///
    /// - Parameters:
    ///   - tls: The trust roots and the client certificate; `TLSOptions()` (the system's trust store, no client
    ///     certificate) by default.
    ///   - proxy: An HTTP proxy (`.server(host:port:authorization:)`, CONNECT for HTTPS) or a SOCKS proxy; `nil` (a
    ///     direct connection) by default.
    ///   - httpVersion: `.automatic` (HTTP/2 when the server offers it over TLS, else HTTP/1.1) by default, or
    ///     `.http1Only`.
    ///   - connectTimeout: The limit on opening a connection; ``defaultConnectTimeout`` (10 s) by default. The limit on
    ///     the whole request is Courier's (`totalTimeout`).
    ///   - eventLoopGroup: The event loops the client runs on; NIO's shared singleton group by default.
    /// - Throws: ``AsyncHTTPClientTransportError/invalidPEM(_:)`` when a certificate or key in `tls` cannot be read.
    public convenience init(
        tls: TLSOptions = TLSOptions(), proxy: HTTPClient.Configuration.Proxy? = nil,
        httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic,
        connectTimeout: TimeAmount = AsyncHTTPClientTransport.defaultConnectTimeout,
        eventLoopGroup: any EventLoopGroup = HTTPClient.defaultEventLoopGroup
    ) throws(AsyncHTTPClientTransportError) {
        let configuration = try Self.configuration(
            tls: tls, proxy: proxy, httpVersion: httpVersion, connectTimeout: connectTimeout)
        self.init(
            owned: HTTPClient(eventLoopGroup: eventLoopGroup, configuration: configuration),
            directConnectTimeout: proxy == nil ? connectTimeout : nil)
    }

    private init(owned client: HTTPClient, directConnectTimeout: TimeAmount?) {
        self.client = client
        self.ownsClient = true
        self.directConnectTimeout = directConnectTimeout
    }

    deinit {
        // A client the transport created and nobody shut down: AsyncHTTPClient requires a shutdown before release, and
        // keeps itself alive until it completes.
        if ownsClient && !shutDown.withLockedValue({ $0 }) { client.shutdown(queue: .global()) { _ in } }
    }

    /// Whether `client` is configured to follow redirects. `HTTPClient` keeps its configuration internal, so it is
    /// read by reflection; when that finds nothing (a later AsyncHTTPClient laid out differently), the answer is
    /// `false` and ``send(_:)`` still fails an exchange whose response came through a redirect.
    static func followsRedirects(_ client: HTTPClient) -> Bool {
        guard let redirects = Mirror(reflecting: client).descendant("configuration", "redirectConfiguration") else {
            return false
        }
        return String(describing: redirects).contains("follow")
    }

    /// The connect timeout of `client` when it has no proxy, read by reflection as ``followsRedirects(_:)`` reads;
    /// `nil` when it has one or when reflection finds nothing.
    static func directConnectTimeout(of client: HTTPClient) -> TimeAmount? {
        guard let configuration = Mirror(reflecting: client).descendant("configuration"),
            let proxy = Mirror(reflecting: configuration).descendant("proxy"),
            Mirror(reflecting: proxy).displayStyle == .optional, Mirror(reflecting: proxy).children.isEmpty
        else { return nil }
        let connect = Mirror(reflecting: configuration).descendant("timeout", "connect", "some") as? TimeAmount
        return connect ?? defaultConnectTimeout
    }

    /// The limit on opening a connection in a client the transport creates: 10 seconds.
    public static let defaultConnectTimeout: TimeAmount = .seconds(10)

    /// The `HTTPClient.Configuration` Courier needs, with these options: no redirects followed (Courier follows them),
    /// responses decompressed without a limit of AsyncHTTPClient's (Courier's size limit counts the decompressed
    /// bytes), no retry of a failed connection (retries are `RetryingClient`'s), `tls`, `proxy` and `httpVersion`.
    /// Use it to create an `HTTPClient` of your own for ``init(client:)``.
    ///
    /// - Throws: ``AsyncHTTPClientTransportError/invalidPEM(_:)`` when a certificate or key in `tls` cannot be read.
    public static func configuration(
        tls: TLSOptions = TLSOptions(), proxy: HTTPClient.Configuration.Proxy? = nil,
        httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic,
        connectTimeout: TimeAmount = AsyncHTTPClientTransport.defaultConnectTimeout
    ) throws(AsyncHTTPClientTransportError) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: try tls.makeTLSConfiguration(),
            redirectConfiguration: .disallow,
            timeout: HTTPClient.Configuration.Timeout(connect: connectTimeout),
            connectionPool: HTTPClient.Configuration.ConnectionPool(),
            proxy: proxy,
            decompression: .enabled(limit: .none))
        configuration.httpVersion = httpVersion
        configuration.connectionPool.retryConnectionEstablishment = false
        return configuration
    }

    /// Shuts down the client if the transport created it; does nothing for a client you passed (shut it down
    /// yourself). Requests sent afterwards fail with `HTTPClientError.alreadyShutdown`.
    ///
    /// - Throws: What `HTTPClient.shutdown()` throws (it was already shut down).
    public func shutdown() async throws {
        guard ownsClient else { return }
        let first = shutDown.withLockedValue { done in
            defer { done = true }
            return !done
        }
        if first { try await client.shutdown() }
    }

    /// Sends `exchange.request` once with ``client`` and reports the response as it arrives. See ``HTTPTransport``.
    ///
    /// **Idle timeout.** The request's `timeoutInterval` (``NetworkRequest/timeoutInterval``, or what an interceptor
    /// set; `URLRequest`'s 60 seconds by default) bounds each silence: until the response head, and between two pieces
    /// of the body, as `URLSession` counts it. Each request body piece sent starts the silence again, and so does each
    /// response piece; the time the transport waits for a stream's reader does not count. When a silence lasts the
    /// whole interval, the request is cancelled (its connection closed) and the exchange fails with
    /// `URLError(.timedOut)`. A value that is not a positive number counts as 60 seconds.
    ///
    /// Before it reads each next piece of the body it waits for ``HTTPExchange/readyForMore()``: a streamed response
    /// (`ServerSentEvents`, `JSONLines`, `ByteStream`) whose reader is behind holds the server back through the
    /// connection, without holding a thread; when Courier needs no more, it stops reading and the request ends.
    ///
    /// **Certificates.** When the server's certificate chain does not verify, the transport opens one more connection
    /// to the server (unless a proxy is configured), reads the chain in a TLS handshake it aborts, and says why:
    /// `.serverCertificateHasBadDate` when a certificate of the chain has expired or is not yet valid, else
    /// `.serverCertificateHasUnknownRoot` (not issued by an authority the client trusts; self-signed; a missing
    /// intermediate). A certificate for another host is `.serverCertificateUntrusted`.
    ///
    /// - Throws: A `URLError` that says why the exchange failed (see ``AsyncHTTPClientTransportError/urlError(for:)``),
    ///   with a fixed description.
    public func send(_ exchange: HTTPExchange) async throws {
        // Courier stops an exchange (deadline, size limit) outside the caller's task: the work runs in a task that a
        // stop or the idle timeout cancels. AsyncHTTPClient cancels a request whose task is cancelled.
        let idle = IdleWatch(timeout: Self.idleTimeout(of: exchange.request))
        let work = Task { try await run(exchange, idle: idle) }
        idle.whenExpired { work.cancel() }
        exchange.whenStopped { work.cancel() }
        idle.start()
        defer { idle.end() }
        do {
            try await withTaskCancellationHandler {
                try await work.value
            } onCancel: {
                work.cancel()
            }
        } catch {
            if idle.expired {
                throw AsyncHTTPClientTransportError.urlError(.timedOut, AsyncHTTPClientTransportError.Text.timedOut)
            }
            throw await urlError(for: error, url: exchange.request.url)
        }
    }

    /// `error` as a `URLError`, a chain that did not verify diagnosed (see ``CertificateDiagnosis``).
    private func urlError(for error: any Error, url: URL?) async -> URLError {
        let failure = AsyncHTTPClientTransportError.urlError(for: error)
        guard AsyncHTTPClientTransportError.isUnverifiedChain(error), let timeout = directConnectTimeout,
            let url, url.scheme?.lowercased() == "https", var host = url.host, !host.isEmpty
        else { return failure }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        switch await CertificateDiagnosis.code(host: host, port: url.port ?? 443, timeout: timeout) {
        case .serverCertificateHasBadDate:
            return AsyncHTTPClientTransportError.urlError(
                .serverCertificateHasBadDate, AsyncHTTPClientTransportError.Text.badDate)
        case .serverCertificateHasUnknownRoot:
            return AsyncHTTPClientTransportError.urlError(
                .serverCertificateHasUnknownRoot, AsyncHTTPClientTransportError.Text.unknownRoot)
        default:
            return failure
        }
    }

    /// The idle timeout of `request`, in seconds: its `timeoutInterval`, at most Courier's
    /// `NetworkConfiguration.maximumTimeout`; 60 seconds (`URLRequest`'s default) when it is not a positive number.
    static func idleTimeout(of request: URLRequest) -> TimeInterval {
        let interval = request.timeoutInterval
        guard interval > 0 else { return 60 }  // NaN compares false.
        return min(interval, NetworkConfiguration.maximumTimeout)
    }

    /// Request bodies up to this size go out in one piece; larger ones in pieces of this size, each a sign of life
    /// for the idle timeout and a progress report: 64 KiB.
    static let bodyPieceSize = 64 * 1024

    private func run(_ exchange: HTTPExchange, idle: IdleWatch) async throws {
        let sent = exchange.request
        guard let url = sent.url else { throw URLError(.badURL) }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = NIOHTTP1.HTTPMethod(rawValue: sent.httpMethod ?? "GET")
        for (name, value) in sent.allHTTPHeaderFields ?? [:] { request.headers.add(name: name, value: value) }
        switch exchange.body {
        case .none:
            break
        case .data(let data) where data.count <= Self.bodyPieceSize:
            request.body = .bytes(ByteBuffer(data: data))
            exchange.sent(0, of: Int64(data.count))
        case .data(let data):
            let pieces = BodyPieces(exchange: exchange, idle: idle, source: .data(data))
            request.body = .stream(pieces, length: .known(Int64(data.count)))
        case .file(_, let byteCount):
            // Read with Courier's checks (a regular file of `byteCount` bytes; a stop ends the stream).
            let pieces = BodyPieces(exchange: exchange, idle: idle, source: .file(byteCount: byteCount))
            request.body = .stream(pieces, length: .known(byteCount))
        }
        let response = try await client.execute(request, deadline: .distantFuture)
        if case .data(let data) = exchange.body, data.count <= Self.bodyPieceSize {
            exchange.sent(Int64(data.count), of: Int64(data.count))
        }
        // A client that follows redirects answers with the last hop's response: Courier's rules were bypassed.
        if response.history.count > 1 { throw AsyncHTTPClientTransportError.clientFollowsRedirects }
        guard let head = Self.head(of: response, for: url) else { throw URLError(.badServerResponse) }
        idle.pause()
        guard exchange.receive(head) else { return }
        // AsyncHTTPClient reads the socket only while its body sequence is asked for more (it buffers one piece), so
        // waiting for Courier before each next piece holds the server back through this connection while a stream's
        // reader is behind: no thread is held meanwhile, and what is buffered stays bounded. The idle timeout counts
        // only the wait for the server.
        var pieces = response.body.makeAsyncIterator()
        while await exchange.readyForMore() {
            idle.resume()
            guard let buffer = try await pieces.next() else { return }
            idle.pause()
            guard exchange.receive(Data(buffer: buffer, byteTransferStrategy: .noCopy)) else { return }
        }
    }

    /// The response head as Foundation's type: repeated fields joined with `, `, as `URLSession` does.
    static func head(of response: HTTPClientResponse, for url: URL) -> HTTPURLResponse? {
        var fields: [String: String] = [:]
        var spelling: [String: String] = [:]  // The first spelling of each name, by its lowercase form.
        for (name, value) in response.headers {
            let key = name.lowercased()
            if let first = spelling[key], let earlier = fields[first] {
                fields[first] = earlier + ", " + value
            } else {
                spelling[key] = name
                fields[name] = value
            }
        }
        let version =
            response.version.major >= 2 ? "HTTP/2" : "HTTP/\(response.version.major).\(response.version.minor)"
        return HTTPURLResponse(
            url: url, statusCode: Int(response.status.code), httpVersion: version, headerFields: fields)
    }
}
