import Foundation

/// Where a request to a ``StubNetworkClient`` goes, written as a request to the stub is written: a base URL of its own
/// (`nil` for the stub's), a path and query items.
///
/// A request without a path of its own whose base URL carries a path or a query (a `Link` that ``Pages`` follows, a
/// request made by ``NetworkRequest/replacingURL(with:)``) is split the way its URL reads: under the stub's base URL,
/// it has no base URL of its own and the path relative to the stub's (so `stub(.get, "/items", …)` serves
/// `https://stub.invalid/items?page=2`); elsewhere, its origin is its base URL. Its query becomes query items, before
/// the request's own. Any other request is recorded as given.
struct StubPlace {
    let baseURL: URL?
    let path: String?
    let queryItems: [URLQueryItem]

    init<RequestModel, ResponseModel>(of request: NetworkRequest<RequestModel, ResponseModel>, under stubBase: URL) {
        let own = request.queryItems ?? []
        guard let url = request.baseURL, request.path?.isEmpty ?? true,
            let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            components.percentEncodedQuery != nil || !["", "/"].contains(components.path)
        else {
            self.init(baseURL: request.baseURL, path: request.path, queryItems: own)
            return
        }
        let path = components.path
        let query = (components.queryItems ?? []) + own
        var basePath = URLComponents(url: stubBase, resolvingAgainstBaseURL: true)?.path ?? ""
        while basePath.hasSuffix("/") { basePath.removeLast() }
        if Origin.of(url) == Origin.of(stubBase), path == basePath || path.hasPrefix(basePath + "/") {
            let relative = String(path.dropFirst(basePath.count))
            self.init(baseURL: nil, path: relative.isEmpty ? nil : relative, queryItems: query)
            return
        }
        var origin = URLComponents()
        origin.scheme = components.scheme
        origin.host = components.host
        origin.port = components.port
        self.init(baseURL: origin.url ?? url, path: path.isEmpty ? nil : path, queryItems: query)
    }

    private init(baseURL: URL?, path: String?, queryItems: [URLQueryItem]) {
        self.baseURL = baseURL
        self.path = path
        self.queryItems = queryItems
    }
}
