import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A durable queue of write requests: each is on the disk before ``enqueue(_:kind:orderingKey:)`` returns, is sent
/// through a ``NetworkClientProtocol`` until it gets a definitive answer, across restarts and crashes, and its
/// result goes to the handler registered for its kind, also after a restart.
///
/// ```swift
/// let outbox = try Outbox(
///     directory: supportDirectory.appendingPathComponent("outbox"), client: client,
///     rules: Outbox.Rules(configuration))
/// outbox.onResult(kind: "createPost", as: Post.self) { entry, result in
///     if case .success(let response) = result { try await store.save(response.value) }
/// }
/// let ticket = try await outbox.enqueue(NetworkRequest<NewPost, Post>(path: "/posts", method: .post, body: draft),
///                                   kind: "createPost")
/// ```
///
/// Guarantees (see the "Keeping writes across restarts" article):
/// - **Durable**: `enqueue` returns once the entry is written and flushed (`fdatasync` on Linux, `fsync` on Apple
///   platforms) to an append-only journal; concurrent enqueues share one flush (group commit). A kill at any instant
///   loses no acknowledged entry. (On Apple platforms `fsync` does not make the drive write its own cache: a power
///   loss there can still lose the last entries.)
/// - **At least once**: an entry in flight at a crash is sent again. Every attempt carries the same
///   `Idempotency-Key` header, so the server can drop duplicates.
/// - **Ordered**: entries with the same `orderingKey` are sent one at a time in enqueue order; a later entry waits
///   while an earlier one is retried, and until the earlier one's handler (if one is registered) has run. Different
///   keys run concurrently, up to ``Limits/maximumConcurrentSends``.
/// - **No secret on disk**: a request that carries one is refused at enqueue: `Authorization`, `Proxy-Authorization`,
///   `Cookie`, the ``Rules/sensitiveHeaders`` (the configuration's), URL user info, and any header, query
///   parameter, form field or JSON body field whose name the ``secrets`` rules call a secret (the same rules as
///   ``LoggingClient``:
///   `*password*`, `*secret*`, `*token*`, `*apikey*` by default). The wrapped client adds credentials at send time.
///   Stored responses keep no `Set-Cookie` nor secret-named header either; a stored response *body* is kept as the
///   server sent it, for the handler.
/// - **Nothing but its entries through `run`**: the outbox takes the configuration's rules as ``Rules``, so a
///   decorator of yours under it (counting, throttling, logging) sees exactly the requests that are sent.
/// - **One retry layer**: the outbox retries its entries itself; what it sends carries
///   ``RequestOptions/allowsRetry`` `false`, so a ``RetryingClient`` in the client's stack sends each attempt once.
/// - **Bounded**: ``Limits`` caps entries, bytes and the body size; beyond them `enqueue` throws and stores nothing.
/// - **Damage is contained**: a damaged journal file is copied to `quarantine/`, reported as
///   ``OutboxEvent/quarantined(file:reason:recoveredEntries:)``, and every intact entry in it is kept.
///
/// One `Outbox` per directory: opening takes an exclusive `flock` on `outbox.lock`, so a second instance, in this
/// process or another, fails with ``OutboxError/directoryInUse(path:)``. Call ``close(timeout:)`` to release it.
public final class Outbox: Sendable {
    /// The header every attempt of an entry carries: a UUID chosen at enqueue, or the request's own value.
    public static let idempotencyHeader = "Idempotency-Key"

    /// The directory the outbox keeps its journal, lock and quarantine in.
    public let directory: URL
    /// The client every entry is sent through: its interceptors, authenticator and logger apply.
    public let client: any NetworkClientProtocol
    /// The backoff, jitter and `Retry-After` rules for transient failures. Its ``RetryPolicy/maxAttempts`` and
    /// ``RetryPolicy/totalBudget`` are ignored: entries are retried until they succeed or ``Limits/maximumAge``
    /// passes. Its backoff is the least wait between attempts: a server's `Retry-After` may lengthen it, never
    /// shorten it (`Retry-After: 0` and dates in the past still wait the backoff).
    public let retryPolicy: RetryPolicy
    /// The bounds on what is kept.
    public let limits: Limits

