import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// An app's token store: `refresh` stores the new token where `token` reads it, and counts the renewals.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
final class TokenStore: Sendable {
    private struct State {
        var token: String
        var refreshes: [String] = []
    }

    private let state: Locked<State>
    private let renew: @Sendable (_ rejected: String, _ count: Int) async throws -> String

    init(
        token: String,
        renew: @escaping @Sendable (_ rejected: String, _ count: Int) async throws -> String = { _, count in
            "fresh-\(count)"
        }
    ) {
        state = Locked(State(token: token))
        self.renew = renew
    }

    /// The tokens the server rejected, one per renewal, in order.
    var refreshes: [String] { state.withLock { $0.refreshes } }

    var authenticator: BearerTokenAuthenticator {
        BearerTokenAuthenticator(
            token: { self.state.withLock { $0.token } },
            refresh: { rejected in
                let count = self.state.withLock { state in
                    state.refreshes.append(rejected)
                    return state.refreshes.count
                }
                let token = try await self.renew(rejected, count)
                self.state.withLock { $0.token = token }
                return token
            })
    }
}

enum TokenError: Error, Equatable {
    case revoked
}

/// A server that accepts only `Authorization: Bearer <accepted>` and answers 401 to anything else.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func authServer(accepting accepted: String) throws -> LoopbackServer {
    try LoopbackServer { request in
        request.header("Authorization") == "Bearer \(accepted)" ? .echo : .respond(status: 401)
    }
}

/// Holds back every answer until `count` requests have arrived (or `timeout` has passed), so that all of them are on
/// the wire before the first answer reaches the client. The server's handler runs on each connection's own thread.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
final class ArrivalGate: Sendable {
    private let arrived = Locked(0)
    private let count: Int
    private let timeout: TimeInterval
    /// Opened by the `count`th arrival.
    private let gate = Gate()

    init(count: Int, timeout: TimeInterval = 60) {
        self.count = count
        self.timeout = timeout
    }

    /// Counts one arrival, then waits until `count` have arrived; `false` if that took longer than `timeout`.
    @discardableResult
    func arriveAndWait() -> Bool {
        let arrivals = arrived.withLock { arrived in
            arrived += 1
            return arrived
        }
        if arrivals == count { gate.open() }
        return gate.wait(timeout: timeout)
    }
}

/// `authServer(accepting:)`, whose first `rejections` answers (401s) wait until all of those requests have arrived.
///
/// `AuthenticatingClient` holds a request that starts while a renewal runs until the renewal ends, so a test that
/// wants every request rejected with the old credential must have them all sent before the first 401 comes back;
/// the client must then be allowed one connection per request (``LoopbackServer/configuration(path:sensitiveHeaders:connectionsPerHost:)``).
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func authServer(accepting accepted: String, holdingFirstRejections rejections: Int) throws -> LoopbackServer {
    let gate = ArrivalGate(count: rejections)
    return try LoopbackServer { request in
        guard request.header("Authorization") != "Bearer \(accepted)" else { return .echo }
        gate.arriveAndWait()
        return .respond(status: 401)
    }
}

