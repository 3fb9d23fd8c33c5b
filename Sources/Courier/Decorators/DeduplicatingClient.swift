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
/// ``ByteStream``) is never shared: it has one reader, so each caller gets a connection of its own. Only the methods
/// in ``sharedMethods`` are shared (`GET` and `HEAD` by default). This is not a cache: a request that arrives after
/// the shared call finished starts a new one.
///
/// The first caller runs the call on its own task, as if there were no decorator (no task is created, no thread
/// hop), and identical callers that arrive meanwhile wait for its outcome. The call has that caller's priority and
/// task-local values, so interceptors must not pick credentials from task-locals: put them in the request's headers,
/// which are part of its identity.
///
/// Every waiter gets the same outcome, the value or the same error. Cancelling a waiter makes it throw
/// `CancellationError` at once; the call goes on for the others. Cancelling the first caller cancels the call it runs:
/// when others wait for it, the call is then sent again for them, in a task of its own (so a request may reach the
/// server twice in that case), and that call is cancelled only when every one of them has cancelled.
public final class DeduplicatingClient: NetworkClientProtocol {
    /// The client that runs the shared calls.
    public let wrapped: any NetworkClientProtocol
    /// The methods whose requests are shared; requests with other methods go straight to ``wrapped``.
    public let sharedMethods: Set<HTTPMethod>
    /// Whether ``sharedMethods`` has `GET`, and `HEAD`.
    private let sharesGet: Bool
    private let sharesHead: Bool

    private let table = Locked(CallTable())

    /// Creates a deduplicating client (``NetworkClientProtocol/deduplicated(sharing:)``).
    init(_ client: any NetworkClientProtocol, sharing sharedMethods: Set<HTTPMethod>) {
        self.wrapped = client
        self.sharedMethods = sharedMethods
        sharesGet = sharedMethods.contains(.get)
        sharesHead = sharedMethods.contains(.head)
    }

    /// The number of distinct calls in flight: `0` once every call has finished.
    public var inFlightCount: Int {
        table.withLock { $0.calls.count }
    }