    /// The rules that name secrets: what enqueue refuses and what a stored response leaves out.
    public let secrets: LogRedaction

    /// The client's sensitive header names and default coders, as given when the outbox was opened.
    public let rules: Rules

    /// Changes a stored request right before each send (the initializer's `rewrite`).
    let rewrite: (@Sendable (OutboxRequest) async throws -> OutboxRequest)?
    /// Every sensitive header name, lowercased: the rules' and those that always are.
    let sensitiveHeaders: Set<String>

    let environment: RetryEnvironment
    let journal: OutboxJournal
    private let lock: DirectoryLock
    let state: Locked<Shell>

    typealias Handler =
        @Sendable (_ entry: OutboxEntry, _ result: StoredResult, _ acceptable: Set<Int>?) async throws
        -> Void
    typealias Machine = OutboxStateMachine<Handler>

    /// How many results of this process ``result(of:as:decoder:)`` still finds after their entry finished: `1_000`.
    public static let rememberedResults = 1_000

    /// Opens the outbox in `directory` (created if needed), takes its lock, reads what an earlier run left, and
    /// starts sending it.
    ///
    /// The journal is read on the calling thread (a few milliseconds per megabyte): open the outbox off the main
    /// thread if it may hold much. Damaged files found meanwhile are reported on the first ``events()`` stream.
    ///
    /// - Parameters:
    ///   - directory: Where the journal lives; a directory of its own, for example under Application Support on
    ///     Apple platforms. Nothing else should write in it.
    ///   - client: The client to send through, for example `NetworkClient(configuration:)` with an interceptor or
    ///     `.authenticated(by:)`; its credentials are added at send time, never stored.
    ///   - rules: The client's sensitive header names and default coders, for example
    ///     `Outbox.Rules(configuration)` for a client built on `configuration`, whatever decorators wrap it; see
    ///     ``Rules``. The outbox asks the client for nothing but its entries.
    ///   - retryPolicy: The delay rules for transient failures; `RetryPolicy()` by default (0.5 s base, 30 s cap, full
    ///     jitter, `Retry-After` honoured; a `Retry-After` above `maxDelay` is still waited for).
    ///   - limits: The bounds; `Limits()` by default.
    ///   - secrets: The rules that name secret headers, query parameters and body fields, refused at enqueue;
    ///     `LogRedaction()` by default, the rules ``LoggingClient`` redacts by. To store a field such as `push_token`,
    ///     leave its fragment out, for example `LogRedaction(nameFragments: ["password", "secret", "apikey"])`.
    ///   - paused: `true` to open without sending, for example to register handlers first; then call ``resume()``.
    ///     `false` by default.
    ///   - rewrite: Changes a stored request right before each send, for example to replace a local identifier in the
    ///     path by the one the server assigned; `nil` (the default) sends it as stored. It runs on every attempt and
    ///     its output is not stored. If it throws, the attempt counts as a passing failure and is retried after the
    ///     backoff.
    /// - Throws: ``OutboxError/directoryInUse(path:)`` when another outbox holds the directory,
    ///   ``OutboxError/storageFailed(operation:path:code:)`` when it cannot be created or read.
    public convenience init(
        directory: URL,
        client: any NetworkClientProtocol,
        rules: Rules,
        retryPolicy: RetryPolicy = RetryPolicy(),
        limits: Limits = Limits(),
        secrets: LogRedaction = LogRedaction(),
        paused: Bool = false,
        rewrite: (@Sendable (OutboxRequest) async throws -> OutboxRequest)? = nil
    ) throws {
        try self.init(
            directory: directory, client: client, rules: rules, retryPolicy: retryPolicy, limits: limits,
            secrets: secrets, paused: paused, rewrite: rewrite, environment: .live)
    }

