import Foundation
import LoopbackHTTPServer

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The paths the benchmark requests; an external server given with `--base-url` must serve them.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
enum EndpointPath {
    /// The small object.
    static let small = "/small.json"
    /// The 1 MB array.
    static let large = "/large.json"
    /// Accepts a POST and answers the small object.
    static let post = "/post"
    /// Answers the small object after ``slowDelay``.
    static let slow = "/slow"
    /// How long `/slow` waits before answering.
    static let slowDelay = Duration.milliseconds(50)
    /// Answers the small object after ``slowerDelay``, and counts the requests it answered (`GET /slower/count`):
    /// long enough for a thousand identical calls to join one under callgrind (`--profile dedup-waiters`).
    static let slower = "/slower"
    static let slowerDelay = Duration.seconds(1)
    /// The small object with `Cache-Control: max-age=86400`: what a `ResponseCache` serves fresh.
    static let cached = "/cached.json"
    /// A `text/event-stream` of one small event, then the end: a stream's opening and reading.
    static let events = "/events"
}

/// Where the requests go: the in-process loopback server, or an external server such as nginx.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct Target: Sendable {
    /// The base URL as text, without a trailing slash; raw requests append their path to it.
    let base: String
    /// The same base URL, for ``Courier/NetworkConfiguration``.
    let baseURL: URL
    /// The in-process server, or `nil` with `--base-url`.
    let server: LoopbackServer?
    /// The one session both the raw and the Courier side use: `.ephemeral` without a `URLCache`. On Linux Courier
    /// derives a driven session from its configuration (same settings), so both sides do the same work.
    let session: URLSession

    /// `base` without a `URLCache`: on Linux the configuration of the session Courier creates or derives from it,
    /// so that raw URLSession and Courier do the same work (a cache lookup costs about a tenth of a small request).
    static func sessionConfiguration(_ base: URLSessionConfiguration) -> URLSessionConfiguration {
        let configuration = base
        #if canImport(FoundationNetworking)
        configuration.urlCache = nil
        #endif
        return configuration
    }

    /// Starts the in-process server, or points at `externalBaseURL` when it is given.
    init(externalBaseURL: String?) throws {
        let server: LoopbackServer?
        var base: String
        if let externalBaseURL {
            server = nil
            base = externalBaseURL
        } else {
            let started = try Self.startServer()
            server = started
            base = started.baseURL.absoluteString
        }
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: base), url.scheme != nil, url.host != nil else {
            throw BenchmarkError.usage("not an absolute http URL: \(base)")
        }
        self.base = base
        self.baseURL = url
        self.server = server
        self.session = URLSession(configuration: Self.sessionConfiguration(.ephemeral))
    }

    /// Starts a loopback server that answers the ``EndpointPath`` paths with the ``Fixtures`` bytes.
    static func startServer() throws -> LoopbackServer {
        let small = Fixtures.small
        let large = Fixtures.large
        let json = [ServerHeader(name: "Content-Type", value: "application/json")]
        // The requests `/slower` answered.
        let slowerCount = GuardedValue(0)
        return try LoopbackServer { request in
            switch (request.method, request.path) {
            case ("GET", EndpointPath.slower + "/count"):
                return .respond(status: 200, body: Data(String(slowerCount.withLock { $0 }).utf8))
            case ("GET", EndpointPath.slower):
                slowerCount.withLock { $0 += 1 }
                return .respond(status: 200, headers: json, body: small, delay: EndpointPath.slowerDelay)
            case ("GET", EndpointPath.cached):
                return .respond(
                    status: 200, headers: json + [ServerHeader(name: "Cache-Control", value: "max-age=86400")],
                    body: small)
            case ("GET", EndpointPath.events):
                return .respond(
                    status: 200, headers: [ServerHeader(name: "Content-Type", value: "text/event-stream")],
                    body: Data("data: ".utf8) + small + Data("\n\n".utf8))
            default: break
            }
            return switch (request.method, request.path) {
            case ("GET", EndpointPath.small): .respond(status: 200, headers: json, body: small)
            case ("GET", EndpointPath.large): .respond(status: 200, headers: json, body: large)
            case ("POST", EndpointPath.post): .respond(status: 200, headers: json, body: small)
            case ("GET", EndpointPath.slow):
                .respond(status: 200, headers: json, body: small, delay: EndpointPath.slowDelay)
            case (_, EndpointPath.small), (_, EndpointPath.large), (_, EndpointPath.post), (_, EndpointPath.slow):
                .respond(status: 405)
            default: .respond(status: 404)
            }
        }
    }

    /// A human-readable description of where requests go.
    var description: String {
        server == nil ? "external server at \(base)" : "in-process LoopbackHTTPServer at \(base)"
    }

    /// Stops the in-process server, if any, and invalidates the session.
    func shutDown() {
        session.finishTasksAndInvalidate()
        server?.stop()
    }
}

/// Why the benchmark cannot go on.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
enum BenchmarkError: Error, CustomStringConvertible {
    /// The command line is wrong.
    case usage(String)
    /// A request failed or answered something unexpected.
    case badResponse(String)

    var description: String {
        switch self {
        case .usage(let message): "usage error: \(message) (see --help)"
        case .badResponse(let message): "bad response: \(message)"
        }
    }
}
