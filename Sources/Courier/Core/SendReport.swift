import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the client at the bottom of a stack sent for one attempt of a request: the request as it went out, which of
/// its header fields are secrets, and where it went.
///
/// A decorator gets it by running the request it forwards with ``NetworkClientProtocol/runReporting(_:)``: the client
/// at the bottom (``NetworkClient``, ``StubNetworkClient``) reports what it sends, before it sends, to every decorator
/// above it that asked. The report reaches a decorator through any decorator between it and the bottom that forwards
/// the request it was given, changed or not, in the same task or another; ``DeduplicatingClient`` hands the report of
/// a shared call to each caller. Courier's logger redacts with it and ``AuthenticatingClient`` reads
/// ``credentialWithheld`` from it; yours can do the same:
///
/// ```swift
/// let (result, sent) = await wrapped.runReporting(networkRequest)
/// // `sent` is nil when the client at the bottom reported nothing.
/// return try result.get()
/// ```
///
/// A report is made only for a request whose run asked for one, so a stack without one pays nothing for it.
public final class SendReport: Sendable {
    /// The request handed to the transport: its URL, method and every header field after the interceptors, with a
    /// credential applied or withheld, and its `httpBody` when the body was in memory. `nil` when the call failed
    /// before the request was built or intercepted (nothing was sent), or when the client at the bottom does not
    /// build one (``StubNetworkClient``).
    public let request: URLRequest?
    /// The base URL the request was built on: the request's own ``NetworkRequest/baseURL``, or the configuration's.
    public let baseURL: URL?
    /// Whether the credential of an ``AuthenticatingClient`` was removed from the request because it went to another
    /// origin than the configured base URL's or those the authenticating client names: the server never saw it.
    public let credentialWithheld: Bool

    /// The header fields told when there is no ``request``.
    private let givenHeaders: [String: String]?
    private let givenBody: Data?
    /// Lowercased: the configuration's sensitive header names (or the ones given to the public initializer).
    let configuredSensitiveHeaders: Set<String>
    /// Lowercased: the credential's header fields; kept apart so that the union is made only when it is read.
    let credentialHeaders: Set<String>
    /// ``baseURL`` as Courier parses a base URL.
    let base: BaseURL?
    /// Identifies ``base`` when it is a configuration's (the configuration's identity), so that a logger redacts a
    /// client's base URL once rather than on every line.
    let baseKey: ObjectIdentifier?

    /// Creates a report, for a client at the bottom of a stack of your own (a test double), so that decorators above
    /// it redact and decide as they do over ``NetworkClient``.
    /// - Parameters:
    ///   - request: The request as sent; `nil` when none was built.
    ///   - headers: The header fields sent; `nil` (the default) takes `request`'s.
    ///   - body: The body sent when it was in memory; `nil` (the default) takes `request`'s `httpBody`.
    ///   - sensitiveHeaders: The names of the header fields whose values are secrets, in any case; `Authorization`,
    ///     `Cookie` and `Proxy-Authorization` are always added. Empty by default.
    ///   - baseURL: The base URL the request was built on; `nil` by default.
    ///   - credentialWithheld: Whether a credential was removed because the request went to another origin; `false`
    ///     by default.
    public convenience init(
        request: URLRequest?, headers: [String: String]? = nil, body: Data? = nil, sensitiveHeaders: Set<String> = [],
        baseURL: URL? = nil, credentialWithheld: Bool = false
    ) {
        self.init(
            request: request, headers: headers, body: body,
            configuredSensitiveHeaders: Redaction.alwaysSensitiveHeaders.union(
                sensitiveHeaders.map { $0.lowercased() }),
            base: baseURL.map(BaseURL.init), credentialWithheld: credentialWithheld)
    }

    init(
        request: URLRequest?, headers: [String: String]? = nil, body: Data? = nil,
        configuredSensitiveHeaders: Set<String>, credentialHeaders: Set<String> = [], base: BaseURL?,
        baseKey: ObjectIdentifier? = nil, credentialWithheld: Bool = false
    ) {
        self.request = request
        self.givenHeaders = headers
        self.givenBody = body
        self.configuredSensitiveHeaders = configuredSensitiveHeaders
        self.credentialHeaders = credentialHeaders
        self.base = base
        self.baseURL = base?.url
        self.baseKey = baseKey
        self.credentialWithheld = credentialWithheld
    }

    /// The header fields sent: ``request``'s (after the interceptors and the credential), or, when nothing was sent,
    /// the request's own. Each read builds the dictionary anew: read it once.
    public var headers: [String: String] { givenHeaders ?? request?.allHTTPHeaderFields ?? [:] }