    /// Opens an outbox with an injected clock, sleep and random source (for tests).
    init(
        directory: URL,
        client: any NetworkClientProtocol,
        rules: Rules = Rules(),
        retryPolicy: RetryPolicy = RetryPolicy(),
        limits: Limits = Limits(),
        secrets: LogRedaction = LogRedaction(),
        paused: Bool = false,
        rewrite: (@Sendable (OutboxRequest) async throws -> OutboxRequest)? = nil,
        environment: RetryEnvironment,
        segmentSize: Int = 4 * 1024 * 1024
    ) throws {
        let path = directory.path
        try OutboxFiles.makeDirectory(path)
        let lock = try DirectoryLock(directory: path)
        self.directory = directory
        self.client = client
        self.retryPolicy = retryPolicy
        self.limits = limits
        self.rewrite = rewrite
        self.rules = rules
        self.secrets = secrets
        self.sensitiveHeaders = rules.allSensitiveHeaders
        self.environment = environment
        self.lock = lock
        self.journal = OutboxJournal(
            directory: (path as NSString).appendingPathComponent("journal"), segmentSize: segmentSize)
        let contents = try journal.open()
        var shell = Shell(machine: Machine(limits: limits, paused: paused))
        let recovered = contents.entries.values.map { entry in
            (
                entry: entry, size: (try? JournalRecord.entry(entry).framed().count) ?? 0,
                result: contents.results[entry.id]
            )
        }
        let actions = shell.machine.recovered(recovered)
        shell.startupEvents = contents.quarantined.map {
            .quarantined(file: $0.file, reason: $0.reason, recoveredEntries: $0.recovered)
        }
        self.state = Locked(shell)
        launch(actions)
    }

    // MARK: Public API

    /// Stores `request` durably and returns its entry id; the outbox sends it as soon as its ordering key allows.
    ///
    /// The body is encoded now (JSON with the request's encoder or the ``Rules/encoder``, `Data` as is, or form
    /// items), so the Swift types need not exist after a restart. The request's `decoder` and `encoder` are not
    /// stored; its response type is chosen by the handler (``onResult(kind:as:decoder:handler:)``).
    /// - Parameters:
    ///   - request: The request. Its `additionalHeaders` must not carry a credential; an `Idempotency-Key` in them
    ///     is kept as the entry's key.
    ///   - kind: The name of the handler that receives the result, for example `"createPost"`.
    ///   - orderingKey: Entries with the same key are sent one at a time in enqueue order; `nil` (the default) is
    ///     one global order.
    /// - Returns: The entry's ticket (its id), once the entry is written and flushed to the disk: ask
    ///   ``result(of:as:decoder:)`` for its outcome in this process, or ``cancel(_:)`` it before it is sent.
    /// - Throws: ``OutboxError/secretHeader(name:)``, ``OutboxError/secretValue(name:location:)``,
    ///   ``OutboxError/bodyTooLarge(size:limit:)``,
    ///   ``OutboxError/tooManyEntries(limit:)``, ``OutboxError/tooManyBytes(limit:)``,
    ///   ``OutboxError/invalidRequest(reason:)`` (also for a ``FileUpload`` or ``MultipartFormData`` body: enqueue
    ///   the bytes as `Data`; and for a streamed response type, ``ServerSentEvents``, ``JSONLines`` or
    ///   ``ByteStream``), ``OutboxError/storageFailed(operation:path:code:)`` or ``OutboxError/closed``;
    ///   nothing is stored then.
    @discardableResult
    public func enqueue<RequestModel, ResponseModel>(
        _ request: NetworkRequest<RequestModel, ResponseModel>, kind: String, orderingKey: String? = nil
    ) async throws -> OutboxTicket {
        var entry = try stored(request, kind: kind, orderingKey: orderingKey)
        entry.sequence = try state.withLock { try $0.machine.takeSequence() }
        // Encoded outside the lock, so concurrent callers encode in parallel.
        let record: Data
        do {
            record = try JournalRecord.entry(entry).framed()
        } catch {
            throw OutboxError.invalidRequest(reason: "the entry could not be encoded: \(type(of: error))")
        }
        try state.withLock { try $0.machine.reserve(entry, size: record.count) }
        do {
            try await journal.append(framed: record, id: entry.id, type: 1, durable: true)
        } catch {
            launch(step { $0.enqueueFailed(entry, size: record.count) })
            throw error
        }
        launch(step { $0.enqueued(entry, size: record.count) })
        return OutboxTicket(id: entry.id)
    }

