import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A decorator that puts an ``Authenticator``'s credential on each request and, when the server rejects it (401),
/// renews it once and sends the request again.
///
/// - **Single flight.** However many requests are rejected with the same credential at the same time, exactly one
///   renewal runs and all of them wait for it, then are sent again with the renewed credential. A request sent with
///   a credential older than the latest renewed one is sent again with the latest, without another renewal. A
///   request that starts while a renewal runs waits for it rather than sending a credential about to be replaced.
/// - **Once.** A request is sent again at most once: a second rejection is its outcome (the 401 error, unchanged).
/// - **Failure.** A renewal that throws fails every request waiting for it with that error, and every request that
///   was sent with the same credential before it failed; a request that starts after the failure renews anew.
/// - **No storm.** More than ``maximumRefreshes`` renewals (3 by default) within ``refreshWindow`` seconds (60 by
///   default) fail with ``AuthenticationError/tooManyRefreshes(limit:window:)`` instead of renewing again.
/// - **Only where it belongs.** The credential goes only to requests sent to the configured base URL's origin (no
///   ``NetworkRequest/baseURL`` override, or one with the same scheme, host and port) and to the origins in
///   ``additionalOrigins``, and never follows a redirect to another origin. The client at the bottom of the stack,
///   which knows the configured base URL, enforces it, so it holds wherever this decorator sits in a stack. A request
///   whose credential was withheld for that reason is not renewed on a `401`.
/// - **The request's say.** A request with ``RequestOptions/sendsCredential`` `false` (a sign-in, a public
///   endpoint) is passed on untouched.
/// - **Cancellation and deadline.** A request waiting for a renewal stops waiting when its task is cancelled
///   (`CancellationError`) or its ``NetworkRequest/totalTimeout`` passes (``NetworkClientError/transportFailed(_:)``
///   with `URLError.timedOut`, the error a transfer's deadline throws); the renewal goes on for the others.
///
/// The decorator behind ``NetworkClientProtocol/authenticated(by:alsoFor:maximumRefreshes:refreshWindow:)``.
final class AuthenticatingDecorator<Authenticator: Courier.Authenticator>: NetworkClientProtocol {
    /// The client that runs the requests.
    public let wrapped: any NetworkClientProtocol
    /// Supplies, applies and renews the credential.
    public let authenticator: Authenticator
    /// Origins (`scheme://host:port`) that receive the credential besides the configured base URL's; empty by
    /// default.
    public let additionalOrigins: Set<String>
    /// The most renewals allowed within ``refreshWindow``; `3` by default.
    public let maximumRefreshes: Int
    /// The window, in seconds, over which ``maximumRefreshes`` is counted; `60` by default.
    public let refreshWindow: TimeInterval

    // The state holds credentials as `any Sendable` (always an `Authenticator.Credential`): a type nested in this
    // generic class would make every call look up its metadata in the runtime, since a decorator's `run` is never
    // specialized.
    private let state = Locked(AuthenticationState())
    /// The scope of the last credential applied, and the fields it set: the same for every request until it changes.
    private let lastScope = Locked<CredentialScopeMemo?>(nil)

    /// Creates an authenticating client.
    /// - Parameters:
    ///   - client: The client that runs the requests.
    ///   - authenticator: Supplies, applies and renews the credential.
    ///   - additionalOrigins: Other base URLs whose origin (scheme, host, port) may receive the credential when a
    ///     request overrides its `baseURL` with them; empty by default.
    ///   - maximumRefreshes: The most renewals within `refreshWindow`; `3` by default.
    ///   - refreshWindow: The window in seconds; `60` by default.
    public init(
        wrapping client: any NetworkClientProtocol, authenticator: Authenticator, additionalOrigins: [URL] = [],
        maximumRefreshes: Int = 3, refreshWindow: TimeInterval = 60
    ) {
        self.wrapped = client
        self.authenticator = authenticator
        self.additionalOrigins = Set(additionalOrigins.compactMap(Origin.of))
        self.maximumRefreshes = max(1, maximumRefreshes)
        self.refreshWindow = refreshWindow
    }

