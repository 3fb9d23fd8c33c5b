import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// How the decorators learn what the client at the bottom of a stack did, whatever their order and whatever
// decorators sit between: the bottom client reports what it sent to every `SendReportListener` of the task that ran
// it. A listener is a task-local value, so it reaches the bottom client through any decorator that calls the next
// client's `run` in the same task or a child task, Courier's and the ones users write alike; no decorator has to
// find another by downcasting. `DeduplicatingClient`, whose shared call runs in a task of its own, hands the report
// of that call to every waiter's listeners.

/// What the client at the bottom of a stack sent for one attempt of a request.
// A class: it is handed to every listener of a stack and read by each, so it is shared, not copied.
final class SendReport: Sendable {
    /// The request sent, after the interceptors and with the credential applied or withheld; `nil` when the request
    /// failed before it was built.
    let request: URLRequest?
    /// The header fields and body to tell when there is no `request`: the request's own (or, for the stub, what it
    /// recorded).
    let unsentHeaders: [String: String]
    let unsentBody: Data?
    /// The configuration's sensitive headers, lowercased.
    let configuredSensitiveHeaders: Set<String>
    /// The credential's header fields, lowercased; empty without one.
    let credentialHeaders: Set<String>
    /// The base URL the request was built on (the configuration's, or the request's own override).
    let base: BaseURL?
    /// Identifies `base` when it is a configuration's, so that a logger redacts it once: the configuration.
    let baseKey: ObjectIdentifier?
    /// Whether an ``AuthenticatingClient``'s credential was removed because the request went to another origin.
    let credentialWithheld: Bool

    init(
        request: URLRequest?, unsentHeaders: [String: String] = [:], unsentBody: Data? = nil,
        configuredSensitiveHeaders: Set<String>, credentialHeaders: Set<String> = [], base: BaseURL?,
        baseKey: ObjectIdentifier? = nil, credentialWithheld: Bool = false
    ) {
        self.request = request
        self.unsentHeaders = unsentHeaders
        self.unsentBody = unsentBody
        self.configuredSensitiveHeaders = configuredSensitiveHeaders
        self.credentialHeaders = credentialHeaders
        self.base = base
        self.baseKey = baseKey
        self.credentialWithheld = credentialWithheld
    }

    /// The header fields sent. Read only when needed (a debug log line): corelibs builds the dictionary anew.
    var headers: [String: String] { request?.allHTTPHeaderFields ?? unsentHeaders }
    /// The body sent, when it was in memory; `nil` for none or for a body streamed from a file.
    var body: Data? { request?.httpBody ?? unsentBody }
    /// Lowercased names of the header fields that are secrets: the configuration's sensitive headers and the
    /// credential's fields.
    var sensitiveHeaders: Set<String> {
        credentialHeaders.isEmpty ? configuredSensitiveHeaders : configuredSensitiveHeaders.union(credentialHeaders)
    }
}

/// Receives the ``SendReport`` of the calls made while it is ``current``: the last attempt's report wins.
///
/// A value over one shared, locked state: a listener is made per call by each listening decorator, and a class of
/// its own beside the lock's storage was one allocation more each time.
struct SendReportListener: Sendable {
    private struct State: Sendable {
        /// The listener of an enclosing decorator, which receives the same reports.
        let parent: SendReportListener?
        var received: SendReport?
    }

    private let state: Locked<State>

    /// The innermost listener of the running task; `nil` when no decorator listens.
    @TaskLocal static var current: SendReportListener?

    init(parent: SendReportListener?) {
        state = Locked(State(parent: parent))
    }

    /// The last report received; `nil` when the client at the bottom reported nothing (a test double of your own,
    /// or a failure before anything was built).
    var report: SendReport? {
        state.withLock { $0.received }
    }

    /// Hands `report` to `listener` and every enclosing one.
    static func deliver(_ report: SendReport, to listener: SendReportListener?) {
        var next = listener
        while let listener = next {
            next = listener.state.withLock { state in
                state.received = report
                return state.parent
            }
        }
    }

    /// Runs `operation` with a new listener inside the current one, and returns its outcome with what was reported.
    static func listening<T: Sendable>(
        _ operation: () async throws -> T
    ) async -> (result: Result<T, any Error>, report: SendReport?) {
        let listener = SendReportListener(parent: current)
        let result: Result<T, any Error>
        do {
            result = .success(try await $current.withValue(listener) { try await operation() })
        } catch {
            result = .failure(error)
        }
        return (result, listener.report)
    }
}

/// The response kind of a request that never leaves the process: the client at the bottom of a stack answers it with
/// what a component above the stack needs of its configuration before it sends anything (the ``Outbox`` encodes and
/// checks entries at enqueue). Decorators pass it through untouched; a test double of your own may throw for it, and
/// the asking component then uses its defaults.
struct ClientFacts: Decodable, Sendable {
    /// Lowercased names of the configuration's sensitive header fields.
    var sensitiveHeaders: Set<String>
    /// The configuration's default encoder and decoder.
    var encoder: JSONEncoder
    var decoder: JSONDecoder

    init(sensitiveHeaders: Set<String>, encoder: JSONEncoder, decoder: JSONDecoder) {
        self.sensitiveHeaders = sensitiveHeaders
        self.encoder = encoder
        self.decoder = decoder
    }

    /// Never decoded from a body: a client that tries fails, and the asker uses its defaults.
    init(from decoder: any Decoder) throws {
        throw DecodingError.dataCorrupted(
            DecodingError.Context(codingPath: [], debugDescription: "ClientFacts are answered, never decoded."))
    }

    /// The request that asks for them.
    static var request: NetworkRequest<VoidRequest, ClientFacts> {
        NetworkRequest(
            method: .get, options: RequestOptions(allowsSharing: false, sendsCredential: false, allowsRetry: false))
    }

    /// Asks `client` for the facts of the client at the bottom of its stack; `nil` if it cannot answer.
    static func of(_ client: any NetworkClientProtocol) async -> ClientFacts? {
        try? await client.run(request).value
    }
}

extension NetworkRequest {
    /// Whether this request never leaves the process (``ClientFacts``): decorators pass it straight through.
    var isLocalQuery: Bool { ResponseModel.self == ClientFacts.self }
}
