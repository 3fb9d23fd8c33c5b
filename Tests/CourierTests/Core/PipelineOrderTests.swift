import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// A decorator written as the "Writing a decorator" article shows: it knows nothing of Courier's other decorators and
/// only forwards `run`.
struct ForwardingClient: NetworkClientProtocol {
    let wrapped: any NetworkClientProtocol

    func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        try await wrapped.run(networkRequest)
    }
}

/// One of the decorators a stack is built from, applied bottom up.
enum Layer: String, CaseIterable, Sendable, CustomStringConvertible {
    case logged, retrying, authenticated, deduplicated, sequential, forwarding

    static let five: [Layer] = [.logged, .retrying, .authenticated, .deduplicated, .sequential]

    var description: String { rawValue }

    /// Every order of `layers`.
    static func orders(of layers: [Layer]) -> [[Layer]] {
        guard layers.count > 1 else { return [layers] }
        return layers.indices.flatMap { index in
            var rest = layers
            let first = rest.remove(at: index)
            return orders(of: rest).map { [first] + $0 }
        }
    }
}

/// The secrets a stack must never write in a log entry or let reach another origin.
private enum Secret {
    static let configuredHeader = "TOPSECRET-blob"
    static let queryToken = "QSECRET-query"
    static let bodyPassword = "PSECRET-body"
}

/// The rules that protect the user, checked for a stack of decorators over a `NetworkClient`: they must hold in
/// every order, with a decorator of the user's own anywhere in it.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct PipelineWorld: Sendable {
    /// The configuration's sensitive header names.
    static let sensitiveHeaders: Set<String> = ["X-Session-Blob"]
    let main: LoopbackServer
    let other: LoopbackServer
    /// The `Authorization` each server received, by path, in arrival order.
    let arrivals: Locked<[(server: String, path: String, authorization: String?, blob: String?)]>

    init() throws {
        let arrivals = Locked<[(server: String, path: String, authorization: String?, blob: String?)]>([])
        self.arrivals = arrivals
        let other = try LoopbackServer(host: "localhost") { request in
            arrivals.withLock {
                $0.append(("other", request.path, request.header("Authorization"), request.header("X-Session-Blob")))
            }
            return .echo()
        }
        self.other = other
        let otherBase = other.baseURL.absoluteString
        main = try LoopbackServer { request in
            arrivals.withLock {
                $0.append(("main", request.path, request.header("Authorization"), request.header("X-Session-Blob")))
            }
            if request.path == "/redirect" { return .redirect(status: 302, location: otherBase + "/landed") }
            // Only the renewed token is accepted: the first requests of each stack are rejected.
            return request.header("Authorization") == "Bearer fresh-1" ? .echo() : .respond(status: 401)
        }
    }

    func stack(_ layers: [Layer], store: TokenStore, log: LogCollector, audit: AuditLog) -> any NetworkClientProtocol {
        let configuration = main.configuration(sensitiveHeaders: Self.sensitiveHeaders)
        var client: any NetworkClientProtocol = NetworkClient(configuration: configuration)
        for layer in layers {
            switch layer {
            case .logged: client = loggingClient(client, level: .debug, to: log)
            case .retrying: client = client.retrying()
            case .authenticated: client = client.authenticated(by: store.authenticator)
            case .deduplicated: client = client.deduplicated()
            case .sequential: client = client.sequential()
            // The user's own decorator: it forwards `run` and reads what was sent through the public runReporting.
            case .forwarding: client = AuditingClient(wrapping: client, record: audit.sink)
            }
        }
        return client
    }

    /// Runs the scenario through `layers` and returns what broke, as readable lines; empty when every rule held.
    func violations(_ layers: [Layer]) async -> [String] {
        arrivals.withLock { $0.removeAll() }
        let store = TokenStore(token: "expired")
        let log = LogCollector()
        let audit = AuditLog()
        let client = stack(layers, store: store, log: log, audit: audit)
        var problems: [String] = []
        let secretHeaders = ["X-Session-Blob": Secret.configuredHeader]
        let query = [URLQueryItem(name: "access_token", value: Secret.queryToken)]

        // Four callers at once with an expired token: one renewal, and every caller gets through with the new one.
        let callers = (0..<4).map { _ in
            Task {
                try await client.run(
                    Echo(path: "me", method: .get, queryItems: query, additionalHeaders: secretHeaders))
            }
        }
        for caller in callers {
            switch await caller.result {
            case .success(let response):
                if response.value.header("Authorization") != "Bearer fresh-1" {
                    problems.append("a caller was not renewed")
                }
            case .failure(let error): problems.append("a caller failed: \(error)")
            }
        }
        if store.refreshes != ["expired"] { problems.append("renewals: \(store.refreshes), expected one") }

        // The configured origin, spelled as an override, gets the credential; another origin never does.
        let sameOrigin = Echo(path: "same", method: .get, baseURL: main.baseURL)
        if (try? await client.run(sameOrigin).value.header("Authorization")) != "Bearer fresh-1" {
            problems.append("a same-origin baseURL override got no credential")
        }
        _ = try? await client.run(Echo(path: "elsewhere", method: .get, baseURL: other.baseURL))
        _ = try? await client.run(Echo(path: "redirect", method: .get))
        // A request that opts out is sent without the credential.
        _ = try? await client.run(
            Echo(path: "public", method: .get, baseURL: other.baseURL, options: RequestOptions(sendsCredential: false)))
        let leaked = arrivals.withLock { $0.filter { $0.server == "other" && $0.authorization != nil } }
        for arrival in leaked { problems.append("the credential reached the other origin at \(arrival.path)") }
        let landed = arrivals.withLock { $0.filter { $0.server == "other" }.map(\.path) }
        if Set(landed) != ["/elsewhere", "/landed", "/public"] { problems.append("the other origin saw \(landed)") }

        // A body with a password-like field, logged at debug.
        _ = try? await client.run(
            NetworkRequest<[String: String], EchoedRequest>(
                path: "me", method: .post, body: ["newPassword": Secret.bodyPassword], additionalHeaders: secretHeaders)
        )

        let written = log.everything
        for secret in [Secret.configuredHeader, Secret.queryToken, Secret.bodyPassword, "fresh-1", "expired"]
        where written.contains(secret) {
            problems.append("the log holds \(secret)")
        }
        if layers.contains(.logged) && log.all.isEmpty { problems.append("nothing was logged") }

        // The user's decorator saw every call as the bottom client sent it, with the secrets named.
        let audited = audit.all
        if layers.contains(.forwarding) && audited.isEmpty { problems.append("the user's decorator saw no report") }
        for record in audited {
            let names = Dictionary(
                record.headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
            for name in ["x-session-blob", "authorization"] where names[name].map({ $0 != "<redacted>" }) == true {
                problems.append("the user's decorator was not told that \(name) is a secret")
            }
            if record.url?.host == "localhost", names["authorization"] != nil {
                problems.append("the user's decorator saw a credential sent to the other origin")
            }
        }
        if audited.contains(where: { $0.url?.path == "/me" && $0.headers.keys.contains("X-Session-Blob") == false }) {
            problems.append("the user's decorator saw a request without its header")
        }

        // The outbox over this stack, given the configuration's rules, refuses its sensitive header at enqueue.
        do {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("order-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let outbox = try Outbox(
                directory: directory, client: client, rules: Outbox.Rules(sensitiveHeaders: Self.sensitiveHeaders),
                paused: true)
            defer { Task { await outbox.close() } }
            do {
                try await outbox.enqueue(
                    NetworkRequest<VoidRequest, VoidResponse>(
                        path: "w", method: .post, additionalHeaders: secretHeaders),
                    kind: "write")
                problems.append("the outbox stored the configured sensitive header")
            } catch OutboxError.secretHeader {
            } catch {
                problems.append("the outbox failed with \(error)")
            }
        } catch {
            problems.append("the outbox could not open: \(error)")
        }
        return problems
    }
}

