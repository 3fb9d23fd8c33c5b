import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The pages of a paginated endpoint, one ``NetworkResponse`` per page, requested one at a time as they are read.
///
/// Made by ``NetworkClientProtocol/pages(of:next:)`` (your rule for the next page: a cursor in the body, an absolute
/// `next_url`, a page number) or ``NetworkClientProtocol/pages(of:allowingOtherOrigins:)`` (the RFC 8288
/// `Link: <…>; rel="next"` header, GitHub's style).
///
/// - **Lazy:** a page is requested when the loop asks for it, never ahead; breaking out of the loop sends nothing
///   more.
/// - **Through `run`:** every page goes through the client's ``NetworkClientProtocol/run(_:)``, so every decorator
///   applies to every page (retries, throttling, the credential and its origin rule, logging) and a
///   ``StubNetworkClient`` can serve pages.
/// - **Cancellable:** cancelling the task that iterates cancels the page in flight (`CancellationError`).
/// - **Ends:** when there is no next page, or with an error: the page's own (``NetworkClientError``, thrown by the
///   iteration), a ``PaginationError`` for a next page that repeats one already served (a loop) or a `Link` that is
///   refused (another origin that is not allowed, a scheme other than `http` or `https`), or what the `next` closure
///   threw. Every page that arrived is delivered first: an error about the next page is thrown by the step after the
///   page that led to it. After an error, the sequence ends.
/// - **Secrets stay home:** a next page on another origin (a `Link` followed with `allowingOtherOrigins: true`, or a
///   request made by ``NetworkRequest/replacingURL(with:)``) goes there as a cross-origin redirect would: without the
///   configuration's ``NetworkConfiguration/sensitiveHeaders`` (`Authorization`, `Cookie` and `Proxy-Authorization`
///   among them), whether the request or an interceptor set them, and without an ``AuthenticatingClient``'s
///   credential unless it names that origin.
public struct Pages<RequestModel: Encodable & Sendable, Page: Decodable & Sendable>: AsyncSequence, Sendable {
    let client: any NetworkClientProtocol
    let first: NetworkRequest<RequestModel, Page>
    let next: @Sendable (NetworkResponse<Page>) throws -> NetworkRequest<RequestModel, Page>?

    /// Creates an iterator that starts at the first page.
    public func makeAsyncIterator() -> Iterator {
        Iterator(pages: self)
    }

    /// Requests the pages one by one.
    public struct Iterator: AsyncIteratorProtocol {
        private let pages: Pages
        private var upcoming: NetworkRequest<RequestModel, Page>?
        /// Why there is no next page, when the last page's `next` threw: thrown once that page was delivered.
        private var ending: (any Error)?
        /// The URLs of the pages served so far, to end a loop.
        private var seen: Set<String> = []

        init(pages: Pages) {
            self.pages = pages
            self.upcoming = pages.first
        }

        /// Requests the next page; `nil` once there is none.
        ///
        /// - Throws: What the client throws for the page; ``PaginationError`` for a loop or a refused `Link`, or what
        ///   `next` threw, at the step after the page it was about; `CancellationError` when the task is cancelled.
        ///   The sequence ends after an error.
        public mutating func next() async throws -> NetworkResponse<Page>? {
            if let ending {
                self.ending = nil
                throw ending
            }
            guard let request = upcoming else { return nil }
            upcoming = nil
            // A link back to a page already served is refused before it is sent.
            if request.path == nil, request.queryItems == nil, request.body == nil, request.formItems == nil,
                let url = request.baseURL, seen.contains(url.absoluteString)
            {
                throw PaginationError.repeatedPage(url: Redaction.url(url))
            }
            let response = try await pages.client.run(request)
            // A page served from a URL already seen would start the same pages over again. A request with a body
            // (a cursor sent in a POST) is told apart by its body, which the URL does not show: not checked.
            if request.body == nil, request.formItems == nil, let url = response.response.url {
                let key = url.absoluteString
                guard seen.insert(key).inserted else {
                    throw PaginationError.repeatedPage(url: Redaction.url(url))
                }
            }
            // A page that arrived is delivered, whatever its next link: a refused one ends the pages after it.
            do {
                upcoming = try pages.next(response)
            } catch {
                ending = error
            }
            return response
        }
    }
}