    /// Runs `networkRequest` with the credential, and once more with a renewed one if the server rejects it.
    ///
    /// - Throws: What the wrapped client throws (a second 401 included, unchanged); what
    ///   ``Authenticator/credential()`` or ``Authenticator/refresh(rejected:)`` throw, unchanged;
    ///   ``AuthenticationError/tooManyRefreshes(limit:window:)`` in a refresh storm; `CancellationError` when the
    ///   caller's task is cancelled, also while it waits for a renewal; ``NetworkClientError/transportFailed(_:)``
    ///   with `URLError.timedOut` when the request's ``NetworkRequest/totalTimeout`` passes while it waits for one.
    public func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        guard networkRequest.options.sendsCredential else {
            return try await wrapped.run(networkRequest)
        }
        let deadline = networkRequest.totalTimeout.map {
            DispatchTime.now() + min($0, NetworkConfiguration.maximumTimeout)
        }
        let (generation, failures, renewal) = state.withLock { ($0.generation, $0.failures, $0.renewal) }
        let credential: Authenticator.Credential
        let sentGeneration: Int
        if let renewal {
            credential = try await renewal.outcome.value(until: deadline) as! Authenticator.Credential
            sentGeneration = renewal.generation + 1
        } else {
            credential = try await authenticator.credential()
            sentGeneration = generation
        }
        // Only a request with its own base URL may go to another origin, where the client at the bottom withholds the
        // credential (and says so in its report): record the report only then, since recording costs every request.
        // That path and the renewal are functions of their own: the generic values they hold would make this
        // function's frame look up their types on every call.
        guard networkRequest.baseURL == nil else {
            return try await runRecording(
                networkRequest, credential: credential, sentGeneration: sentGeneration, failures: failures,
                deadline: deadline)
        }
        do {
            return try await wrapped.run(authorized(networkRequest, with: credential))
        } catch let error where authenticator.isRejection(error) {
            return try await runRenewed(
                networkRequest, rejected: credential, sentGeneration: sentGeneration, failures: failures,
                deadline: deadline)
        }
    }

    /// Runs a request with a base URL of its own, recording whether the credential was withheld from another origin.
    private func runRecording<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>, credential: Authenticator.Credential,
        sentGeneration: Int, failures: Int, deadline: DispatchTime?
    ) async throws -> NetworkResponse<ResponseModel> {
        let (result, sent) = await wrapped.runReporting(authorized(networkRequest, with: credential))
        switch result {
        case .success(let response):
            return response
        case .failure(let error) where authenticator.isRejection(error) && sent?.credentialWithheld != true:
            // A credential withheld from another origin was never seen by the server: nothing to renew.
            return try await runRenewed(
                networkRequest, rejected: credential, sentGeneration: sentGeneration, failures: failures,
                deadline: deadline)
        case .failure(let error):
            throw error
        }
    }

    /// The server rejected `credential`: renews it (once for every request rejected with it) and sends again.
    private func runRenewed<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>, rejected credential: Authenticator.Credential,
        sentGeneration: Int, failures: Int, deadline: DispatchTime?
    ) async throws -> NetworkResponse<ResponseModel> {
        let renewed = try await renewedCredential(
            rejected: credential, sentGeneration: sentGeneration, failuresBeforeSending: failures,
            deadline: deadline)
        try Task.checkCancellation()
        var retried = try await wrapped.run(authorized(networkRequest, with: renewed))
        retried.metrics.attempts += 1  // The rejected request counts.
        return retried
    }

    /// `request` with the credential applied, and its fields named in the request's ``CredentialScope``.
    private func authorized<RequestModel, ResponseModel>(
        _ request: NetworkRequest<RequestModel, ResponseModel>, with credential: Authenticator.Credential
    ) -> NetworkRequest<RequestModel, ResponseModel> {
        var request = request
        var headers = request.additionalHeaders ?? [:]
        authenticator.apply(credential, to: &headers)
        request.additionalHeaders = headers
        request.credentialScope = scope(of: credential)
        return request
    }

    /// The fields `credential` sets, found by applying it to no fields, with the allowed origins; kept for the last
    /// credential.
    private func scope(of credential: Authenticator.Credential) -> CredentialScope {
        // Unwrapped, not compared as optionals: `Optional`'s `==` pairs its operands in a tuple, a generic type the
        // runtime looks up on every call here. And cast with `as!`: `as?` makes an `Optional<Credential>`, another
        // lookup; the memo only ever holds this client's credentials.
        if let last = lastScope.withLock({ $0 }), last.credential as! Authenticator.Credential == credential {
            return last.scope
        }
        var fields: [String: String] = [:]
        authenticator.apply(credential, to: &fields)
        let scope = CredentialScope(
            headerNames: Set(fields.keys.map { $0.lowercased() }), additionalOrigins: additionalOrigins)
        lastScope.withLock { $0 = CredentialScopeMemo(credential: credential, scope: scope) }
        return scope
    }

    /// The credential to send again with: the latest renewed one if `rejected` is older, else the outcome of the one
    /// renewal for it (started here or already running). A request sent with `rejected` before a renewal of
    /// `rejected` failed fails with that renewal's error, like the requests that waited for it: whether its 401
    /// arrived a moment before or after the failure is chance, and must not start a second renewal.
    private func renewedCredential(
        rejected: Authenticator.Credential, sentGeneration: Int, failuresBeforeSending: Int, deadline: DispatchTime?
    ) async throws -> Authenticator.Credential {
        let next = try state.withLock { table -> RenewalStep in
            if let renewal = table.renewal { return .wait(renewal.outcome) }
            if table.generation > sentGeneration, let latest = table.latest as? Authenticator.Credential,
                latest != rejected
            {
                return .use(latest)
            }
            if table.failures > failuresBeforeSending, let failure = table.lastFailure,
                failure.rejected as? Authenticator.Credential == rejected
            {
                throw failure.error
            }
            let now = Date()
            table.recentRenewals.removeAll { now.timeIntervalSince($0) > refreshWindow }
            guard table.recentRenewals.count < maximumRefreshes else {
                throw AuthenticationError.tooManyRefreshes(limit: maximumRefreshes, window: refreshWindow)
            }
            table.recentRenewals.append(now)
            let generation = table.generation
            let outcome = SharedOutcome<any Sendable>()
            // Unstructured, so that no waiter's cancellation cancels the renewal for the others. It ends by clearing
            // itself from `state` (it cannot take the lock before this closure has stored it in `table`), then
            // hands its outcome to the waiters.
            Task { [authenticator, state] in
                do {
                    let renewed = try await authenticator.refresh(rejected: rejected)
                    state.withLock { state in
                        state.generation = generation + 1
                        state.latest = renewed
                        state.renewal = nil
                    }
                    outcome.finish(.success(renewed))
                } catch {
                    state.withLock { state in
                        state.renewal = nil
                        state.failures += 1
                        state.lastFailure = AuthenticationState.Failure(rejected: rejected, error: error)
                    }
                    outcome.finish(.failure(error))
                }
            }
            table.renewal = AuthenticationState.Renewal(generation: generation, outcome: outcome)
            return .wait(outcome)
        }
        switch next {
        case .use(let credential): return credential as! Authenticator.Credential
        case .wait(let outcome): return try await outcome.value(until: deadline) as! Authenticator.Credential
        }
    }
}

