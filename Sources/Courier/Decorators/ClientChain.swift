import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A decorator that wraps one other client: lets a decorator find the ``NetworkConfiguration`` at the bottom of a
/// stack (for its base URL and sensitive headers) without asking the caller to pass it again.
protocol ClientChainLink {
    /// The client this one wraps.
    var chainWrapped: any NetworkClientProtocol { get }
}

extension DeduplicatingClient: ClientChainLink {
    var chainWrapped: any NetworkClientProtocol { wrapped }
}

extension SequentialClient: ClientChainLink {
    var chainWrapped: any NetworkClientProtocol { wrapped }
}

enum ClientChain {
    /// The configuration of the ``NetworkClient`` under `client`'s decorators; `nil` for another kind of client.
    static func configuration(of client: any NetworkClientProtocol) -> NetworkConfiguration? {
        var current = client
        // Bounded, though a chain cannot be cyclic: every link's `wrapped` is set once, at creation.
        for _ in 0..<64 {
            if let client = current as? NetworkClient { return client.configuration }
            guard let link = current as? any ClientChainLink else { return nil }
            current = link.chainWrapped
        }
        return nil
    }

    /// `scheme://host:port`, lowercased, with the scheme's default port spelled out; `nil` without scheme or host.
    static func origin(of url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else {
            return nil
        }
        let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
        return "\(scheme)://\(host):\(port)"
    }
}