/// Why a ``Pages`` sequence ended with an error of its own.
public enum PaginationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A page came from a URL that an earlier page of the same sequence came from: following it would loop. `url`
    /// has its query values redacted.
    case repeatedPage(url: String)
    /// The `Link: rel="next"` points to another origin (`scheme://host:port`) and the sequence was not made with
    /// `allowingOtherOrigins: true`. Nothing was sent there.
    case linkToOtherOrigin(origin: String)
    /// The `Link: rel="next"` target is not an `http` or `https` URL (its text is not kept: it may carry a secret).
    case unsupportedLink(scheme: String)

    /// A description safe to log.
    public var description: String {
        switch self {
        case .repeatedPage(let url):
            return "The next page repeats a page already served (\(url)): the pages end here instead of looping."
        case .linkToOtherOrigin(let origin):
            return "The next page's link points to another origin (\(origin)), which these pages may not follow."
        case .unsupportedLink(let scheme):
            return "The next page's link is not an http or https URL (scheme \(String(reflecting: scheme)))."
        }
    }
}

extension NetworkClientProtocol {
    /// The pages that start with `request`, each next one the request `next` returns for the page before.
    ///
    /// ```swift
    /// for try await page in client.pages(of: ItemsAPI.list(), next: { page in
    ///     page.value.next.map { ItemsAPI.list(after: $0) }
    /// }) {
    ///     items += page.value.rows
    /// }
    /// ```
    ///
    /// For an absolute `next_url` in the body, `next` returns `request.replacingURL(with: url)`, which keeps secrets
    /// off another origin as a cross-origin redirect does (see ``NetworkRequest/replacingURL(with:)``). A request to
    /// another origin does not carry an ``AuthenticatingClient``'s credential, whatever `next` returns.
    /// - Parameters:
    ///   - request: The first page's request.
    ///   - next: Returns the request of the page after the given one, or `nil` to end. What it throws ends the
    ///     sequence with that error.
    /// - Returns: A lazy ``Pages`` sequence.
    public func pages<RequestModel, Page>(
        of request: NetworkRequest<RequestModel, Page>,
        next: @escaping @Sendable (NetworkResponse<Page>) throws -> NetworkRequest<RequestModel, Page>?
    ) -> Pages<RequestModel, Page> {
        Pages(client: self, first: request, next: next)
    }

