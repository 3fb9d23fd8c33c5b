import Foundation

/// The origin of a URL, as the credential and redirect rules compare them.
enum Origin {
    /// `scheme://host:port`, lowercased, with the scheme's default port spelled out; `nil` without scheme or host.
    static func of(_ url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else {
            return nil
        }
        let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
        return "\(scheme)://\(host):\(port)"
    }
}
