import Courier
import CourierObservability
import Foundation
import InMemoryLogging
import InMemoryTracing
import Logging
import MetricsTestKit
import Testing
import Tracing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private struct Memo: Codable, Sendable, Equatable {
    let id: Int
    let text: String
}

private typealias GetMemo = NetworkRequest<VoidRequest, Memo>

private func configuration(_ transport: InMemoryTransport) -> NetworkConfiguration {
    NetworkConfiguration(transport: transport, baseURL: URL(string: "https://memos.test/api")!)
}

/// Answers `/api/memos/1` with a memo, `/api/missing` with 404, anything else with 503.
private func memoTransport() -> InMemoryTransport {
    InMemoryTransport { request in
        switch request.url.path {
        case "/api/memos/1": .json(#"{"id":1,"text":"hello"}"#)
        case "/api/missing": .status(404)
        default: .status(503)
        }
    }
}

private let secretRequest = GetMemo(
    path: "/memos/1", method: .get, queryItems: [URLQueryItem(name: "api_key", value: "k3y-in-query")],
    additionalHeaders: ["Authorization": "Bearer s3cr3t-t0ken"])

@Suite("swift-log bridge")
struct SwiftLogBridgeTests {
    @Test("A success logs at info and a 404 at warning, parts as metadata, secrets redacted")
    func infoLevel() async throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "courier.test") { _ in handler }
        logger.logLevel = .info
        let client = NetworkClient(configuration: configuration(memoTransport())).logged(to: logger)

        _ = try await client.run(secretRequest)
        await #expect(throws: NetworkClientError.self) { try await client.run(GetMemo(path: "/missing", method: .get)) }

        let entries = handler.entries
        try #require(entries.count == 2)
        #expect(entries[0].level == .info)
        #expect(entries[0].metadata["http.method"] == "GET")
        #expect(entries[0].metadata["http.status"]?.description == "200")
        #expect(entries[0].metadata["http.url"]?.description.contains("api_key=<redacted>") == true)
        #expect(entries[0].metadata["duration_ms"] != nil)
        #expect(entries[0].metadata["request.headers"] == nil)  // Only when the logger writes debug.
        #expect(entries[1].level == .warning)
        #expect(entries[1].metadata["http.status"]?.description == "404")
        #expect(entries[1].metadata["error"] == "unacceptableStatusCode(404)")
        let everything = entries.map { "\($0.message) \($0.metadata)" }.joined()
        #expect(!everything.contains("s3cr3t"))
        #expect(!everything.contains("k3y-in-query"))
    }

    @Test("A debug logger gets the headers as metadata, the credential redacted; a transport failure logs at error")
    func debugLevel() async throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "courier.test") { _ in handler }
        logger.logLevel = .debug
        let failing = InMemoryTransport { request in
            if request.url.path == "/api/down" { throw URLError(.cannotConnectToHost) }
            return .json(#"{"id":1,"text":"hello"}"#)
        }
        let client = NetworkClient(configuration: configuration(failing)).logged(to: logger)

        _ = try await client.run(secretRequest)
        await #expect(throws: NetworkClientError.self) { try await client.run(GetMemo(path: "/down", method: .get)) }

        let entries = handler.entries
        try #require(entries.count == 2)
        #expect(entries[0].level == .debug)
        guard case .dictionary(let headers) = entries[0].metadata["request.headers"] else {
            Issue.record("no request headers in \(entries[0].metadata)")
            return
        }
        #expect(headers["Authorization"] == "<redacted>")
        #expect(entries[0].metadata["response.body"]?.description.contains("hello") == true)
        #expect(entries[1].level == .error)
        #expect(entries[1].metadata["error"] == "transportFailed(cannotConnectToHost)")
        #expect(!entries.map { "\($0.message) \($0.metadata)" }.joined().contains("s3cr3t"))
    }
}

@Suite("swift-metrics bridge")
struct SwiftMetricsBridgeTests {
    @Test("A timer and counters by method, status class and origin; errors counted by case; no path in a dimension")
    func metrics() async throws {
        let metrics = TestMetrics()
        let client = NetworkClient(configuration: configuration(memoTransport())).reportingMetrics(to: metrics)

        _ = try await client.run(secretRequest)
        _ = try await client.run(GetMemo(path: "/memos/1", method: .get))
        await #expect(throws: NetworkClientError.self) { try await client.run(GetMemo(path: "/busy", method: .get)) }

        let ok = [("method", "GET"), ("status_class", "2xx"), ("origin", "https://memos.test")]
        let failed = [("method", "GET"), ("status_class", "5xx"), ("origin", "https://memos.test")]
        #expect(try metrics.expectCounter("courier.requests", ok).totalValue == 2)
        #expect(try metrics.expectCounter("courier.requests", failed).totalValue == 1)
        #expect(try metrics.expectTimer("courier.request.duration", ok).values.count == 2)
        #expect(try metrics.expectTimer("courier.request.duration", failed).values.count == 1)
        let errors = try metrics.expectCounter("courier.errors", failed + [("error", "unacceptableStatusCode")])
        #expect(errors.totalValue == 1)
        #expect(metrics.counters(label: "courier.errors").count == 1)
        let dimensions = (metrics.counters.flatMap(\.dimensions) + metrics.timers.flatMap(\.dimensions)).map(\.1)
        #expect(dimensions.allSatisfy { !$0.contains("/api") && !$0.contains("k3y") })
    }

