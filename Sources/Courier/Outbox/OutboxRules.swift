import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Outbox {
    /// What an ``Outbox`` must know of the configuration its client sends with: which header names hold secrets,
    /// and how bodies are encoded and results decoded when a request or handler does not say.
    ///
    /// The outbox stores a request long before it sends it, and decodes a result long after, so it cannot learn these
    /// from the client as it sends: you give them when you open it. For a client built on a ``NetworkConfiguration``,
    /// whatever decorators wrap it, pass that configuration's rules, and the outbox stores and decodes as `run` sends
    /// and decodes:
    ///
    /// ```swift
    /// let client = NetworkClient(configuration: configuration).retrying()
    /// let outbox = try Outbox(
    ///     directory: FileManager.default.temporaryDirectory.appendingPathComponent("rules"), client: client,
    ///     rules: Outbox.Rules(configuration))
    /// ```
    ///
    /// `Outbox.Rules()` are a plain configuration's: no sensitive header besides `Authorization`,
    /// `Proxy-Authorization` and `Cookie`, `JSONEncoder()` and `JSONDecoder()`; right for a test double.
    public struct Rules: Sendable {
        /// Header names that hold secrets, compared case-insensitively: a request that carries one is refused at
        /// enqueue, and a stored response leaves it out. `Authorization`, `Proxy-Authorization` and `Cookie` always
        /// are, and so is any name the outbox's ``Outbox/secrets`` call a secret. Empty by default.
        public var sensitiveHeaders: Set<String>
        /// The encoder for a body whose request sets none; `JSONEncoder()` by default.
        public var encoder: JSONEncoder
        /// The decoder for a result whose handler or ticket call sets none; `JSONDecoder()` by default.
        public var decoder: JSONDecoder

        /// Creates rules; every parameter has the default described on its property.
        /// - Parameters:
        ///   - sensitiveHeaders: More header names that hold secrets; empty by default.
        ///   - encoder: The encoder for bodies; `JSONEncoder()` by default.
        ///   - decoder: The decoder for results; `JSONDecoder()` by default.
        public init(
            sensitiveHeaders: Set<String> = [], encoder: JSONEncoder = JSONEncoder(),
            decoder: JSONDecoder = JSONDecoder()
        ) {
            self.sensitiveHeaders = sensitiveHeaders
            self.encoder = encoder
            self.decoder = decoder
        }

        /// The rules of `configuration`: its ``NetworkConfiguration/sensitiveHeaders``,
        /// ``NetworkConfiguration/defaultEncoder`` and ``NetworkConfiguration/defaultDecoder``, what `run` applies to
        /// a request through a ``NetworkClient`` built on it.
        /// - Parameter configuration: The configuration of the client at the bottom of the outbox's client.
        public init(_ configuration: NetworkConfiguration) {
            self.init(
                sensitiveHeaders: configuration.sensitiveHeaders, encoder: configuration.defaultEncoder,
                decoder: configuration.defaultDecoder)
        }

        /// Every sensitive header name, lowercased: these and the three that always are.
        var allSensitiveHeaders: Set<String> {
            Redaction.alwaysSensitiveHeaders.union(sensitiveHeaders.map { $0.lowercased() })
        }
    }

    /// Opens the outbox in `directory` with rules taken from `client` itself: its configuration's when it is a
    /// ``NetworkClient``, else `Outbox.Rules()`, which a decorator around a client with sensitive headers or coders of
    /// its own does not follow. Pass the rules instead:
    /// ``init(directory:client:rules:retryPolicy:limits:secrets:paused:rewrite:)``.
    ///
    /// - Parameters:
    ///   - directory: Where the journal lives.
    ///   - client: The client to send through.
    ///   - retryPolicy: The delay rules for transient failures; `RetryPolicy()` by default.
    ///   - limits: The bounds; `Limits()` by default.
    ///   - encoder: Replaces the rules' encoder; `nil` (the default) keeps it.
    ///   - sensitiveHeaders: Added to the rules' sensitive headers; empty by default.
    ///   - secrets: The rules that name secret headers, query parameters and body fields; `LogRedaction()` by default.
    ///   - paused: `true` to open without sending; `false` by default.
    ///   - rewrite: Runs before each send and may change the request; `nil` by default.
    /// - Throws: ``OutboxError/directoryInUse(path:)`` or ``OutboxError/storageFailed(operation:path:code:)``.
    @available(
        *, deprecated,
        message: "Pass rules: Outbox.Rules(configuration); without them a client under decorators gets Outbox.Rules()"
    )
    public convenience init(
        directory: URL,
        client: any NetworkClientProtocol,
        retryPolicy: RetryPolicy = RetryPolicy(),
        limits: Limits = Limits(),
        encoder: JSONEncoder? = nil,
        sensitiveHeaders: Set<String> = [],
        secrets: LogRedaction = LogRedaction(),
        paused: Bool = false,
        rewrite: (@Sendable (OutboxRequest) async throws -> OutboxRequest)? = nil
    ) throws {
        var rules = (client as? NetworkClient).map { Rules($0.configuration) } ?? Rules()
        if let encoder { rules.encoder = encoder }
        rules.sensitiveHeaders.formUnion(sensitiveHeaders)
        try self.init(
            directory: directory, client: client, rules: rules, retryPolicy: retryPolicy, limits: limits,
            secrets: secrets, paused: paused, rewrite: rewrite, environment: .live)
    }
}
