import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A decorator that lets identical requests in flight at the same time share one call to the wrapped client.
///
/// Two requests are identical when they have the same method, base URL override, path, query items (in order), form
/// items, additional headers, body bytes, timeout, request and response types, and the same decoder and encoder
/// instances (or none). Anything that differs, one header or one query value, means a separate call: a response
/// never reaches a caller whose request differs. A streamed response (``ServerSentEvents``, ``JSONLines``,
/// ``ByteStream``) is never shared: it has one reader, so each caller gets a connection of its own. Only the methods in ``sharedMethods`` are shared (`GET` and `HEAD`
/// by default). This is not a cache: a request that arrives after the shared call finished starts a new one.
///
/// The shared call runs in a task of its own that inherits the first caller's priority and task-local values, so
/// interceptors must not pick credentials from task-locals: put them in the request's headers, which are part of
/// its identity.
///
/// Every waiter gets the same outcome, the value or the same error. Cancelling one waiter's task makes that waiter
/// throw `CancellationError` at once; the shared call goes on for the others and is cancelled only when every waiter
/// has cancelled.
public final class DeduplicatingClient: NetworkClientProtocol {
    /// The client that runs the shared calls.
    public let wrapped: any NetworkClientProtocol
    /// The methods whose requests are shared; requests with other methods go straight to ``wrapped``.
    public let sharedMethods: Set<HTTPMethod>

    private let table = Locked(CallTable())

    /// Creates a deduplicating client.
    /// - Parameters:
    ///   - client: The client that runs the shared calls.
    ///   - sharedMethods: The methods whose requests may be shared; `[.get, .head]` by default. Only add methods
    ///     whose requests are safe to send once on behalf of several callers.
    public init(wrapping client: any NetworkClientProtocol, sharing sharedMethods: Set<HTTPMethod> = [.get, .head]) {
        self.wrapped = client
        self.sharedMethods = sharedMethods
    }

    /// The number of distinct calls in flight: `0` once every call has finished.
    public var inFlightCount: Int {
        table.withLock { $0.calls.count }
    }

    /// Callers waiting for a call, including those about to join one.
    var waiterCount: Int {
        table.withLock { table in table.calls.values.reduce(table.pendingWaiters.count) { $0 + $1.waiters.count } }
    }

    /// Runs `networkRequest`, joining an identical call already in flight if there is one.
    ///
    /// - Throws: What the wrapped client throws for the shared call; `CancellationError` if this caller's task is
    ///   cancelled; ``NetworkClientError/encodingFailed(underlying:)`` if the body cannot be encoded.
    public func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        // A request that opts out (RequestOptions.allowsSharing) is sent on its own: so is one with interceptors, a
        // retry strategy or response interceptors of its own, whose initializers opt out, since two such requests
        // cannot be known to be the same. Nor is a request that never leaves the process shared, nor a stream, which
        // has one reader: each caller gets a connection of its own.
        guard sharedMethods.contains(networkRequest.method), networkRequest.options.allowsSharing,
            !networkRequest.isLocalQuery, !ResponseKinds.isStream(ResponseModel.self)
        else {
            return try await wrapped.run(networkRequest)
        }
        let key = try RequestKey(networkRequest)
        let waiterID = table.withLock { $0.addPendingWaiter() }
        let listener = SendReportListener.current
        let outcome = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                join(key: key, waiterID: waiterID, waiter: Waiter(continuation: continuation, listener: listener)) {
                    [wrapped] in
                    try await wrapped.run(networkRequest)
                }
            }
        } onCancel: {
            leave(key: key, waiterID: waiterID)
        }
        // The key includes the response type, so every waiter of a call expects this exact type.
        // A call with one waiter hands its response over as it is; a shared one says so in its metrics.
        guard let shared = outcome as? Shared else { return outcome as! NetworkResponse<ResponseModel> }
        var response = shared.value as! NetworkResponse<ResponseModel>
        response.metrics.shared = true
        return response
    }

    private func join(
        key: RequestKey, waiterID: UInt64, waiter: Waiter, call: @escaping @Sendable () async throws -> any Sendable
    ) {
        let joined = table.withLock { table -> Bool in
            // Absent when `leave` ran first: the caller was cancelled before it could join.
            guard table.pendingWaiters.remove(waiterID) != nil else { return false }
            if table.calls[key] != nil {
                table.calls[key]?.waiters[waiterID] = waiter
                return true
            }
            let callID = table.newID()
            // An unstructured task, so that the shared call outlives any one waiter; it inherits the first caller's
            // priority and task-local values. It holds `self` until it ends, so no waiter is ever left behind.
            // What the client at the bottom reports goes to every waiter's listeners in `finish`, not only to the
            // first caller's, which the task would inherit.
            let task = Task {
                let collector = SendReportListener(parent: nil)
                let result: Result<any Sendable, any Error>
                do {
                    result = .success(try await SendReportListener.$current.withValue(collector) { try await call() })
                } catch {
                    result = .failure(error)
                }
                self.finish(key: key, callID: callID, with: result, report: collector.report)
            }
            table.calls[key] = Call(id: callID, task: task, waiters: [waiterID: waiter])
            return true
        }
        if !joined { waiter.continuation.resume(throwing: CancellationError()) }
    }

    private func finish(
        key: RequestKey, callID: UInt64, with result: Result<any Sendable, any Error>, report: SendReport?
    ) {
        let waiters = table.withLock { table -> [Waiter] in
            // Gone if every waiter cancelled; a different id if a newer call for the same key started since.
            guard let call = table.calls.removeValue(forKey: key) else { return [] }
            guard call.id == callID else {
                table.calls[key] = call
                return []
            }
            return Array(call.waiters.values)
        }
        let delivered = waiters.count > 1 ? result.map { Shared(value: $0) as any Sendable } : result
        for waiter in waiters {
            if let report, let listener = waiter.listener { SendReportListener.deliver(report, to: listener) }
            waiter.continuation.resume(with: delivered)
        }
    }

    /// The value of a call that went to more than one waiter (``RequestMetrics/shared``).
    private struct Shared: Sendable {
        let value: any Sendable
    }

    private func leave(key: RequestKey, waiterID: UInt64) {
        let (waiter, abandonedCall) = table.withLock { table -> (Waiter?, Task<Void, Never>?) in
            if table.pendingWaiters.remove(waiterID) != nil { return (nil, nil) }  // `join` will resume it.
            guard let waiter = table.calls[key]?.waiters.removeValue(forKey: waiterID) else {
                return (nil, nil)  // Already resumed with the outcome.
            }
            guard table.calls[key]?.waiters.isEmpty == true else { return (waiter, nil) }
            return (waiter, table.calls.removeValue(forKey: key)?.task)
        }
        abandonedCall?.cancel()
        waiter?.continuation.resume(throwing: CancellationError())
    }
}