/// An ``AuthenticatingClient``'s renewals. Every credential in it is the client's `Authenticator.Credential`, held as
/// `any Sendable` so that the type is not generic (see the client's `state`).
private struct AuthenticationState: Sendable {
    struct Renewal: Sendable {
        /// The generation of the credential being renewed.
        let generation: Int
        let outcome: SharedOutcome<any Sendable>
    }

    struct Failure: Sendable {
        let rejected: any Sendable
        let error: any Error
    }

    /// Incremented by each successful renewal.
    var generation = 0
    /// The credential of the last successful renewal.
    var latest: (any Sendable)?
    /// The renewal in progress, if any.
    var renewal: Renewal?
    /// Incremented by each failed renewal.
    var failures = 0
    /// The last failed renewal: what it renewed and what it threw.
    var lastFailure: Failure?
    /// When the renewals within the window started.
    var recentRenewals: [Date] = []
}

/// What a rejected request does next: send again with a credential renewed meanwhile, or wait for the renewal.
private enum RenewalStep {
    case use(any Sendable)
    case wait(SharedOutcome<any Sendable>)
}

/// The last credential an ``AuthenticatingClient`` applied (its `Authenticator.Credential`) and the scope of the fields
/// it set.
private struct CredentialScopeMemo: Sendable {
    let credential: any Sendable
    let scope: CredentialScope
}

