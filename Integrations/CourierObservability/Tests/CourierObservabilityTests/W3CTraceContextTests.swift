import Courier
import CourierObservability
import Foundation
import InMemoryTracing
import Testing
import Tracing
import W3CTraceContext

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A tracer that propagates W3C trace context, as swift-otel's default propagator does: its spans are
/// `InMemoryTracer`'s (recorded for the test to read), with W3C-sized random IDs as lowercase hex, and it injects and
/// extracts `traceparent` and `tracestate` through swift-w3c-trace-context's `TraceContext`, which formats and
/// validates them.
private struct W3CPropagatingTracer: Tracer {
    let recorder = InMemoryTracer(
        idGenerator: InMemoryTracer.IDGenerator(
            nextTraceID: { TraceID.random().description }, nextSpanID: { SpanID.random().description }))

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        recorder.startSpan(
            operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID,
            line: line)
    }

    func forceFlush() {
        recorder.forceFlush()
    }

    func inject<Carrier, Inject: Injector>(
        _ context: ServiceContext, into carrier: inout Carrier, using injector: Inject
    ) where Carrier == Inject.Carrier {
        guard let span = context.inMemorySpanContext,
            let trace = try? TraceContext(traceParentHeaderValue: "00-\(span.traceID)-\(span.spanID)-01")
        else { return }
        injector.inject(trace.traceParentHeaderValue, forKey: "traceparent", into: &carrier)
        if let state = trace.traceStateHeaderValue { injector.inject(state, forKey: "tracestate", into: &carrier) }
    }

    func extract<Carrier, Extract: Extractor>(
        _ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract
    ) where Carrier == Extract.Carrier {
        guard let header = extractor.extract(key: "traceparent", from: carrier),
            let trace = try? TraceContext(traceParentHeaderValue: header)
        else { return }
        context.inMemorySpanContext = InMemorySpanContext(
            traceID: trace.traceID.description, spanID: trace.spanID.description, parentSpanID: nil)
    }
}

/// Reads header fields of an incoming request's dictionary, as a server framework's extractor would.
private struct HeaderExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? {
        carrier.first { $0.key.lowercased() == key }?.value
    }
}

/// Hands out canned answers in order, the last one again once they run out.
private final class Answers: @unchecked Sendable {  // `index` is read and written under `lock` only.
    private let answers: [InMemoryTransport.Response]
    private let lock = NSLock()
    private var index = 0

    init(_ answers: [InMemoryTransport.Response]) {
        self.answers = answers
    }

    func next() -> InMemoryTransport.Response {
        lock.lock()
        defer { lock.unlock() }
        defer { index += 1 }
        return answers[min(index, answers.count - 1)]
    }
}

private struct Memo: Codable, Sendable, Equatable {
    let id: Int
    let text: String
}

@Suite("W3C trace context")
struct W3CTraceContextTests {
    @Test("traced() and TraceContextInterceptor send a valid W3C traceparent naming the client span")
    func traceparentOfClientSpan() async throws {
        let tracer = W3CPropagatingTracer()
        let transport = InMemoryTransport { _ in .json(#"{"id":1,"text":"hello"}"#) }
        let configuration = NetworkConfiguration(transport: transport, baseURL: URL(string: "https://memos.test")!)
        configuration.interceptors = [TraceContextInterceptor()]
        let client = NetworkClient(configuration: configuration).traced(with: tracer)

        _ = try await client.run(NetworkRequest<VoidRequest, Memo>(path: "/memos/1", method: .get))

        let sent = try #require(transport.requests.first?.header("traceparent"))
        #expect(sent.wholeMatch(of: /00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}/) != nil, "traceparent: \(sent)")
        let received = try TraceContext(traceParentHeaderValue: sent)
        let span = try #require(tracer.recorder.finishedSpans.first)
        #expect(span.kind == .client)
        #expect(received.traceID.description == span.traceID)
        #expect(received.spanID.description == span.spanID)
        #expect(received.flags.contains(.sampled))
        // The call had no caller's span: its client span starts the trace.
        #expect(span.parentSpanID == nil)
    }

    @Test("An incoming traceparent continues: each attempt carries its trace ID and the client span as the parent")
    func incomingTraceContinues() async throws {
        let tracer = W3CPropagatingTracer()
        let answers = Answers([.status(503), .json(#"{"id":1,"text":"hello"}"#)])
        let transport = InMemoryTransport { _ in answers.next() }
        let configuration = NetworkConfiguration(transport: transport, baseURL: URL(string: "https://memos.test")!)
        configuration.interceptors = [TraceContextInterceptor()]
        let client = NetworkClient(configuration: configuration)
            .retrying(RetryPolicy(maxAttempts: 2, baseDelay: 0))
            .traced(with: tracer)

        // The request this service is handling came with a trace context of its caller's.
        let incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        var context = ServiceContext.topLevel
        tracer.extract(["Traceparent": incoming], into: &context, using: HeaderExtractor())
        _ = try await ServiceContext.$current.withValue(context) {
            try await client.run(NetworkRequest<VoidRequest, Memo>(path: "/memos/1", method: .get))
        }

        let span = try #require(tracer.recorder.finishedSpans.first { $0.operationName == "GET" })
        #expect(span.traceID == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(span.parentSpanID == "00f067aa0ba902b7")
        let sent = transport.requests.compactMap { $0.header("traceparent") }
        #expect(sent.count == 2)
        for header in sent {
            let received = try TraceContext(traceParentHeaderValue: header)
            #expect(received.traceID.description == "4bf92f3577b34da6a3ce929d0e0e4736")
            #expect(received.spanID.description == span.spanID)
            #expect(received.spanID.description != "00f067aa0ba902b7")
        }
    }
}
