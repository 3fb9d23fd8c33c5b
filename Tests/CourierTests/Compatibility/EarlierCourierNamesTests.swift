import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// Courier 0.1's second ways of doing a task still do it, deprecated: code written for 0.1 compiles and behaves as it
/// did. Each test calls deprecated API on purpose, and is marked deprecated itself so that the build stays free of
/// warnings.
@Suite("Courier 0.1's earlier names")
struct EarlierCourierNamesTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @available(*, deprecated, message: "Tests Courier 0.1's decorator types and initializers")
    @Test("LoggingClient, RetryingClient and AuthenticatingClient wrap as their fluent forms do")
    func decoratorTypes() async throws {
        let stub = StubNetworkClient()
        stub.stub(.get, "/a", status: 200, body: "{}")
        let log = LogCollector()
        let logged = LoggingClient(wrapping: stub, maximumBodyLength: 8, sink: log.sink)
        let retried = RetryingClient(wrapping: logged, policy: RetryPolicy(maxAttempts: 1))
        let store = TokenStore(token: "t")
        let authenticated = AuthenticatingClient(
            wrapping: retried, authenticator: store.authenticator, maximumRefreshes: 2, refreshWindow: 30)
        _ = try await authenticated.run(NetworkRequest<VoidRequest, Data>(path: "/a", method: .get))
        #expect(log.all.count == 1)
        #expect(stub.requests.first?.header("Authorization") == "Bearer t")
        #expect(logged.maximumBodyLength == 8)
        #expect(retried.policy.maxAttempts == 1)
        #expect(authenticated.maximumRefreshes == 2 && authenticated.refreshWindow == 30)

        let deduplicated = DeduplicatingClient(wrapping: stub)
        let sequential = SequentialClient(wrapping: deduplicated, policy: .concurrentReads)
        _ = try await sequential.run(NetworkRequest<VoidRequest, Data>(path: "/a", method: .get))
        #expect(deduplicated.inFlightCount == 0 && sequential.pendingCount == 0)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @available(*, deprecated, message: "Tests Courier 0.1's decodeErrorBody and StubNetworkClient's status: label")
    @Test("decodeErrorBody and stub(status:) still work")
    func errorBodyAndStubLabel() async throws {
        let stub = StubNetworkClient()
        stub.stub(.get, "/missing", status: 404, body: #"{"code":"gone","message":"no"}"#)
        stub.stub(.get, "/raw", status: 200, data: Data("ok".utf8))
        let error = try await #require(throws: NetworkClientError.self) {
            try await stub.run(NetworkRequest<VoidRequest, Data>(path: "/missing", method: .get))
        }
        #expect(try error.decodeErrorBody(APIErrorPayload.self).code == "gone")
        #expect(try await stub.run(NetworkRequest<VoidRequest, String>(path: "/raw", method: .get)).value == "ok")
    }
}