    /// Registers the handler for results of `kind`, replacing any earlier one, and delivers at once the results of
    /// that kind that were waiting, also those stored before a restart.
    ///
    /// A result stays on disk until its handler returns without throwing; if it throws, the result is delivered again
    /// the next time a handler for `kind` is registered or the outbox is opened. The handler may run more than once
    /// for the same entry after a crash (at-least-once), so it should be idempotent too.
    /// - Parameters:
    ///   - kind: The kind given at enqueue.
    ///   - type: The response type: decoded from JSON with `decoder`; `Data`, `String` and ``VoidResponse`` as in
    ///     ``NetworkClient``.
    ///   - decoder: The decoder for the response body; `nil` (the default) uses the ``Rules/decoder`` (with
    ///     `Outbox.Rules(configuration)`, the decoder the same request would get from `run`).
    ///   - handler: Receives the entry and the decoded response, or the ``NetworkClientError`` of a permanent
    ///     failure (a non-retried status, a decoding failure, ``Limits/maximumAge`` passed).
    public func onResult<Value: Decodable & Sendable>(
        kind: String,
        as type: Value.Type,
        decoder: JSONDecoder? = nil,
        handler:
            @escaping @Sendable (OutboxEntry, Result<NetworkResponse<Value>, NetworkClientError>) async throws
            -> Void
    ) {
        let decoder = decoder ?? rules.decoder
        let erased: Handler = { entry, result, acceptable in
            try await handler(entry, result.outcome(as: Value.self, decoder: decoder, acceptable: acceptable))
        }
        launch(step { $0.register(kind: kind, erased) })
    }

    /// Stops starting sends; requests in flight finish, and entries waiting for a retry stay queued.
    public func pause() {
        state.withLock { $0.machine.pause() }
    }

    /// Starts sending again after ``pause()``, or after opening with `paused: true`.
    public func resume() {
        launch(step { $0.resume() })
    }

    /// The entries enqueued and not yet finished: waiting to be sent, being sent, or waiting for their handler. `0`
    /// once everything enqueued has been sent and its result handled.
    public var pendingCount: Int {
        state.withLock { $0.machine.pendingCount }
    }

    deinit {
        // Reached only when no task of the outbox is running any more: stop the journal's thread, free the directory.
        journal.close()
        lock.release()
    }

    /// How long ``close(timeout:)`` waits by default for the outbox's tasks (sends, result handlers) to end after
    /// cancelling them: 5 seconds.
    public static let closeTimeout: TimeInterval = 5

    /// Stops sending, cancels the requests in flight (they are sent again at the next opening) and the running result
    /// handlers, waits for them at most `timeout` seconds, flushes the journal and releases the directory's lock.
    /// Idempotent. Enqueues after it throw ``OutboxError/closed``.
    ///
    /// A result handler that ignores cancellation and is still running after `timeout` is left running, but the
    /// outbox no longer waits for it: its entry's result stays stored (it is written now if it was not yet), and the
    /// handler runs again for it at the next opening. What the abandoned handler does afterwards is not recorded.
    /// - Parameter timeout: The longest wait for running tasks, in seconds; ``closeTimeout`` (5 s) by default.
    public func close(timeout: TimeInterval = Outbox.closeTimeout) async {
        let (tasks, streams, waiters) = state.withLock { shell in
            shell.machine.close()
            defer { shell.ticketWaiters = [:] }
            return (
                Array(shell.tasks.values), Array(shell.streams.values), shell.ticketWaiters.values.flatMap(\.values)
            )
        }
        for waiter in waiters { waiter.resume(throwing: OutboxError.closed) }
        for task in tasks { task.cancel() }
        if await !Self.waitForAll(tasks, atMost: timeout) {
            // A handler outlived the wait: keep the results it was given, so the next opening delivers them again
            // instead of sending their entries a second time.
            for (id, result) in state.withLock({ $0.machine.unstoredResults }) {
                try? await journal.append(.result(id: id, result), durable: true)
            }
        }
        journal.close()
        lock.release()
        for stream in streams { stream.finish() }
    }
}

extension Outbox {
    /// The journal, for tests that inject storage failures.
    var journalForTesting: OutboxJournal { journal }
}
