import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MicroClient 0.0.22–0.0.28: what a configuration's (or a request's) retry strategy, logger and response interceptors
// become: an adaptation (ClientAdaptation) that each NetworkClient builds once around its pipeline.

/// Retry, logging and response interceptors of a configuration created with MicroClient 0.0.22+'s initializer: its
/// adaptation (see ``ClientAdaptation``), which each ``NetworkClient`` on it builds once.
struct MicroClientOptions: ClientAdaptation {
    /// `nil` or one attempt: no retries.
    var retryPolicy: RetryPolicy?
    /// The logging decorator's level and sink; `nil` without a logger.
    var log: Log?
    var responseInterceptors: [any NetworkResponseInterceptor] = []

    /// What a ``LoggingClient`` is created with (a struct: the compiler crashed passing a tuple with a closure).
    struct Log: Sendable {
        let level: LogLevel
        let sink: @Sendable (LogEntry) -> Void
    }

    func client(around pipeline: NetworkClient.Pipeline) -> any NetworkClientProtocol {
        MicroClientStack(options: self, pipeline: pipeline)
    }
}

/// What a request created with MicroClient 0.0.18+'s initializers has of its own (its adaptation): its maximum
/// attempts replace the configuration's retry policy, its response interceptors replace the configuration's, and the
/// configuration's logger still logs every attempt. On a configuration without an adaptation of its own, the request
/// gets a stack of its own for the call.
struct MicroClientRequestOptions: ClientAdaptation {
    /// The request's own attempts; `nil` keeps the configuration's retry policy.
    let maxAttempts: Int?
    /// The request's own response interceptors; `nil` keeps the configuration's.
    let responseInterceptors: [any NetworkResponseInterceptor]?

    func client(around pipeline: NetworkClient.Pipeline) -> any NetworkClientProtocol {
        MicroClientStack(options: MicroClientOptions(), pipeline: pipeline)
    }
}

/// The decorators of a MicroClient-era configuration around a client's pipeline, built once per ``NetworkClient``:
/// `RetryingClient(LoggingClient(pipeline))`, every attempt logged, then the response interceptors, in the order the
/// Resilience article recommends. A request with attempts of its own gets a retrier of its own around the same
/// logger.
struct MicroClientStack: NetworkClientProtocol {
    let options: MicroClientOptions
    /// The logging decorator around the pipeline, or the pipeline.
    private let logged: any NetworkClientProtocol
    /// The retrying decorator around `logged`, or `logged`.
    private let chain: any NetworkClientProtocol

    init(options: MicroClientOptions, pipeline: NetworkClient.Pipeline) {
        self.options = options
        logged = options.log.map { LoggingDecorator(wrapping: pipeline, level: $0.level, sink: $0.sink) } ?? pipeline
        chain = Self.retrying(logged, options.retryPolicy)
    }

    /// `client` in a ``RetryingClient`` with `policy`, unless it allows one attempt only.
    private static func retrying(
        _ client: any NetworkClientProtocol, _ policy: RetryPolicy?
    ) -> any NetworkClientProtocol {
        guard let policy, policy.maxAttempts > 1 else { return client }
        return RetryingDecorator(wrapping: client, policy: policy)
    }

    /// Runs `networkRequest` through the chain (or, with attempts of its own, a retrier of its own around the logger),
    /// then the response interceptors in order on the response.
    func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        let own = networkRequest.adaptation as? MicroClientRequestOptions
        let chain = own?.maxAttempts.map { Self.retrying(logged, RetryPolicy(maxAttempts: $0)) } ?? chain
        var response = try await chain.run(networkRequest)
        for interceptor in own?.responseInterceptors ?? options.responseInterceptors {
            response = try await interceptor.intercept(response, response.data)
        }
        return response
    }
}

extension NetworkConfiguration {
    /// Makes every ``NetworkClient`` created on this configuration run its requests through `options`' decorators.
    func install(_ options: MicroClientOptions) {
        updateSettings { $0.adaptation = options }
    }
}

extension NetworkRequest {
    /// Gives the request what MicroClient 0.0.18+'s initializers add; each `nil` means "the configuration's". Such a
    /// request is never shared by ``DeduplicatingClient``: its closures cannot be compared.
    mutating func adopt(
        interceptors: [any NetworkRequestInterceptor]?, maxAttempts: Int?,
        responseInterceptors: [any NetworkResponseInterceptor]?
    ) {
        guard interceptors != nil || maxAttempts != nil || responseInterceptors != nil else { return }
        self.interceptors = interceptors
        if maxAttempts != nil || responseInterceptors != nil {
            adaptation = MicroClientRequestOptions(maxAttempts: maxAttempts, responseInterceptors: responseInterceptors)
        }
        options.allowsSharing = false
    }
}