    @Test("A call that never got a response has status class none")
    func noResponse() async throws {
        let metrics = TestMetrics()
        let transport = InMemoryTransport { _ in throw URLError(.timedOut) }
        let client = NetworkClient(configuration: configuration(transport)).reportingMetrics(prefix: "api", to: metrics)
        await #expect(throws: NetworkClientError.self) { try await client.run(GetMemo(path: "/x", method: .get)) }
        let dimensions = [("method", "GET"), ("status_class", "none"), ("origin", "https://memos.test")]
        #expect(try metrics.expectCounter("api.requests", dimensions).totalValue == 1)
        #expect(
            try metrics.expectCounter("api.errors", dimensions + [("error", "transportFailed(timedOut)")]).totalValue
                == 1)
    }
}

@Suite("swift-distributed-tracing bridge")
struct TracingBridgeTests {
    @Test(
        "One client span per call, a child of the caller's; the context injected into every attempt; attempts as events"
    )
    func spanPerCall() async throws {
        let tracer = InMemoryTracer()
        let answers = AnswerSequence([.status(503), .json(#"{"id":1,"text":"hello"}"#)])
        let transport = InMemoryTransport { _ in answers.next() }
        let configuration = configuration(transport)
        configuration.interceptors = [TraceContextInterceptor()]
        let client = NetworkClient(configuration: configuration)
            .retrying(RetryPolicy(maxAttempts: 2, baseDelay: 0))
            .traced(with: tracer)

        let parent = tracer.startSpan("handle request", context: .topLevel, ofKind: .server)
        let memo = try await ServiceContext.$current.withValue(parent.context) {
            try await client.run(GetMemo(path: "/memos/1", method: .get)).value
        }
        parent.end()
        #expect(memo == Memo(id: 1, text: "hello"))

        let span = try #require(tracer.finishedSpans.first { $0.operationName == "GET" })
        #expect(span.kind == .client)
        #expect(span.traceID == tracer.finishedSpans.first { $0.operationName == "handle request" }?.traceID)
        #expect(span.parentSpanID != nil)
        #expect(span.attributes["http.request.method"]?.toSpanAttribute() == "GET")
        #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == 200)
        #expect(span.attributes["server.address"]?.toSpanAttribute() == "memos.test")
        #expect(span.events.map(\.name) == ["attempt", "attempt"])
        #expect(span.events.map { $0.attributes["attempt"]?.toSpanAttribute() } == [1, 2])
        #expect(span.status == nil)
        let requests = transport.requests
        try #require(requests.count == 2)
        for request in requests {
            #expect(request.header(InMemoryTracer.traceIDKey) == span.traceID)
            #expect(request.header(InMemoryTracer.spanIDKey) == span.spanID)
        }
    }

    @Test("A failed call's span records the error's case and an error status, never the error's text")
    func failedCall() async throws {
        let tracer = InMemoryTracer()
        let configuration = configuration(memoTransport())
        configuration.interceptors = [TraceContextInterceptor()]
        let client = NetworkClient(configuration: configuration).traced(with: tracer)

        await #expect(throws: NetworkClientError.self) { try await client.run(GetMemo(path: "/missing", method: .get)) }

        let span = try #require(tracer.finishedSpans.first)
        #expect(span.status?.code == .error)
        #expect(span.status?.message == "unacceptableStatusCode")
        #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == 404)
        #expect(span.attributes["error.type"]?.toSpanAttribute() == "unacceptableStatusCode")
        #expect(span.errors.count == 1)
        #expect(span.events.count == 1)
        // Without a span of the caller's, the call's span starts a trace of its own.
        #expect(span.parentSpanID == nil)
    }
}

/// Hands out canned answers in order, the last one again once they run out.
private final class AnswerSequence: Sendable {
    private let answers: [InMemoryTransport.Response]
    private let index = NSLockedCounter()

    init(_ answers: [InMemoryTransport.Response]) {
        self.answers = answers
    }

    func next() -> InMemoryTransport.Response {
        answers[min(index.next(), answers.count - 1)]
    }
}

/// A counter under a lock.
private final class NSLockedCounter: @unchecked Sendable {  // `value` is read and written under `lock` only.
    private let lock = NSLock()
    private var value = 0

    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        defer { value += 1 }
        return value
    }
}