extension NetworkClientProtocol {
    /// Wraps this client so that requests carry `authenticator`'s credential, renewed once for everyone when the
    /// server rejects it: the one way to add a credential.
    ///
    /// ```swift
    /// let client = NetworkClient(configuration: configuration).authenticated(by: BearerTokenAuthenticator(
    ///     token: { await tokens.access },
    ///     refresh: { rejected in try await tokens.renew(replacing: rejected) }))
    /// ```
    ///
    /// - **Single flight.** However many requests are rejected (401) with the same credential at the same time,
    ///   exactly one renewal runs and all of them wait for it, then are sent again with the renewed credential. A
    ///   request sent with a credential older than the latest renewed one is sent again with the latest, without
    ///   another renewal. A request that starts while a renewal runs waits for it.
    /// - **Once.** A request is sent again at most once: a second rejection is its outcome (the 401 error, unchanged).
    /// - **Failure.** A renewal that throws fails every request waiting for it with that error, unchanged, and every
    ///   request that was sent with the same credential before it failed; a request that starts after the failure
    ///   renews anew.
    /// - **No storm.** More than `maximumRefreshes` renewals within `refreshWindow` seconds fail with
    ///   ``AuthenticationError/tooManyRefreshes(limit:window:)`` instead of renewing again.
    /// - **Only where it belongs.** The credential goes only to requests sent to the configured base URL's origin and
    ///   to `additionalOrigins`, and never follows a redirect to another origin. The client at the bottom of the
    ///   stack, which knows the configured base URL, enforces it, so it holds wherever this decorator sits. A request
    ///   whose credential was withheld for that reason is not renewed on a `401`.
    /// - **The request's say.** A request with ``RequestOptions/sendsCredential`` `false` (a sign-in, a public
    ///   endpoint) is passed on untouched.
    /// - **Cancellation and deadline.** A request waiting for a renewal stops waiting when its task is cancelled
    ///   (`CancellationError`) or its ``NetworkRequest/totalTimeout`` passes (``NetworkClientError/transportFailed(_:)``
    ///   with `URLError.timedOut`); the renewal goes on for the others.
    ///
    /// It throws what the wrapped client throws (a second 401 included), what ``Authenticator/credential()`` and
    /// ``Authenticator/refresh(rejected:)`` throw, and ``AuthenticationError``, all unchanged. Implement
    /// ``Authenticator`` for other schemes (an API key, a signed request); see <doc:Resilience>.
    /// - Parameters:
    ///   - authenticator: Supplies, applies and renews the credential, for example a ``BearerTokenAuthenticator``.
    ///   - additionalOrigins: Base URLs of other origins (scheme, host, port) that may receive the credential when a
    ///     request overrides its `baseURL` with them; empty by default (only the configured base URL's origin does).
    ///   - maximumRefreshes: The most renewals within `refreshWindow`; `3` by default. Values below 1 count as 1.
    ///   - refreshWindow: The window, in seconds, over which renewals are counted; `60` by default.
    /// - Returns: A client that authenticates the requests of this one.
    public func authenticated<A: Authenticator>(
        by authenticator: A, alsoFor additionalOrigins: [URL] = [], maximumRefreshes: Int = 3,
        refreshWindow: TimeInterval = 60
    ) -> some NetworkClientProtocol {
        AuthenticatingDecorator(
            wrapping: self, authenticator: authenticator, additionalOrigins: additionalOrigins,
            maximumRefreshes: maximumRefreshes, refreshWindow: refreshWindow)
    }
}