@Suite("AuthenticatingClient")
struct AuthenticatingClientTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("50 concurrent requests with an expired token: exactly 1 refresh, 50 successes with the new token")
    func singleFlight() async throws {
        // No 401 leaves the server before all 50 requests have arrived, so all of them are rejected with the expired
        // token and need the renewal at the same time. (A renewal that waited for 50 arrivals instead never ended:
        // requests that start while a renewal runs wait for it before sending.)
        let server = try authServer(accepting: "fresh-1", holdingFirstRejections: 50)
        let store = TokenStore(token: "expired")
        let client = NetworkClient(configuration: server.configuration(connectionsPerHost: 50))
            .authenticated(by: store.authenticator)
        try await withThrowingTaskGroup(of: String?.self) { group in
            for index in 0..<50 {
                group.addTask {
                    try await client.run(Echo(path: "item/\(index)", method: .get)).value.header("authorization")
                }
            }
            var successes = 0
            for try await authorization in group {
                #expect(authorization == "Bearer fresh-1")
                successes += 1
            }
            #expect(successes == 50)
        }
        #expect(store.refreshes == ["expired"])
        let requests = server.recordedRequests.sorted { $0.sequenceNumber < $1.sequenceNumber }
        #expect(requests.count == 100)
        #expect(requests.prefix(50).allSatisfy { $0.header("Authorization") == "Bearer expired" })
        #expect(requests.suffix(50).allSatisfy { $0.header("Authorization") == "Bearer fresh-1" })
        #expect(Set(requests.suffix(50).map(\.path)) == Set((0..<50).map { "/item/\($0)" }))

        // Later requests start with the stored token: no 401, no refresh.
        _ = try await client.run(Echo(method: .get))
        #expect(server.requestCount == 101)
        #expect(store.refreshes.count == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A failing refresh fails all 50 waiters with its error; the next request tries anew")
    func failingRefresh() async throws {
        // All 50 are on the wire with the expired token before the first 401 (see `singleFlight`).
        let server = try authServer(accepting: "fresh-2", holdingFirstRejections: 50)
        let store = TokenStore(token: "expired") { _, count in
            guard count > 1 else { throw TokenError.revoked }
            return "fresh-\(count)"
        }
        let client = NetworkClient(configuration: server.configuration(connectionsPerHost: 50))
            .authenticated(by: store.authenticator)
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    do {
                        _ = try await client.run(Echo(method: .get))
                        return false
                    } catch {
                        return error as? TokenError == .revoked
                    }
                }
            }
            var failedWithRefreshError = 0
            for await revoked in group where revoked { failedWithRefreshError += 1 }
            #expect(failedWithRefreshError == 50)
        }
        #expect(store.refreshes == ["expired"])
        #expect(server.requestCount == 50)

        let echo = try await client.run(Echo(method: .get)).value
        #expect(echo.header("Authorization") == "Bearer fresh-2")
        #expect(store.refreshes == ["expired", "expired"])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A second 401 after a refresh is the outcome: no loop")
    func secondRejection() async throws {
        let server = try LoopbackServer { _ in .respond(status: 401, body: Data("nope".utf8)) }
        let store = TokenStore(token: "expired")
        let client = server.client().authenticated(by: store.authenticator)
        await #expect {
            try await client.run(Echo(method: .get))
        } throws: { error in
            guard case NetworkClientError.unacceptableStatusCode(401, _, let data) = error else { return false }
            return data == Data("nope".utf8)
        }
        #expect(store.refreshes == ["expired"])
        #expect(server.requestCount == 2)
        #expect(server.recordedRequests.map { $0.header("Authorization") } == ["Bearer expired", "Bearer fresh-1"])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A request sent with an older credential is retried with the current one, without another refresh")
    func staleCredential() async throws {
        let gate = Gate()
        let server = try LoopbackServer { request in
            if request.header("Authorization") == "Bearer fresh-1" { return .echo }
            if request.path == "/slow" { gate.wait() }
            return .respond(status: 401)
        }
        let store = TokenStore(token: "expired")
        let client = server.client().authenticated(by: store.authenticator)
        let slow = Task { try await client.run(Echo(path: "slow", method: .get)).value }
        #expect(await eventually { server.inProgressRequests == 1 })
        // Meanwhile another request is rejected and renews the token.
        #expect(
            try await client.run(Echo(path: "fast", method: .get)).value.header("Authorization") == "Bearer fresh-1")
        #expect(store.refreshes == ["expired"])
        gate.open()
        #expect(try await slow.value.header("Authorization") == "Bearer fresh-1")
        #expect(store.refreshes == ["expired"])
        #expect(server.requestCount == 4)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A request rejected just after a refresh of its token failed gets that failure, not a second refresh")
    func lateRejectionAfterFailedRefresh() async throws {
        let gate = Gate()
        let server = try LoopbackServer { request in
            if request.header("Authorization") == "Bearer fresh-2" { return .echo }
            if request.path == "/slow" { gate.wait() }
            return .respond(status: 401)
        }
        let store = TokenStore(token: "expired") { _, count in
            guard count > 1 else { throw TokenError.revoked }
            return "fresh-\(count)"
        }
        let client = server.client().authenticated(by: store.authenticator)
        let slow = Task { try await client.run(Echo(path: "slow", method: .get)) }
        #expect(await eventually { server.inProgressRequests == 1 })
        await #expect(throws: TokenError.revoked) { try await client.run(Echo(path: "fast", method: .get)) }
        gate.open()
        await #expect(throws: TokenError.revoked) { try await slow.value }
        #expect(store.refreshes == ["expired"])
        #expect(server.requestCount == 2)

        // A request that starts after the failure tries anew.
        #expect(try await client.run(Echo(method: .get)).value.header("Authorization") == "Bearer fresh-2")
        #expect(store.refreshes == ["expired", "expired"])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("More than 3 refreshes within the window end with tooManyRefreshes instead of a storm")
    func refreshStorm() async throws {
        let server = try LoopbackServer { _ in .respond(status: 401) }
        let store = TokenStore(token: "t0")
        let client = server.client().authenticated(by: store.authenticator)
        for _ in 0..<3 {
            await #expect(throws: NetworkClientError.self) { try await client.run(Echo(method: .get)) }
        }
        #expect(store.refreshes == ["t0", "fresh-1", "fresh-2"])
        await #expect(throws: AuthenticationError.tooManyRefreshes(limit: 3, window: 60)) {
            try await client.run(Echo(method: .get))
        }
        #expect(store.refreshes.count == 3)
        #expect(server.requestCount == 7)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("authenticated(by:maximumRefreshes:refreshWindow:) sets the storm limits")
    func refreshLimits() async throws {
        let server = try LoopbackServer { _ in .respond(status: 401) }
        let store = TokenStore(token: "t0")
        let client = server.client().authenticated(by: store.authenticator, maximumRefreshes: 1, refreshWindow: 600)
        await #expect(throws: NetworkClientError.self) { try await client.run(Echo(method: .get)) }
        #expect(store.refreshes == ["t0"])
        await #expect(throws: AuthenticationError.tooManyRefreshes(limit: 1, window: 600)) {
            try await client.run(Echo(method: .get))
        }
        #expect(store.refreshes.count == 1)
        #expect(server.requestCount == 3)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The credential goes only to the configured origin, and to origins allowed explicitly")
    func credentialsStayHome() async throws {
        let home = try echoServer()
        let other = try echoServer()
        let store = TokenStore(token: "secret-token")
        let client = home.client().authenticated(by: store.authenticator)
        let atHome = try await client.run(Echo(path: "a", method: .get)).value
        #expect(atHome.header("Authorization") == "Bearer secret-token")
        let sameOrigin = try await client.run(Echo(path: "b", method: .get, baseURL: home.url("/v2"))).value
        #expect(sameOrigin.header("Authorization") == "Bearer secret-token")
        let elsewhere = try await client.run(Echo(path: "c", method: .get, baseURL: other.baseURL)).value
        #expect(elsewhere.header("Authorization") == nil)
        #expect(other.recordedRequests.allSatisfy { $0.header("Authorization") == nil })

        let allowing = home.client().deduplicated().authenticated(by: store.authenticator, alsoFor: [other.url("/x")])
        let allowed = try await allowing.run(Echo(path: "d", method: .get, baseURL: other.baseURL)).value
        #expect(allowed.header("Authorization") == "Bearer secret-token")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The authenticator's Authorization replaces the request's own, whatever its case")
    func replacesAuthorization() async throws {
        let server = try echoServer()
        let client = server.client().authenticated(by: TokenStore(token: "t").authenticator)
        let echo = try await client.run(Echo(method: .get, additionalHeaders: ["authorization": "Basic x"])).value
        #expect(echo.headers.filter { $0.name.lowercased() == "authorization" }.map(\.value) == ["Bearer t"])
    }
}