    /// Callers waiting for a call, including those about to join one and the callers that run one.
    var waiterCount: Int {
        table.withLock { table in
            table.calls.values.reduce(table.pendingWaiters.count) { $0 + $1.waiters.count + ($1.ownerRuns ? 1 : 0) }
        }
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
        // cannot be known to be the same. Nor is a stream shared, which has one reader: each caller gets a connection
        // of its own.
        guard shares(networkRequest.method), networkRequest.options.allowsSharing,
            !ResponseKinds.isStream(ResponseModel.self)
        else {
            return try await wrapped.run(networkRequest)
        }
        let key = try RequestKey(networkRequest)
        while true {
            try Task.checkCancellation()
            let role = table.withLock { table -> Role in
                if table.calls[key] != nil { return .waiter(table.addPendingWaiter()) }
                let callID = table.newID()
                table.calls[key] = Call(id: callID)
                return .owner(callID)
            }
            switch role {
            case .owner(let callID):
                // The call runs here, on this caller's task, not in a function of its own: an async generic function
                // is one more frame and more task allocations for its generic values. The bottom client's report goes
                // to this caller's recorders as ever, and to one of this decorator's, for the waiters'.
                let recorder = SendRecorder()
                // No `Result` or optional of the response here: each would be one more generic type the runtime
                // looks up on every call, since this `run` is never specialized.
                var response: NetworkResponse<ResponseModel>
                do {
                    response = try await wrapped.run(networkRequest.reporting(to: recorder))
                } catch {
                    try ownerFailed(networkRequest, key: key, callID: callID, error: error, report: recorder.lastReport)
                }
                let waiters = table.withLock { $0.endCall(key, id: callID) }
                if !waiters.isEmpty {
                    deliver(.success(Shared(value: response)), report: recorder.lastReport, to: waiters)
                    response.metrics.shared = true
                }
                return response
            case .waiter(let waiterID):
                let recorders = Self.recorders(of: networkRequest)
                let outcome = try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { continuation in
                        join(
                            key: key, waiterID: waiterID,
                            waiter: Waiter(continuation: continuation, recorders: recorders))
                    }
                } onCancel: {
                    leave(key: key, waiterID: waiterID)
                }
                // The call ended between this caller's look and its joining: it runs one of its own.
                if outcome is CallEnded { continue }
                // The key includes the response type, so every waiter of a call expects this exact type; a shared
                // response says so in its metrics.
                var response = (outcome as! Shared).value as! NetworkResponse<ResponseModel>
                response.metrics.shared = true
                return response
            }
        }
    }

    /// Whether requests with `method` are shared: a `switch` for the usual two, since a `Set<HTTPMethod>` lookup hashes
    /// the method's name.
    private func shares(_ method: HTTPMethod) -> Bool {
        switch method {
        case .get: sharesGet
        case .head: sharesHead
        default: sharedMethods.contains(method)
        }
    }

    /// The call this caller ran failed with `error`: the waiters get the error, or, when this caller's cancellation
    /// ended the call while others wait, the call is sent again for them in a task of theirs. Always throws.
    private func ownerFailed<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>, key: RequestKey, callID: UInt64,
        error: any Error, report: SendReport?
    ) throws -> Never {
        let ownerCancelled = Task.isCancelled
        let waiters = table.withLock { table -> [Waiter]? in
            guard var call = table.calls[key], call.id == callID else { return [] }
            let waiters = Array(call.waiters.values)
            if ownerCancelled, !waiters.isEmpty {
                // This caller's cancellation ended the call: the others get it sent again, in a task of theirs.
                call.ownerRuns = false
                call.task = makeTask(for: networkRequest, key: key, callID: callID)
                table.calls[key] = call
                return nil
            }
            table.calls.removeValue(forKey: key)
            return waiters
        }
        guard let waiters else { throw CancellationError() }
        deliver(.failure(error), report: report, to: waiters)
        throw error
    }

    /// Hands a call's outcome, and what the client at the bottom reported, to the callers that waited for it.
    private func deliver(_ outcome: Result<any Sendable, any Error>, report: SendReport?, to waiters: [Waiter]) {
        for waiter in waiters {
            if let report, let recorders = waiter.recorders { recorders(report) }
            waiter.continuation.resume(with: outcome)
        }
    }

    /// What hands a shared call's report to the recorders `networkRequest` carries; `nil` when it carries none.
    private static func recorders<RequestModel, ResponseModel>(
        of networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) -> (@Sendable (SendReport) -> Void)? {
        guard networkRequest.wantsSendReport else { return nil }
        return { report in networkRequest.report(report) }
    }

    /// A task that runs the call for its waiters, once the caller that ran it was cancelled. What the client at the
    /// bottom reports goes to every waiter's recorders in `finish` (and to the cancelled caller's, which no longer
    /// read theirs).
    private func makeTask<RequestModel, ResponseModel>(
        for networkRequest: NetworkRequest<RequestModel, ResponseModel>, key: RequestKey, callID: UInt64
    ) -> Task<Void, Never> {
        let recorder = SendRecorder()
        let request = networkRequest.reporting(to: recorder)
        return Task { [wrapped] in
            let result: Result<any Sendable, any Error>
            do {
                result = .success(try await wrapped.run(request))
            } catch {
                result = .failure(error)
            }
            self.finish(key: key, callID: callID, with: result, report: recorder.lastReport)
        }
    }

    /// Attaches a waiter to the call it saw, or tells it the call ended meanwhile, or that it was cancelled.
    private func join(key: RequestKey, waiterID: UInt64, waiter: Waiter) {
        let joined = table.withLock { table -> Bool? in
            // Absent when `leave` ran first: the caller was cancelled before it could join.
            guard table.pendingWaiters.remove(waiterID) != nil else { return nil }
            guard table.calls[key] != nil else { return false }
            table.calls[key]?.waiters[waiterID] = waiter
            return true
        }
        switch joined {
        case true?: break
        case false?: waiter.continuation.resume(returning: CallEnded())
        case nil: waiter.continuation.resume(throwing: CancellationError())
        }
    }

    /// A call run by a task of its own ended: every waiter gets its outcome.
    private func finish(
        key: RequestKey, callID: UInt64, with result: Result<any Sendable, any Error>, report: SendReport?
    ) {
        let waiters = table.withLock { $0.endCall(key, id: callID) }
        deliver(result.map { Shared(value: $0) }, report: report, to: waiters)
    }

    /// A waiter was cancelled: it leaves at once; a call run by a task of its own is cancelled when nobody waits.
    private func leave(key: RequestKey, waiterID: UInt64) {
        let (waiter, abandonedCall) = table.withLock { table -> (Waiter?, Task<Void, Never>?) in
            if table.pendingWaiters.remove(waiterID) != nil { return (nil, nil) }  // `join` will resume it.
            guard let waiter = table.calls[key]?.waiters.removeValue(forKey: waiterID) else {
                return (nil, nil)  // Already resumed with the outcome.
            }
            guard let call = table.calls[key], call.waiters.isEmpty, !call.ownerRuns else { return (waiter, nil) }
            table.calls.removeValue(forKey: key)
            return (waiter, call.task)
        }
        abandonedCall?.cancel()
        waiter?.continuation.resume(throwing: CancellationError())
    }

    /// The value of a call, handed to a waiter.
    private struct Shared: Sendable {
        let value: any Sendable
    }

    /// Tells a waiter that the call it saw ended before it joined.
    private struct CallEnded: Sendable {}
}

