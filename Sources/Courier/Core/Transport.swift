import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How a configuration's requests reach the network.
enum Transport: Sendable {
    /// A session Courier created (its own, or on Linux one derived from a caller's session that has no delegate),
    /// driven by its ``SessionDelegate``: size limit while receiving, deadline, every redirect decided.
    case driven(URLSession, SessionDelegate)
    /// A caller's session that Courier cannot drive, because the session's own delegate receives the callbacks. The
    /// size limit applies once the body is complete; on Apple platforms the guard is the per-task delegate.
    case callerSession(URLSession, RedirectGuard?)
    /// A test double of MicroClient 0.0.16+'s ``URLSessionProtocol``: Courier hands it the finished request and
    /// checks only the size limit (no redirect guard, no deadline: the double decides what happens).
    case sessionDouble(any URLSessionProtocol)

    /// Redirects Courier follows itself (307/308 with a body on Linux), like URLSession's own bound.
    static let maximumRedirects = 20

    /// The session requests go out on.
    var session: URLSession {
        switch self {
        case .driven(let session, _), .callerSession(let session, _): session
        case .sessionDouble: URLSession.shared
        }
    }

    /// Sends `request` and returns the final response with its body (or file).
    ///
    /// - Throws: `URLError` from the transfer (`.timedOut` when the deadline passed), `CancellationError`,
    ///   ``NetworkClientError/responseTooLarge(limit:)``, ``NetworkClientError/redirectRefused(reason:)`` or
    ///   ``NetworkClientError/fileAccessFailed(url:reason:)``.
    func send(_ request: TransferRequest) async throws -> ReceivedResponse {
        switch self {
        case .driven(let session, let delegate):
            var request = request
            for _ in 0...Self.maximumRedirects {
                switch try await delegate.send(request, on: session) {
                case .response(let received): return received
                case .redirect(let next): request.urlRequest = next
                }
            }
            throw URLError(.httpTooManyRedirects)
        case .callerSession(let session, let redirectGuard):
            // A credential's own header names join the configured ones for this request's redirects.
            let guardForRequest =
                request.sensitiveHeaders.isEmpty
                ? redirectGuard
                : redirectGuard.map {
                    RedirectGuard(sensitiveHeaders: $0.sensitiveHeaders.union(request.sensitiveHeaders))
                }
            let received = try await session.courierTransfer(request, delegate: guardForRequest)
            if received.data.count > request.limits.maximumResponseSize {
                throw NetworkClientError.responseTooLarge(limit: request.limits.maximumResponseSize)
            }
            return received
        case .sessionDouble(let double):
            guard request.uploadFile == nil, request.download == nil else {
                throw NetworkClientError.invalidRequest(
                    reason: "a URLSessionProtocol double sends in-memory bodies only, not file uploads or downloads")
            }
            let (data, response) = try await double.data(for: request.urlRequest, delegate: nil)
            if data.count > request.limits.maximumResponseSize {
                throw NetworkClientError.responseTooLarge(limit: request.limits.maximumResponseSize)
            }
            return ReceivedResponse(data: data, response: response)
        }
    }
}
