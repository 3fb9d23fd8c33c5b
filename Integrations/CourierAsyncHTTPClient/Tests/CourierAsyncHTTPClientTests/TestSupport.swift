import Courier
import CourierAsyncHTTPClient
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `count` bytes of a pattern that repeats every 251 bytes, so that a shifted or reordered piece shows.
func patternBytes(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8($0 % 251) }
}

func temporaryFile(_ name: String) -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("courier-ahc-\(UUID().uuidString)-\(name)")
}

func client(_ transport: AsyncHTTPClientTransport, baseURL: URL) -> NetworkClient {
    NetworkClient(configuration: NetworkConfiguration(transport: transport, baseURL: baseURL))
}

/// A transport that trusts `authority` and presents `identity` when a server asks for a client certificate.
func mutualTLSTransport(
    trusting authority: TestAuthority, presenting identity: (certificatePEM: String, keyPEM: String)
) throws -> AsyncHTTPClientTransport {
    try AsyncHTTPClientTransport(
        tls: TLSOptions(
            trustRoots: .only(pem: try authority.pem),
            clientIdentity: TLSOptions.ClientIdentity(
                certificateChainPEM: identity.certificatePEM, privateKeyPEM: identity.keyPEM)))
}

/// Runs `body`, failing (instead of hanging) when it takes longer than `limit`: a generous hang limit, not a timing.
func withTimeLimit<T: Sendable>(
    _ limit: Duration, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw TimeLimitExceeded()
        }
        return value
    }
}

struct TimeLimitExceeded: Error {}

/// The `URLError` of a `transportFailed` error, or `nil`.
func transportError(_ error: (any Error)?) -> URLError? {
    guard case .transportFailed(let urlError) = error as? NetworkClientError else { return nil }
    return urlError
}

/// The `URLError` code of a `transportFailed` error, or `nil`.
func transportCode(_ error: (any Error)?) -> URLError.Code? {
    transportError(error)?.code
}

/// What `body` threw (`nil` when it returned), and when it returned or threw.
func failure(
    of body: @escaping @Sendable () async throws -> Void, limit: Duration = .seconds(60)
) async throws -> (error: (any Error)?, at: ContinuousClock.Instant) {
    try await withTimeLimit(limit) {
        do {
            try await body()
            return (nil, ContinuousClock.now)
        } catch {
            return (error, ContinuousClock.now)
        }
    }
}

/// The next time the server saw a connection close, failing after a generous hang limit.
func nextClosure(_ closures: AsyncStream<ContinuousClock.Instant>) async throws -> ContinuousClock.Instant {
    try await withTimeLimit(.seconds(30)) {
        var iterator = closures.makeAsyncIterator()
        guard let closed = await iterator.next() else { throw TimeLimitExceeded() }
        return closed
    }
}

/// The suites whose tests time what the transport does or flood a connection: one test at a time, so that none
/// measures the load another makes (the other suites still run beside them).
@Suite(.serialized) struct TimedSuites {}