extension DeduplicatingClient {
    /// What a caller does for its request: run the call, or wait for the one in flight.
    private enum Role {
        case owner(UInt64)
        case waiter(UInt64)
    }

    private struct Waiter: Sendable {
        let continuation: CheckedContinuation<any Sendable, any Error>
        /// Hands the shared call's report to the recorders the waiter's request carries; `nil` when it carries none.
        let recorders: (@Sendable (SendReport) -> Void)?
    }

    private struct Call: Sendable {
        let id: UInt64
        /// Whether the caller that started the call still runs it on its own task.
        var ownerRuns = true
        /// The task that runs the call once that caller was cancelled while others waited.
        var task: Task<Void, Never>?
        /// The callers waiting for the call's outcome.
        var waiters: [UInt64: Waiter] = [:]

        init(id: UInt64) {
            self.id = id
        }
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

        /// Removes the call `id` under `key` and returns its waiters; none when the entry is gone (every waiter of a
        /// call run by a task of its own cancelled) or belongs to a newer call for the same key. One lookup: the
        /// caller's own key is found by identity.
        mutating func endCall(_ key: RequestKey, id: UInt64) -> [Waiter] {
            guard let call = calls.removeValue(forKey: key) else { return [] }
            guard call.id == id else {
                calls[key] = call
                return []
            }
            return Array(call.waiters.values)
        }
    }
}

/// Everything that makes two requests send the same bytes and expect the same type.
///
/// Hashed once, when made: the call table looks a key up several times per call. A class, so that a key is copied
/// with one reference count and the call's own key is found in the table by identity, without comparing its fields.
final class RequestKey: Hashable, Sendable {
    /// The fields that identify a request; their synthesized `==` is the one list of what counts.
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
        /// The origin a replaced URL continues from: the same request from elsewhere may go without its secrets.
        let replacedFrom: ReplacedOrigin?
        /// The request's say: a request that opts out of the credential or of retries must not share a call that
        /// has them.
        let options: RequestOptions

        /// The fields that tell requests in flight apart, not all of them: `==` compares every field, and two
        /// requests that differ only in the others (a header, a timeout, `GET` or `HEAD`) share a bucket, which
        /// costs a comparison and nothing else. Hashing every field (a header dictionary hashes each entry on its
        /// own) cost more than any collision would.
        func hash(into hasher: inout Hasher) {
            hasher.combine(path)
            hasher.combine(queryItems)
            hasher.combine(body)
            hasher.combine(responseType)
        }
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
            replacedFrom: request.replacedFrom, options: request.options)
        hash = identity.hashValue
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }

    static func == (lhs: RequestKey, rhs: RequestKey) -> Bool {
        lhs === rhs || (lhs.hash == rhs.hash && lhs.identity == rhs.identity)
    }
}
