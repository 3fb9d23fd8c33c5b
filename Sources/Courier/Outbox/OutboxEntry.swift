import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One request kept by an ``Outbox``, as its result handler and the event stream see it.
public struct OutboxEntry: Sendable, Hashable {
    /// The entry's identifier: its ticket's (``ticket``), returned by ``Outbox/enqueue(_:kind:orderingKey:)``.
    public let id: UUID
    /// The kind given at enqueue: it selects the result handler (``Outbox/onResult(kind:as:decoder:handler:)``).
    public let kind: String
    /// The ordering key given at enqueue; `nil` is the one global order.
    public let orderingKey: String?
    /// The `Idempotency-Key` header value sent on every attempt of this entry.
    public let idempotencyKey: String
    /// When the entry was enqueued.
    public let enqueuedAt: Date
}

/// The request an ``Outbox`` sends for an entry, as stored: what the `rewrite` hook of
/// ``Outbox/init(directory:client:rules:retryPolicy:limits:secrets:paused:rewrite:)`` may change before each send.
///
/// The body is already encoded (JSON, `Data` or form), so no Swift type is needed to send it after a restart.
public struct OutboxRequest: Sendable, Hashable {
    /// The entry this request belongs to.
    public let entry: OutboxEntry
    /// The HTTP method.
    public let method: HTTPMethod
    /// The path appended to the base URL, as in ``NetworkRequest/path``.
    public var path: String?
    /// The query items, in order.
    public var queryItems: [URLQueryItem]?
    /// The header fields sent with the request (`Content-Type` included); the `Idempotency-Key` is added after the
    /// rewrite and credentials by the wrapped client. Secret headers added here are refused at send time too.
    public var headers: [String: String]
    /// The encoded body bytes; `nil` for none. Form items are kept in ``formItems`` instead.
    public var body: Data?
    /// The items of a form-encoded body, encoded by the client at send time.
    public var formItems: [URLFormItem]?
    /// The base URL that replaces the client's for this request; `nil` for the client's.
    public let baseURL: URL?
    /// The idle timeout in seconds, as in ``NetworkRequest/timeoutInterval``.
    public let timeoutInterval: TimeInterval?
    /// The limit on the whole request in seconds, as in ``NetworkRequest/totalTimeout``.
    public let totalTimeout: TimeInterval?
}
