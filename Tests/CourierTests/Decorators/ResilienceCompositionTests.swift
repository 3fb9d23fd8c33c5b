import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

@Suite("Resilience composition")
struct ResilienceCompositionTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("logged → retrying → authenticated → deduplicated: 10 callers, one 503, one 401, one refresh, 3 requests")
    func recommendedStack() async throws {
        let gate = Gate()
        let server = try LoopbackServer { request in
            if request.header("Authorization") == "Bearer fresh-1" { return .echo }
            gate.wait()
            return .respond(status: request.sequenceNumber == 0 ? 503 : 401)
        }
        let log = LogCollector()
        let time = VirtualTime(longestWaits: true)
        let store = TokenStore(token: "expired")
        let logged = loggingClient(server.client(), level: .debug, to: log)
        let client = RetryingDecorator(wrapping: logged, policy: RetryPolicy(), environment: time.environment)
            .authenticated(by: store.authenticator)
            .deduplicated()
        let callers = (0..<10).map { _ in Task { try await client.run(Echo(path: "me", method: .get)).value } }
        #expect(await eventually { client.waiterCount == 10 })
        gate.open()
        for caller in callers {
            #expect(try await caller.value.header("Authorization") == "Bearer fresh-1")
        }
        #expect(server.requestCount == 3)
        #expect(store.refreshes == ["expired"])
        #expect(time.sleeps == [0.5])
        let origin = "http://127.0.0.1:\(server.port)"
        let firstLines = log.lines.map { String($0.prefix { $0 != "\n" }) }
        #expect(firstLines.count == 3)
        #expect(firstLines.first == "GET \(origin)/me -> 503, 12 ms, 0 bytes, error: unacceptableStatusCode(503)")
        #expect(
            firstLines.dropFirst().first
                == "GET \(origin)/me -> 401, 12 ms, 0 bytes, error: unacceptableStatusCode(401)")
        #expect(firstLines.last?.hasPrefix("GET \(origin)/me -> 200, 12 ms, ") == true)
        // The headers as sent: Courier's Accept, and the credential the authenticator added below the logger.
        #expect(
            log.all.allSatisfy { entry in
                entry.requestHeaders.map { "\($0.name): \($0.value)" }
                    == ["Accept: application/json", "Authorization: <redacted>"]
            })
        // The echo body repeats the Authorization header: the credential is scrubbed from bodies too.
        #expect(!log.everything.contains("fresh-1"))
        #expect(!log.everything.contains("expired"))
    }
}
