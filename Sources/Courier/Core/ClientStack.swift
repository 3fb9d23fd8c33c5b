/// A way of running one request that replaces the stack its ``NetworkClient``'s configuration built (see
/// ``NetworkConfiguration/Settings/clientStack``): set on a request (``NetworkRequest/runner``) by the initializers
/// that give a request retries or response handling of its own.
protocol RequestRunner: Sendable {
    /// Runs `request`.
    /// - Parameters:
    ///   - core: The client without any stack: it sends the request once, with no decorator around it.
    ///   - stack: What the configuration built around `core` for every request, for the runner to read; `nil` when it
    ///     built nothing.
    func run<RequestModel, ResponseModel>(
        _ request: NetworkRequest<RequestModel, ResponseModel>, core: any NetworkClientProtocol,
        stack: (any NetworkClientProtocol)?
    ) async throws -> NetworkResponse<ResponseModel>
}

/// A ``NetworkClient`` seen without its stack, so that decorators can wrap it: it sends each request once.
struct CoreClient: NetworkClientProtocol {
    let client: NetworkClient

    func run<RequestModel, ResponseModel>(
        _ networkRequest: NetworkRequest<RequestModel, ResponseModel>
    ) async throws -> NetworkResponse<ResponseModel> {
        try await client.runDirectly(networkRequest)
    }
}