extension DeduplicatingClient {
    private struct Waiter: Sendable {
        let continuation: CheckedContinuation<any Sendable, any Error>
        /// The waiter's innermost report listener, which receives the shared call's report.
        let listener: SendReportListener?
    }

    private struct Call: Sendable {
        let id: UInt64
        let task: Task<Void, Never>
        var waiters: [UInt64: Waiter]
    }

    private struct CallTable: Sendable {
        var calls: [RequestKey: Call] = [:]
        /// Waiters between entering `run` and joining a call; `leave` removes one to say it was cancelled.
        var pendingWaiters: Set<UInt64> = []
        private var lastID: UInt64 = 0

        mutating func newID() -> UInt64 {
            lastID &+= 1
            return lastID
        }

        mutating func addPendingWaiter() -> UInt64 {
            let id = newID()
            pendingWaiters.insert(id)
            return id
        }
    }
}

/// Everything that makes two requests send the same bytes and expect the same type.
///
/// Hashed once, when made: the call table looks a key up several times per call.
struct RequestKey: Hashable, Sendable {
    /// The fields that identify a request; their synthesized `Hashable` is the one list of what counts.
    private struct Identity: Hashable, Sendable {
        let method: HTTPMethod
        let baseURL: URL?
        let path: String?
        let queryItems: [URLQueryItem]?
        let formItems: [URLFormItem]?
        let headers: [String: String]?
        let body: Data?
        /// The timeout's bits, so that a NaN timeout still equals itself.
        let timeoutBits: UInt64?
        let totalTimeoutBits: UInt64?
        let maximumResponseSize: Int?
        let acceptableStatusCodes: Set<Int>?
        let downloadDestination: URL?
        let requestType: ObjectIdentifier
        let responseType: ObjectIdentifier
        /// The request's own coders, by identity: another decoder may turn the same bytes into another value.
        let decoder: ObjectIdentifier?
        let encoder: ObjectIdentifier?
        /// The credential's scope: the same header under another scope may be sent elsewhere.
        let credentialScope: CredentialScope?
        /// The request's say: a request that opts out of the credential or of retries must not share a call that
        /// has them.
        let options: RequestOptions
    }

    private let identity: Identity
    private let hash: Int

    /// Encodes bodies of requests without an encoder of their own; sorted keys make equal values equal bytes.
    private static let bodyEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()

    init<RequestModel, ResponseModel>(_ request: NetworkRequest<RequestModel, ResponseModel>) throws {
        let body = try BodyKinds.kind(of: request)?.identity(with: request.encoder ?? Self.bodyEncoder)
        identity = Identity(
            method: request.method, baseURL: request.baseURL, path: request.path, queryItems: request.queryItems,
            formItems: request.formItems, headers: request.additionalHeaders, body: body,
            timeoutBits: request.timeoutInterval?.bitPattern, totalTimeoutBits: request.totalTimeout?.bitPattern,
            maximumResponseSize: request.maximumResponseSize, acceptableStatusCodes: request.acceptableStatusCodes,
            downloadDestination: request.downloadDestination,
            requestType: ObjectIdentifier(RequestModel.self),
            responseType: ObjectIdentifier(ResponseModel.self), decoder: request.decoder.map(ObjectIdentifier.init),
            encoder: request.encoder.map(ObjectIdentifier.init), credentialScope: request.credentialScope,
            options: request.options)
        hash = identity.hashValue
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }

    static func == (lhs: RequestKey, rhs: RequestKey) -> Bool {
        lhs.hash == rhs.hash && lhs.identity == rhs.identity
    }
}