    /// The body sent, when it was in memory; `nil` for none or for a body streamed from a file.
    public var body: Data? { givenBody ?? request?.httpBody }

    /// The lowercased names of the header fields whose values are secrets: `authorization`, `cookie`,
    /// `proxy-authorization`, the configuration's ``NetworkConfiguration/sensitiveHeaders``, and the fields of an
    /// ``AuthenticatingClient``'s credential. Redact these wherever you write what was sent.
    public var sensitiveHeaders: Set<String> {
        credentialHeaders.isEmpty ? configuredSensitiveHeaders : configuredSensitiveHeaders.union(credentialHeaders)
    }
}

/// Keeps the ``SendReport`` of the last attempt of the requests that carry it (``NetworkRequest/reporting(to:)``):
/// what ``NetworkClientProtocol/runReporting(_:)`` returns, and what Courier's decorators read.
final class SendRecorder: Sendable {
    private let received = Locked<SendReport?>(nil)

    init() {}

    /// The report of the last attempt; `nil` when none arrived.
    var lastReport: SendReport? {
        received.withLock { $0 }
    }

    fileprivate func receive(_ report: SendReport) {
        received.withLock { $0 = report }
    }
}

/// The recorders a request carries, the last one put on first: a list whose nodes copies of the request share.
final class SendRecorders: Sendable {
    let recorder: SendRecorder
    let next: SendRecorders?

    init(_ recorder: SendRecorder, next: SendRecorders?) {
        self.recorder = recorder
        self.next = next
    }
}

extension NetworkRequest {
    /// This request, reporting what the client at the bottom sends for it to `recorder` as well as to the recorders it
    /// already carries (those of the decorators above): the mechanism of
    /// ``NetworkClientProtocol/runReporting(_:)``.
    ///
    /// The recorders are not part of what the request sends or of its identity: ``DeduplicatingClient`` still shares
    /// a call between requests that carry different ones, and hands each caller's recorders the shared call's
    /// report.
    func reporting(to recorder: SendRecorder) -> NetworkRequest {
        var copy = self
        copy.sendRecorders = SendRecorders(recorder, next: sendRecorders)
        return copy
    }

    /// Whether a decorator above wants the ``SendReport`` of this request: a client at the bottom of a stack may skip
    /// building one when not.
    public var wantsSendReport: Bool { sendRecorders != nil }

    /// Hands `report` to every decorator above that asked for it (``NetworkClientProtocol/runReporting(_:)``). For a client at the bottom of a stack: ``NetworkClient``
    /// and ``StubNetworkClient`` call it before they send; a test double of your own can call it too, so that the
    /// decorators above it redact what it was sent as they do over ``NetworkClient``.
    /// - Parameter report: What is sent for this attempt.
    public func report(_ report: SendReport) {
        var next = sendRecorders
        while let node = next {
            node.recorder.receive(report)
            next = node.next
        }
    }
}

extension NetworkClientProtocol {
    /// Runs `networkRequest` like ``run(_:)`` and returns its outcome with the ``SendReport`` of its last attempt:
    /// what the client at the bottom of the stack sent (the `URLRequest` after the interceptors and the credential,
    /// the names of the header fields that are secrets, the base URL, whether a credential was withheld). For a
    /// decorator that logs, audits or decides by what was sent:
    ///
    /// ```swift
    /// let (result, sent) = await wrapped.runReporting(networkRequest)
    /// note(sent, try? result.get().statusCode)
    /// return try result.get()
    /// ```
    ///
    /// The report is the last attempt's (under a ``RetryingClient``, the one whose outcome `result` is); for a call
    /// shared by ``DeduplicatingClient``, the shared call's. It is taken in every decorator order, through any
    /// decorator that forwards the request it was given, in the same task or another.
    /// - Parameter networkRequest: The request to run.
    /// - Returns: `result`, the response or the error ``run(_:)`` threw, unchanged (`CancellationError` included);
    ///   `sent`, the report of the last attempt, `nil` when none arrived: the client at the bottom reports nothing (a
    ///   test double of your own that does not call ``NetworkRequest/report(_:)``), or the call ended before it
    ///   reached the bottom (a cancellation while it waited in a queue, an error of a decorator).
    public func runReporting<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async -> (result: Result<NetworkResponse<ResponseModel>, any Error>, sent: SendReport?) {
        let recorder = SendRecorder()
        do {
            let response = try await run(networkRequest.reporting(to: recorder))
            return (.success(response), recorder.lastReport)
        } catch {
            return (.failure(error), recorder.lastReport)
        }
    }
}
