import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The persisted form of an entry: everything needed to send it after a restart.
struct StoredEntry: Codable, Sendable {
    var id: UUID
    var sequence: UInt64
    var kind: String
    var orderingKey: String?
    var idempotencyKey: String
    var enqueuedAt: Date
    var method: String
    var path: String?
    var queryItems: [StoredItem]?
    var formItems: [StoredItem]?
    var headers: [String: String]
    var body: Data?
    var baseURL: URL?
    var timeoutInterval: TimeInterval?
    var totalTimeout: TimeInterval?
    var maximumResponseSize: Int?
    var acceptableStatusCodes: [Int]?

    struct StoredItem: Codable, Sendable, Hashable {
        var name: String
        var value: String?
    }

    var entry: OutboxEntry {
        OutboxEntry(
            id: id, kind: kind, orderingKey: orderingKey, idempotencyKey: idempotencyKey, enqueuedAt: enqueuedAt)
    }

    var request: OutboxRequest {
        OutboxRequest(
            entry: entry, method: HTTPMethod(rawValue: method) ?? .post, path: path,
            queryItems: queryItems?.map { URLQueryItem(name: $0.name, value: $0.value) }, headers: headers,
            body: body, formItems: formItems?.map { URLFormItem(name: $0.name, value: $0.value) }, baseURL: baseURL,
            timeoutInterval: timeoutInterval, totalTimeout: totalTimeout)
    }

    /// The request to send: the (rewritten) stored request with the idempotency key, `Data` in and out.
    func networkRequest(_ request: OutboxRequest) -> NetworkRequest<Data, Data> {
        var headers = request.headers
        if !headers.keys.contains(where: { $0.caseInsensitiveCompare(Outbox.idempotencyHeader) == .orderedSame }) {
            headers[Outbox.idempotencyHeader] = idempotencyKey
        }
        return NetworkRequest<Data, Data>(
            path: request.path, method: request.method, queryItems: request.queryItems, formItems: request.formItems,
            body: request.body, baseURL: request.baseURL, additionalHeaders: headers,
            timeoutInterval: request.timeoutInterval, totalTimeout: request.totalTimeout,
            maximumResponseSize: maximumResponseSize, acceptableStatusCodes: acceptableStatusCodes.map(Set.init),
            // The outbox retries its entries itself: a RetryingClient in the stack must not multiply attempts.
            options: RequestOptions(allowsRetry: false))
    }
}

extension StoredEntry {
    var acceptable: Set<Int>? { acceptableStatusCodes.map(Set.init) }
}
