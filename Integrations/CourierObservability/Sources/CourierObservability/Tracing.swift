import Courier
import Foundation
import Tracing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A decorator that runs each call in a client span of swift-distributed-tracing: the span is named after the
/// method (`GET`), child of the caller's `ServiceContext`, carries the method, the status and the error, and ends
/// with the call.
///
/// The span's context reaches the server through ``TraceContextInterceptor``, which you add to the configuration:
/// it injects the context into each attempt's headers (with the tracer's propagation: W3C `traceparent` and
/// `tracestate` with swift-otel) and records each attempt (a retry, a credential renewal's second send) as an
/// `attempt` event on the span.
///
/// ```swift
/// configuration.interceptors.append(TraceContextInterceptor())
/// let client = NetworkClient(configuration: configuration).retrying().traced()
/// ```
///
/// Attributes (OpenTelemetry's names): `http.request.method`, `http.response.status_code` when a response arrived,
/// `server.address` and `server.port` from the first attempt's URL, `error.type` (the error's case, never its text)
/// on failure, when the span status is set to error. A cancelled call ends its span without an error status.
public struct TracingClient: NetworkClientProtocol {
    /// The client that runs the requests.
    public let wrapped: any NetworkClientProtocol
    /// The tracer; `nil` uses `InstrumentationSystem.tracer` (what the process bootstrapped) at each call.
    public let tracer: (any Tracer)?

    /// Wraps `client`, making spans with `tracer` (`nil`, the default: the bootstrapped tracer).
    public init(wrapping client: any NetworkClientProtocol, tracer: (any Tracer)? = nil) {
        self.wrapped = client
        self.tracer = tracer
    }

    /// Runs `networkRequest` inside a client span.
    ///
    /// - Throws: What the wrapped client throws, unchanged.
    public func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        let tracer = self.tracer ?? InstrumentationSystem.tracer
        let method = networkRequest.method.rawValue
        let span = tracer.startSpan(method, context: ServiceContext.current ?? .topLevel, ofKind: .client)
        span.attributes["http.request.method"] = method
        let call = TracedCall(span: span, tracer: tracer)
        defer { span.end() }
        do {
            let response = try await ServiceContext.$current.withValue(span.context) {
                try await TracedCall.$current.withValue(call) { try await wrapped.run(networkRequest) }
            }
            span.attributes["http.response.status_code"] = response.statusCode
            return response
        } catch {
            if case .unacceptableStatusCode(let status, _, _) = error as? NetworkClientError {
                span.attributes["http.response.status_code"] = status
            }
            if error is CancellationError { throw error }
            let name = TracedCall.errorType(error)
            span.attributes["error.type"] = name
            span.recordError(TracedCallError(type: name))
            span.setStatus(SpanStatus(code: .error, message: name))
            throw error
        }
    }
}

extension NetworkClientProtocol {
    /// Wraps this client so that each call runs in a client span (see ``TracingClient``); add
    /// ``TraceContextInterceptor`` to the configuration to send the trace context and record attempts.
    ///
    /// - Parameter tracer: The tracer; `nil` (the default) uses the bootstrapped one.
    /// - Returns: A ``TracingClient`` around this client.
    public func traced(with tracer: (any Tracer)? = nil) -> TracingClient {
        TracingClient(wrapping: self, tracer: tracer)
    }
}

/// An interceptor that injects the current trace context into each request's headers with the tracer's
/// propagation (W3C `traceparent` with swift-otel), and, inside a ``TracingClient``'s call, records the attempt as
/// an `attempt` event on its span (attribute `attempt`: 1, 2, …).
///
/// Interceptors run once per attempt, after the credential and the configuration's interceptors, so a retried call
/// shows each attempt. Outside a traced call it injects the task's `ServiceContext` (a server's incoming request's),
/// and nothing when there is none.
public struct TraceContextInterceptor: NetworkRequestInterceptor {
    /// The tracer whose propagation is used; `nil` (the default) uses the traced call's tracer, or the bootstrapped
    /// one.
    public let tracer: (any Tracer)?

    /// An interceptor with `tracer`'s propagation; `nil` (the default): the traced call's tracer, or the bootstrapped
    /// one.
    public init(tracer: (any Tracer)? = nil) {
        self.tracer = tracer
    }

    /// Injects the trace context into `request` and records the attempt.
    ///
    /// - Throws: Never.
    public func intercept(_ request: URLRequest) async throws -> URLRequest {
        let call = TracedCall.current
        let tracer = self.tracer ?? call?.tracer ?? InstrumentationSystem.tracer
        if let call {
            let attempt = call.nextAttempt()
            var attributes = SpanAttributes()
            attributes["attempt"] = attempt
            call.span.addEvent(SpanEvent(name: "attempt", attributes: attributes))
            if attempt == 1, let url = request.url, let host = url.host {
                call.span.attributes["server.address"] = host
                if let port = url.port { call.span.attributes["server.port"] = port }
            }
        }
        guard let context = ServiceContext.current else { return request }
        var request = request
        tracer.inject(context, into: &request, using: URLRequestInjector())
        return request
    }
}

/// Sets header fields of a `URLRequest`.
struct URLRequestInjector: Injector {
    func inject(_ value: String, forKey key: String, into request: inout URLRequest) {
        request.setValue(value, forHTTPHeaderField: key)
    }
}

/// The span of the traced call the current task runs, and its attempts so far.
final class TracedCall: @unchecked Sendable {  // `attempts` is read and written under `lock` only.
    @TaskLocal static var current: TracedCall?

    let span: any Span
    let tracer: any Tracer
    private let lock = NSLock()
    private var attempts = 0

    init(span: any Span, tracer: any Tracer) {
        self.span = span
        self.tracer = tracer
    }

    func nextAttempt() -> Int {
        lock.lock()
        defer { lock.unlock() }
        attempts += 1
        return attempts
    }

    /// The error's case, never its text: `unacceptableStatusCode`, `transportFailed(timedOut)`, or a type's name.
    static func errorType(_ error: any Error) -> String {
        guard let error = error as? NetworkClientError else { return String(describing: type(of: error)) }
        if case .transportFailed(let urlError) = error { return "transportFailed(\(urlError.code.rawValue))" }
        // The case's name (every case carries values, which may hold secrets and are left out).
        return Mirror(reflecting: error).children.first?.label ?? "NetworkClientError"
    }
}

/// The error a span records: the failure's case only (an error's text may carry a URL's secrets).
struct TracedCallError: Error, CustomStringConvertible {
    let type: String
    var description: String { type }
}
