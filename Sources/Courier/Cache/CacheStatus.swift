/// Where a response came from, when a ``ResponseCache`` is set on the configuration
/// (``NetworkConfiguration/responseCache``): ``NetworkResponse/cacheStatus``.
///
/// It describes the last hop of the call (after redirects, the response that was decoded).
public enum CacheStatus: Sendable, Hashable, CustomStringConvertible {
    /// From the server: no cache is set, nothing usable was stored, or the request bypassed the cache (a download, a
    /// request with its own conditional or `Range` fields, a method other than `GET` and `HEAD`). The default.
    case network
    /// A stored response, fresh (or stale within the request's `max-stale`): nothing was sent.
    case fresh
    /// A stored response the server confirmed with `304 Not Modified`: its header fields were updated and its stored
    /// body served.
    case revalidated
    /// A stale stored response served at once under `stale-while-revalidate` while Courier revalidates it in the
    /// background.
    case staleWhileRevalidating
    /// A stale stored response served under `stale-if-error` because the server could not be reached or answered
    /// 500, 502, 503 or 504.
    case staleOnError
    /// The request said `only-if-cached` and nothing usable was stored: Courier answered `504 Gateway Timeout` itself
    /// and sent nothing.
    case unavailable

    /// Whether the body came from the cache (every case but ``network`` and ``unavailable``).
    public var isFromCache: Bool {
        switch self {
        case .network, .unavailable: false
        case .fresh, .revalidated, .staleWhileRevalidating, .staleOnError: true
        }
    }

    /// A short name: `network`, `fresh`, `revalidated`, `stale-while-revalidate`, `stale-if-error` or
    /// `unavailable (only-if-cached)`.
    public var description: String {
        switch self {
        case .network: "network"
        case .fresh: "fresh"
        case .revalidated: "revalidated"
        case .staleWhileRevalidating: "stale-while-revalidate"
        case .staleOnError: "stale-if-error"
        case .unavailable: "unavailable (only-if-cached)"
        }
    }
}
