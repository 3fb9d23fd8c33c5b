import Courier
import Foundation
import LoopbackHTTPServer
import Testing

/// What the README says about concurrent calls to one host: 6 connections by default, and how to raise it.
@Suite("Connections per host")
struct ConnectionLimitTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    private func maxConcurrent(calls: Int, connectionsPerHost: Int?) async throws -> Int {
        let server = try LoopbackServer { _ in .respond(status: 204, delay: .milliseconds(300)) }
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        if let connectionsPerHost { sessionConfiguration.httpMaximumConnectionsPerHost = connectionsPerHost }
        let client = NetworkClient(
            configuration: NetworkConfiguration(sessionConfiguration: sessionConfiguration, baseURL: server.baseURL))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<calls {
                group.addTask {
                    _ = try await client.run(NetworkRequest<VoidRequest, VoidResponse>(path: "/\(index)", method: .get))
                }
            }
            try await group.waitForAll()
        }
        return server.maxConcurrentRequests
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("By default at most 6 calls to one host are in progress at once; httpMaximumConnectionsPerHost raises it")
    func connectionsPerHost() async throws {
        #if os(Linux) || os(macOS)
        #expect(URLSessionConfiguration.default.httpMaximumConnectionsPerHost == 6)  // 4 on iOS.
        #endif
        #expect(try await maxConcurrent(calls: 12, connectionsPerHost: nil) <= 6)
        #expect(try await maxConcurrent(calls: 12, connectionsPerHost: 12) > 6)
    }
}