    /// The pages that start with `request` and follow the RFC 8288 `Link` header's `rel="next"` target (GitHub's
    /// style, `Link: <https://api.example.com/items?page=2>; rel="next"`), resolved against the page's URL, so
    /// relative links work. The sequence ends on a page without a `next` link.
    ///
    /// Each next page is `request` sent to that URL exactly (``NetworkRequest/replacingURL(with:)``): same method,
    /// headers and options.
    /// - Parameters:
    ///   - request: The first page's request.
    ///   - allowingOtherOrigins: Whether a link to another origin than the first page's is followed; `false` by
    ///     default, and such a link ends the sequence with ``PaginationError/linkToOtherOrigin(origin:)`` after the
    ///     page that carried it. When it is followed, the request goes there as a cross-origin redirect would:
    ///     without the configuration's ``NetworkConfiguration/sensitiveHeaders`` (`Authorization`, `Cookie` and
    ///     `Proxy-Authorization` among them), whether the request or an interceptor set them, and with an
    ///     ``AuthenticatingClient``'s credential only if it names that origin.
    /// - Returns: A lazy ``Pages`` sequence.
    public func pages<RequestModel, Page>(
        of request: NetworkRequest<RequestModel, Page>, allowingOtherOrigins: Bool = false
    ) -> Pages<RequestModel, Page> {
        let firstOrigin = Locked<String?>(nil)
        return Pages(client: self, first: request) { page in
            guard let here = page.response.url, let origin = Origin.of(here) else { return nil }
            let home = firstOrigin.withLock { first in
                if first == nil { first = origin }
                return first ?? origin
            }
            let links = (page.response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Link") ?? ""
            guard let target = LinkHeader.target(of: "next", in: links),
                let url = URL(string: target, relativeTo: here)?.absoluteURL
            else { return nil }
            let scheme = url.scheme?.lowercased() ?? ""
            guard scheme == "http" || scheme == "https" else { throw PaginationError.unsupportedLink(scheme: scheme) }
            guard let there = Origin.of(url) else { throw PaginationError.unsupportedLink(scheme: scheme) }
            guard there == home || allowingOtherOrigins else { throw PaginationError.linkToOtherOrigin(origin: there) }
            // On another origin, the client keeps the secrets off it: the request continues the first one's origin.
            return request.replacingURL(with: url)
        }
    }
}

extension NetworkRequest {
    /// This request sent to `url` exactly: the same method, body, headers, coders, timeouts, limits and options,
    /// with `url` as its ``baseURL`` and no ``path`` or ``queryItems`` of its own (so `url`'s query is kept as it is).
    ///
    /// For an absolute next-page URL from a response body. Should `url` be on another origin than this request's
    /// (its ``baseURL``, else the configuration's), the new request goes there as a cross-origin redirect would:
    /// Courier's client removes the configuration's ``NetworkConfiguration/sensitiveHeaders`` (`Authorization`,
    /// `Cookie` and `Proxy-Authorization` among them) once the interceptors ran, whoever set them, and an
    /// ``AuthenticatingClient``'s credential goes only to the origins it names. Replacing the URL again keeps the
    /// first request's origin as the one to compare with.
    /// - Parameter url: The absolute URL to send the request to.
    /// - Returns: The new request.
    public func replacingURL(with url: URL) -> NetworkRequest {
        var copy = NetworkRequest(
            path: nil, method: method, queryItems: nil, formItems: formItems, body: body, baseURL: url,
            decoder: decoder, encoder: encoder, additionalHeaders: additionalHeaders, timeoutInterval: timeoutInterval,
            totalTimeout: totalTimeout, maximumResponseSize: maximumResponseSize,
            acceptableStatusCodes: acceptableStatusCodes, downloadDestination: downloadDestination,
            onProgress: onProgress, options: options, maximumStreamItemSize: maximumStreamItemSize,
            reconnection: reconnection)
        copy.credentialScope = credentialScope
        copy.interceptors = interceptors
        copy.adaptation = adaptation
        copy.sendRecorders = sendRecorders
        copy.replacedFrom = replacedFrom ?? baseURL.flatMap(Origin.of).map(ReplacedOrigin.origin) ?? .configured
        return copy
    }
}

/// The origin a request made by ``NetworkRequest/replacingURL(with:)`` continues from.
enum ReplacedOrigin: Sendable, Hashable {
    /// The base URL of the configuration of the client that runs it.
    case configured
    /// This origin (`scheme://host:port`, as ``Origin/of(_:)`` writes it).
    case origin(String)

    /// The origin, with `configured` standing for the configuration's.
    func resolved(configured: String?) -> String? {
        switch self {
        case .configured: return configured
        case .origin(let origin): return origin
        }
    }
}

/// Reading an RFC 8288 `Link` header.
enum LinkHeader {
    /// The target (as written between `<` and `>`) of the first link whose `rel` holds `relation`
    /// (case-insensitively; `rel` may list several, space-separated); `nil` when there is none.
    static func target(of relation: String, in header: String) -> String? {
        var rest = Substring(header)
        while let open = rest.firstIndex(of: "<") {
            guard let close = rest[open...].firstIndex(of: ">") else { return nil }
            let target = rest[rest.index(after: open)..<close]
            rest = rest[rest.index(after: close)...]
            // The parameters run to the next comma outside a quoted string.
            var parameters = ""
            var quoted = false
            var end = rest.endIndex
            for index in rest.indices {
                let character = rest[index]
                if character == "\"" { quoted.toggle() }
                if character == "," && !quoted {
                    end = index
                    break
                }
                parameters.append(character)
            }
            rest = rest[end...]
            for parameter in parameters.split(separator: ";") {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "rel" else {
                    continue
                }
                let value = pair[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(
                    in: CharacterSet(charactersIn: "\""))
                if value.lowercased().split(separator: " ").contains(Substring(relation.lowercased())) {
                    return String(target).trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return nil
    }
}
