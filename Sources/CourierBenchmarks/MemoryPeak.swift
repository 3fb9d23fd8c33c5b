import Courier
import Foundation
import LoopbackHTTPServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one-request runs of `--memory`: each is meant to be the only work of its process, so that the peak resident
/// set (`getrusage` `ru_maxrss`) is its own. `/usr/bin/time -v` reports the same figure.
enum MemoryScenario: String, Sendable, CaseIterable {
    /// 300 MB into `Data` through Courier (`NetworkConfiguration(baseURL:)`), `maximumResponseSize` raised to 400 MB.
    case courier300MB = "courier-300mb"
    /// The same 300 MB with raw `URLSession.data(for:)` on a session of its own (`.default`).
    case raw300MB = "raw-300mb"
    /// A gzip bomb that inflates to 4 GiB (27 MB of gzip, so its declared length is under the limit) against Courier's
    /// default 100 MiB limit. The server sends at most 2 MB of gzip (about 300 MiB inflated), so that a client
    /// without the limit cannot take the machine down.
    case courierGzipBomb = "courier-gzip-bomb"
}

/// The peak resident set of this process so far, in bytes.
func peakResidentBytes() -> Int {
    guard let usage = processUsage() else { return 0 }
    #if canImport(Darwin)
    return Int(usage.ru_maxrss)  // bytes on Darwin
    #else
    return Int(usage.ru_maxrss) * 1024  // kilobytes on Linux
    #endif
}

/// Runs one `--memory` scenario and prints one line: the outcome and the peak resident set before and after.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func runMemory(_ scenario: MemoryScenario) async throws {
    let bodySize = 300_000_000
    let server = try LoopbackServer { request in
        switch request.path {
        case "/body": .stream(length: bodySize)
        case "/bomb": .gzipBomb(expandedSize: 4 << 30, holdAfter: 2_000_000)
        default: .respond(status: 200, body: Data("ok".utf8))
        }
    }
    defer { server.stop() }
    let baseline = peakResidentBytes()
    let clock = ContinuousClock()
    let start = clock.now
    let outcome: String
    switch scenario {
    case .courier300MB:
        let configuration = NetworkConfiguration(baseURL: server.baseURL)
        configuration.maximumResponseSize = 400_000_000
        let data = try await NetworkClient(configuration: configuration)
            .run(NetworkRequest<VoidRequest, Data>(path: "body", method: .get)).value
        outcome = "received \(data.count) bytes"
    case .raw300MB:
        let session = URLSession(configuration: .default)
        defer { session.finishTasksAndInvalidate() }
        let (data, _) = try await session.data(for: URLRequest(url: server.url("/body")))
        outcome = "received \(data.count) bytes"
    case .courierGzipBomb:
        let client = NetworkClient(configuration: NetworkConfiguration(baseURL: server.baseURL))
        do {
            let data = try await client.run(
                NetworkRequest<VoidRequest, Data>(path: "bomb", method: .get, timeoutInterval: 10)
            )
            .value
            outcome = "UNEXPECTED: received \(data.count) bytes"
        } catch {
            outcome = "\(error)"
        }
    }
    let seconds =
        Double((clock.now - start).components.seconds) + Double((clock.now - start).components.attoseconds) / 1e18
    let peak = peakResidentBytes()
    print(
        "\(scenario.rawValue): peak RSS \(peak / 1_000_000) MB (\(baseline / 1_000_000) MB before the request), "
            + String(format: "%.1f s", seconds) + ": \(outcome)")
}