@Suite("Pipeline order: the rules that protect the user hold in every decorator order", .serialized)
struct PipelineOrderTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Every order of the five decorators, with a forwarding decorator of the user's own among them")
    func everyOrder() async throws {
        let world = try PipelineWorld()
        let orders = Layer.orders(of: Layer.five)
        #expect(orders.count == 120)
        var failures: [String] = []
        for (index, order) in orders.enumerated() {
            // The user's decorator at each of the six positions in turn.
            var layers = order
            layers.insert(.forwarding, at: index % (order.count + 1))
            for problem in await world.violations(layers) {
                failures.append("\(layers.map(\.description).joined(separator: " → ")): \(problem)")
            }
        }
        #expect(failures.isEmpty, "\(failures.count) violations:\n\(failures.prefix(40).joined(separator: "\n"))")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The recommended stack with the user's decorator at each position")
    func recommendedStack() async throws {
        let world = try PipelineWorld()
        // `client.logged(…).retrying().authenticated(by:).deduplicated()`, as README recommends: bottom up.
        let recommended: [Layer] = [.logged, .retrying, .authenticated, .deduplicated]
        for position in 0...recommended.count {
            var layers = recommended
            layers.insert(.forwarding, at: position)
            let problems = await world.violations(layers)
            #expect(problems.isEmpty, "\(layers): \(problems)")
        }
    }
}
