import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a ``NetworkClient`` needs to run requests: the base URL, the transport (a `URLSession` Courier drives, by
/// default), the default encoder and decoder, the interceptors and the limits.
///
/// Create one with ``init(sessionConfiguration:defaultDecoder:defaultEncoder:baseURL:sensitiveHeaders:)``, which is
/// `NetworkConfiguration(baseURL:)` with its defaults: a session that Courier creates and owns, the safe default. To
/// send through another engine (``InMemoryTransport`` in tests, AsyncHTTPClient on a server), use
/// ``init(transport:defaultDecoder:defaultEncoder:baseURL:sensitiveHeaders:)``. The other initializers are for code
/// written for MicroClient and for a `URLSession` you bring (<doc:MicroClientReleases>).
///
/// A class, so that one configuration can be shared and its settings changed after the client is created; every
/// property is safe to read and write from any thread, and the settings are read when each request starts.
public final class NetworkConfiguration: Sendable {
    /// The session that runs the requests.
    public let session: URLSession
    /// The decoder for responses whose request sets no decoder of its own.
    public let defaultDecoder: JSONDecoder
    /// The encoder for bodies whose request sets no encoder of its own.
    public let defaultEncoder: JSONEncoder
    /// The URL every request path is appended to, unless the request sets its own `baseURL`,
    /// e.g. `https://api.example.com/v1`.
    public let baseURL: URL
    /// The header fields, lowercased, whose values are secrets: never sent to another origin after a redirect and
    /// never written in descriptions. Always holds `authorization`, `cookie` and `proxy-authorization`.
    public let sensitiveHeaders: Set<String>

    /// The largest timeout, in seconds, Courier hands to URLSession: about 31.7 years. Larger request or session
    /// timeouts, infinity included, are lowered to it (corelibs Foundation traps on timeouts above about 9.2e15 s).
    public static let maximumTimeout: TimeInterval = 1_000_000_000

    let base: BaseURL
    private let settings = Locked(Settings())

    /// The interceptors and limits, read under one lock acquisition, as each request starts.
    var currentSettings: Settings { settings.withLock { $0 } }
    /// The engine that sends each request: Courier's driven `URLSession` by default, or the transport passed to
    /// ``init(transport:defaultDecoder:defaultEncoder:baseURL:sensitiveHeaders:)``. Courier's rules (size limit,
    /// deadline, redirects, credentials, redaction) hold above it.
    public let transport: any HTTPTransport
    /// A number no other configuration in the process has: the scope of what Courier keeps per configuration (the
    /// partial bytes of downloads).
    let serial: UInt64
    /// The idle timeout to set on requests that have none, when the session's own cannot be handed to URLSession as
    /// it is (a caller's session with a NaN, infinite, huge or fractional timeout on Linux); `nil` otherwise.
    let requestTimeout: TimeInterval?
    /// The session's `timeoutIntervalForResource`, where Courier enforces it itself (Linux); `nil` otherwise.
    let resourceTimeout: TimeInterval?

    /// What may change after the configuration is created; read once per request.
    struct Settings: Sendable {
        var interceptor: (@Sendable (URLRequest) -> URLRequest)?
        var asyncInterceptor: (@Sendable (URLRequest) async throws -> URLRequest)?
        var maximumResponseSize = NetworkConfiguration.defaultMaximumResponseSize
        var acceptableStatusCodes: Set<Int>?
        /// ``NetworkConfiguration/interceptors``: run in order after `asyncInterceptor`.
        var interceptors: [any NetworkRequestInterceptor] = []
        /// What an initializer at the edge asks for around every ``NetworkClient`` created on this configuration (see
        /// ``ClientAdaptation``); `nil` (always with Courier's own initializers) otherwise.
        var adaptation: (any ClientAdaptation)?
        /// ``NetworkConfiguration/responseCache``.
        var responseCache: ResponseCache?
    }

    /// Changes the settings under the lock (the initializers at the edge and ``interceptors``).
    func updateSettings(_ update: (inout Settings) -> Void) {
        settings.withLock { update(&$0) }
    }

    /// The most redirects one request follows before it fails with `URLError(.httpTooManyRedirects)`: 20, URLSession's
    /// own bound. Courier follows 301, 302, 303, 307 and 308 itself, above the transport (see <doc:ThePipeline>).
    public static let maximumRedirects = 20

    /// 100 MiB: the default of ``maximumResponseSize``.
    public static let defaultMaximumResponseSize = 100 * 1024 * 1024

    /// The HTTP cache the configuration's requests go through; `nil` (the default) caches nothing. Setting it affects
    /// the next request, including on clients already created. See ``ResponseCache`` and <doc:CachingResponses>.
    ///
    /// No double caching: every request the cache sends has the cache policy `.reloadIgnoringLocalCacheData`, so the
    /// session's `URLCache` never answers it, and a session Courier creates does not store its response in `URLCache`
    /// either (on Linux Courier's sessions have no `URLCache` at all). A session you pass to
    /// ``init(session:defaultDecoder:defaultEncoder:baseURL:sensitiveHeaders:)`` (`URLSession.shared` for example)
    /// may still store responses in its `URLCache`; they are never read back.
    public var responseCache: ResponseCache? {
        get { settings.withLock { $0.responseCache } }
        set { settings.withLock { $0.responseCache = newValue } }
    }

    /// The largest response body, in bytes after decompression, a request may receive in memory, unless the request
    /// sets its own ``NetworkRequest/maximumResponseSize``: 100 MiB (``defaultMaximumResponseSize``) by default.
    /// A larger body stops the transfer as soon as the limit is passed (a declared `Content-Length` above it stops it
    /// before the body is read) and the call throws ``NetworkClientError/responseTooLarge(limit:)``. It protects
    /// against compression bombs: a few megabytes of gzip can expand to gigabytes. Setting it affects the next request.
    public var maximumResponseSize: Int {
        get { settings.withLock { $0.maximumResponseSize } }
        set { settings.withLock { $0.maximumResponseSize = newValue } }
    }

    /// `200..<300`: the default of ``acceptableStatusCodes``, and of ``StubNetworkClient``'s.
    public static let defaultAcceptableStatusCodes = Set(Courier.defaultAcceptableStatusCodes)

    /// The status codes that count as success, unless the request sets its own
    /// ``NetworkRequest/acceptableStatusCodes``; ``defaultAcceptableStatusCodes`` (`200..<300`) by default. Any other
    /// status throws ``NetworkClientError/unacceptableStatusCode(statusCode:response:data:)``. Setting it affects the
    /// next request.
    public var acceptableStatusCodes: Set<Int> {
        get { settings.withLock { $0.acceptableStatusCodes } ?? Self.defaultAcceptableStatusCodes }
        set {
            settings.withLock {
                $0.acceptableStatusCodes = newValue == Self.defaultAcceptableStatusCodes ? nil : newValue
            }
        }
    }

    /// Creates a configuration that runs requests on a session you bring, for example `URLSession.shared`: the shape
    /// MicroClient code uses, and the way to use a session with a delegate of its own (on Apple platforms, for an
    /// authentication challenge or pinning). New code uses `NetworkConfiguration(baseURL:)`
    /// (``init(sessionConfiguration:defaultDecoder:defaultEncoder:baseURL:sensitiveHeaders:)``), whose session Courier
    /// creates and drives; see <doc:MicroClientReleases>.
    ///
    /// What Courier can guarantee depends on the session and the platform:
    /// - On Apple platforms Courier attaches a per-task delegate that hands it every redirect, so that
    ///   ``sensitiveHeaders`` stay off redirects to another origin and redirects to other schemes than http and https
    ///   are refused. Each body arrives whole, at the end: the size limit is checked then, upload progress is not
    ///   reported, and a streamed response fails with ``NetworkClientError/invalidRequest(reason:)``.
    /// - On Linux, a session **without a delegate** (`URLSession.shared` included) is not used directly: Courier
    ///   derives a session of its own from `session.configuration`, which shares its cookie storage, credential
    ///   storage, headers, proxy and connection settings by reference, but has no `URLCache` (corelibs traps when a
    ///   request is cancelled during a cache lookup). Requests then get every guarantee of
    ///   ``init(sessionConfiguration:defaultDecoder:defaultEncoder:baseURL:sensitiveHeaders:)``; ``session`` is still
    ///   the session you passed.
    /// - On Linux, a session **with a delegate of its own** is used as it is, and corelibs ignores per-task delegates
    ///   for redirects: credentials *do* follow cross-origin redirects, a 307/308 resends an empty body, the size
    ///   limit is checked only once the body is complete, and a `URLCache` in its configuration can trap the process
    ///   under cancellation. Courier still enforces the timeouts and the total deadline.
    /// - Parameters:
    ///   - session: The session, for example `URLSession.shared`. Leave it out to let Courier create a safe one
    ///     (``init(sessionConfiguration:defaultDecoder:defaultEncoder:baseURL:sensitiveHeaders:)``).
    ///   - defaultDecoder: The response decoder; a plain `JSONDecoder()` by default.
    ///   - defaultEncoder: The body encoder; a plain `JSONEncoder()` by default.
    ///   - baseURL: The URL request paths are appended to. It needs a scheme and a host, or every request fails
    ///     with ``NetworkClientError/invalidURL(reason:)``.
    ///   - sensitiveHeaders: More header names to treat as secrets, besides `Authorization`, `Cookie` and
    ///     `Proxy-Authorization`; empty by default.
    public convenience init(
        session: URLSession,
        defaultDecoder: JSONDecoder = JSONDecoder(),
        defaultEncoder: JSONEncoder = JSONEncoder(),
        baseURL: URL,
        sensitiveHeaders: Set<String> = []
    ) {
        #if canImport(FoundationNetworking)
        if session.delegate == nil {
            let (transport, resourceTimeout) = Self.drivenTransport(session.configuration)
            self.init(
                transport: transport, session: session, requestTimeout: nil, resourceTimeout: resourceTimeout,
                defaultDecoder: defaultDecoder, defaultEncoder: defaultEncoder, baseURL: baseURL,
                sensitiveHeaders: sensitiveHeaders)
            return
        }
        #endif
        let configuration = session.configuration
        let requestTimeout = transportTimeout(configuration.timeoutIntervalForRequest, fallback: 60)
        self.init(
            transport: CallerSessionTransport(session: session), session: session,
            requestTimeout: requestTimeout == configuration.timeoutIntervalForRequest ? nil : requestTimeout,
            resourceTimeout: enforcesResourceTimeout
                ? transportTimeout(configuration.timeoutIntervalForResource, fallback: 604_800) : nil,
            defaultDecoder: defaultDecoder, defaultEncoder: defaultEncoder, baseURL: baseURL,
            sensitiveHeaders: sensitiveHeaders)
    }

    /// Creates a configuration with a session that Courier creates from `sessionConfiguration`, owns, and
    /// invalidates when the configuration is released: the safe default, and what `NetworkConfiguration(baseURL:)`
    /// creates.
    ///
    /// On every platform, Linux included:
    /// - ``sensitiveHeaders`` set by the request or by the interceptors are removed from any redirect to another
    ///   origin (scheme, host or port), and a redirect to another scheme than http or https is refused with
    ///   ``NetworkClientError/redirectRefused(reason:)``;
    /// - a 307 or 308 redirect resends the same method and body;
    /// - the response body is held to ``maximumResponseSize`` as it arrives;
    /// - the session's `timeoutIntervalForResource` and each request's ``NetworkRequest/totalTimeout`` are enforced;
    /// - timeouts above ``maximumTimeout`` (infinity included) are lowered to it, and NaN or non-positive ones
    ///   replaced by URLSession's defaults (60 s idle, 7 days in all).
    ///
    /// On Linux the session has no `URLCache`: corelibs' cache makes cancelling a request unsafe (the process can
    /// trap), and costs time on every request.
    /// - Parameters:
    ///   - sessionConfiguration: The configuration of the session to create; `.default` by default (shared cookie and
    ///     credential storage), or for example `.ephemeral`.
    ///   - defaultDecoder: The response decoder; a plain `JSONDecoder()` by default.
    ///   - defaultEncoder: The body encoder; a plain `JSONEncoder()` by default.
    ///   - baseURL: The URL request paths are appended to.
    ///   - sensitiveHeaders: More header names to treat as secrets; empty by default.
    public convenience init(
        sessionConfiguration: URLSessionConfiguration = .default,
        defaultDecoder: JSONDecoder = JSONDecoder(),
        defaultEncoder: JSONEncoder = JSONEncoder(),
        baseURL: URL,
        sensitiveHeaders: Set<String> = []
    ) {
        let (transport, resourceTimeout) = Self.drivenTransport(sessionConfiguration)
        self.init(
            transport: transport, session: transport.session, requestTimeout: nil, resourceTimeout: resourceTimeout,
            defaultDecoder: defaultDecoder, defaultEncoder: defaultEncoder, baseURL: baseURL,
            sensitiveHeaders: sensitiveHeaders)
    }

    /// Creates a configuration whose requests go through `transport`, for example ``InMemoryTransport`` in tests or
    /// an adapter of another HTTP engine (see <doc:ThePipeline>). Every rule of Courier holds above it: interceptors,
    /// credentials, redirects (followed by Courier, up to ``maximumRedirects``), the size limit,
    /// ``NetworkRequest/totalTimeout``, downloads with resume, progress, the status check and decoding. ``session`` is
    /// `URLSession.shared`, unused.
    /// - Parameters:
    ///   - transport: The engine that sends each request.
    ///   - defaultDecoder: The response decoder; a plain `JSONDecoder()` by default.
    ///   - defaultEncoder: The body encoder; a plain `JSONEncoder()` by default.
    ///   - baseURL: The URL request paths are appended to.
    ///   - sensitiveHeaders: More header names to treat as secrets; empty by default.
    public convenience init(
        transport: some HTTPTransport,
        defaultDecoder: JSONDecoder = JSONDecoder(),
        defaultEncoder: JSONEncoder = JSONEncoder(),
        baseURL: URL,
        sensitiveHeaders: Set<String> = []
    ) {
        self.init(
            transport: transport, session: URLSession.shared, requestTimeout: nil, resourceTimeout: nil,
            defaultDecoder: defaultDecoder, defaultEncoder: defaultEncoder, baseURL: baseURL,
            sensitiveHeaders: sensitiveHeaders)
    }

    /// The initializer behind the public ones, which differ only in where the transport and its timeouts come from.
    private init(
        transport: any HTTPTransport, session: URLSession, requestTimeout: TimeInterval?,
        resourceTimeout: TimeInterval?, defaultDecoder: JSONDecoder, defaultEncoder: JSONEncoder, baseURL: URL,
        sensitiveHeaders: Set<String>
    ) {
        self.transport = transport
        self.session = session
        self.requestTimeout = requestTimeout
        self.resourceTimeout = resourceTimeout
        self.defaultDecoder = defaultDecoder
        self.defaultEncoder = defaultEncoder
        self.baseURL = baseURL
        self.sensitiveHeaders = Self.normalized(sensitiveHeaders)
        self.base = BaseURL(baseURL)
        self.serial = Self.nextSerial()
    }

    /// A session Courier creates from `configuration` and drives, with the resource timeout Courier must enforce.
    private static func drivenTransport(
        _ configuration: URLSessionConfiguration
    ) -> (DrivenSessionTransport, TimeInterval?) {
        let configuration = ownedSessionConfiguration(configuration)
        let delegate = SessionDelegate()
        let session = makeDrivenSession(configuration, delegate: delegate)
        return (
            DrivenSessionTransport(session: session, delegate: delegate),
            enforcesResourceTimeout ? configuration.timeoutIntervalForResource : nil
        )
    }

    deinit {
        ResponseKinds.configurationReleased(serial)
    }

    private static let serials = Locked<UInt64>(0)

    private static func nextSerial() -> UInt64 {
        serials.withLock { serial in
            serial += 1
            return serial
        }
    }

    private static func normalized(_ names: Set<String>) -> Set<String> {
        Redaction.alwaysSensitiveHeaders.union(names.map { $0.lowercased() })
    }
}

/// What an initializer at the edge of Courier (Compatibility/: another library's calling convention) asks for around
/// the clients of a configuration (``NetworkConfiguration/Settings/adaptation``), or around one request
/// (``NetworkRequest/adaptation``): retries, a logger, response interceptors. Courier's own API sets none.
///
/// The core only asks it for a client to run requests through: once, when a ``NetworkClient`` is created on an
/// adapted configuration; for an adapted request on a configuration that is not, at each call. The decorators are the
/// adaptation's, built there, around the client's ``NetworkClient/Pipeline``; an adapted request's own wishes are
/// read by them from the request.
protocol ClientAdaptation: Sendable {
    /// The client that runs requests in place of `pipeline`'s client: decorators around `pipeline`.
    func client(around pipeline: NetworkClient.Pipeline) -> any NetworkClientProtocol
}
