import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A MicroClient 0.0.16+ ``URLSessionProtocol`` test double, adapted onto the transport seam: each exchange's request
/// (interceptors applied) goes to the double's `data(for:delegate:)`, and its answer is the response. Courier's rules
/// hold above it as for any transport: the size limit, redirects, the deadline. A file upload, a download or a
/// streamed response fails with ``NetworkClientError/invalidRequest(reason:)``: a double answers in memory, whole.
struct URLSessionDoubleTransport: HTTPTransport {
    let double: any URLSessionProtocol

    func send(_ exchange: HTTPExchange) async throws {
        let sendsFile = if case .file = exchange.body { true } else { false }
        if sendsFile || exchange.prefersFileBody || exchange.isStream {
            throw NetworkClientError.invalidRequest(
                reason: "a URLSessionProtocol double answers in memory, whole: not file uploads, downloads or streams")
        }
        // The double runs in a task of its own, so that a stop (the deadline) ends the wait for it at once.
        let work = Task { [double, request = exchange.request] in try await double.data(for: request, delegate: nil) }
        exchange.whenStopped { work.cancel() }
        let (data, response) = try await withTaskCancellationHandler {
            try await work.value
        } onCancel: {
            work.cancel()
        }
        guard let head = response as? HTTPURLResponse else { throw NetworkClientError.invalidResponse(response) }
        if exchange.receive(head), !data.isEmpty { _ = exchange.receive(data) }
    }
}
