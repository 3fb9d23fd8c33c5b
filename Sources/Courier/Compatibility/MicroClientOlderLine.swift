import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MicroClient 0.0.1–0.0.15: the names SDKs of the older line use and Courier's own API does not already cover.
// Every name says the release it comes from; names that duplicate Courier's API are deprecated and name Courier's own.
// Left out on purpose: MicroClient 0.0.9–0.0.15's public `URLResponse.location` (an SDK that declares its own
// `location`, as MicroblogAPI does, would fail with "ambiguous use"), and the 0.0.13–0.0.17 `statusPublisher()`
// requirement (Combine, Apple only; a test double that still declares it compiles, see ``NetworkClientStatus``).

// MARK: - 0.0.1–0.0.6: `parameters`

extension NetworkRequest {
    /// Creates a request whose query is a dictionary of parameters: the initializer of MicroClient 0.0.1–0.0.6
    /// (`[String: String]?` before 0.0.5, `[String: String?]?` from 0.0.5; both are accepted).
    ///
    /// The parameters become ``queryItems`` **sorted by name**, so the URL is the same on every run (a dictionary has
    /// no order; MicroClient sent them in the dictionary's order). A `nil` value is a bare name (`?flag`), as in
    /// MicroClient. Everything else is Courier's own initializer.
    /// - Parameters:
    ///   - path: The path appended to the base URL.
    ///   - method: The HTTP method.
    ///   - parameters: The query parameters; `nil` sends no query.
    ///   - body: The body to JSON-encode (or `Data` to send as is); `nil` by default.
    ///   - decoder: A decoder for this request only; `nil` by default.
    ///   - encoder: An encoder for this request only; `nil` by default.
    ///   - additionalHeaders: Header fields to add; `nil` by default.
    @available(
        *, deprecated,
        message: "MicroClient 0.0.6: use Courier's init(path:method:queryItems:…) with URLQueryItem values"
    )
    public init(
        path: String,
        method: HTTPMethod,
        parameters: [String: String?]?,
        body: RequestModel? = nil,
        decoder: JSONDecoder? = nil,
        encoder: JSONEncoder? = nil,
        additionalHeaders: [String: String]? = nil
    ) {
        self.init(
            path: path, method: method, queryItems: MicroClientParameters.queryItems(parameters), body: body,
            decoder: decoder, encoder: encoder, additionalHeaders: additionalHeaders)
    }

    /// The query as a dictionary, as MicroClient 0.0.1–0.0.6 exposed it: ``queryItems`` by name (the last item wins
    /// when a name repeats); `nil` when the request has no query items.
    @available(*, deprecated, message: "MicroClient 0.0.6: use Courier's queryItems")
    public var parameters: [String: String?]? {
        guard let queryItems else { return nil }
        var parameters: [String: String?] = [:]
        for item in queryItems { parameters[item.name] = .some(item.value) }
        return parameters
    }
}

// MARK: - 0.0.1–0.0.6: public encode and decode

extension NetworkRequest {
    /// Encodes `payload` as a body, as MicroClient 0.0.1–0.0.6 exposed it: `Data` as is, anything else as JSON with
    /// the request's ``encoder``, else `defaultEncoder`.
    /// - Parameters:
    ///   - payload: The body to encode.
    ///   - defaultEncoder: The encoder to use when the request has none.
    /// - Returns: The encoded body.
    /// - Throws: What the encoder throws.
    @available(*, deprecated, message: "MicroClient 0.0.6: Courier encodes the body when it runs the request")
    public func encode(payload: RequestModel, defaultEncoder: JSONEncoder) throws -> Data {
        if let data = payload as? Data { return data }
        return try (encoder ?? defaultEncoder).encode(payload)
    }

    /// Decodes a response body, as MicroClient 0.0.1–0.0.6 exposed it, with Courier's rules: ``VoidResponse`` skips
    /// decoding, `Data` is the body, `String` its UTF-8 text, anything else JSON with the request's ``decoder``, else
    /// `defaultDecoder`.
    /// - Parameters:
    ///   - data: The body.
    ///   - defaultDecoder: The decoder to use when the request has none.
    /// - Returns: The decoded value.
    /// - Throws: ``NetworkClientError/decodingFailed(underlying:data:)``.
    @available(*, deprecated, message: "MicroClient 0.0.6: Courier decodes the response when it runs the request")
    public func decode(data: Data, defaultDecoder: JSONDecoder) throws -> ResponseModel {
        try ResponseKinds.decode(ResponseModel.self, from: data, with: decoder ?? defaultDecoder)
    }
}

/// The mapping of MicroClient 0.0.1–0.0.6's `parameters` to query items.
enum MicroClientParameters {
    /// The parameters as query items, sorted by name (then value) so the URL is stable; `nil` stays `nil`.
    static func queryItems(_ parameters: [String: String?]?) -> [URLQueryItem]? {
        parameters?.map { URLQueryItem(name: $0.key, value: $0.value) }.sorted {
            $0.name != $1.name ? $0.name < $1.name : ($0.value ?? "") < ($1.value ?? "")
        }
    }
}

// MARK: - 0.0.1–0.0.8: `scheme` and `hostname`

extension NetworkConfiguration {
    /// Creates a configuration from a scheme and a host name: the initializer of MicroClient 0.0.1–0.0.8, where every
    /// argument is required.
    ///
    /// The base URL is `scheme://hostname` (a `hostname` may carry a port, `localhost:8080`). If they do not form a
    /// URL with a scheme and a host, every request fails with ``NetworkClientError/invalidURL(reason:)`` and nothing
    /// is sent. Otherwise it is ``init(session:defaultDecoder:defaultEncoder:baseURL:sensitiveHeaders:)``.
    /// - Parameters:
    ///   - session: The session, for example `URLSession.shared`.
    ///   - defaultDecoder: The response decoder.
    ///   - defaultEncoder: The body encoder.
    ///   - scheme: The URL scheme, `"https"` or `"http"`.
    ///   - hostname: The host name, for example `"micro.blog"`.
    @available(
        *, deprecated, message: "MicroClient 0.0.8: use Courier's init(session:defaultDecoder:defaultEncoder:baseURL:)"
    )
    public convenience init(
        session: URLSession,
        defaultDecoder: JSONDecoder,
        defaultEncoder: JSONEncoder,
        scheme: String,
        hostname: String
    ) {
        self.init(
            session: session, defaultDecoder: defaultDecoder, defaultEncoder: defaultEncoder,
            baseURL: MicroClientHost.baseURL(scheme: scheme, hostname: hostname))
    }

    /// The base URL's scheme, as MicroClient 0.0.1–0.0.8 exposed it; `""` when it has none.
    @available(*, deprecated, message: "MicroClient 0.0.8: use Courier's baseURL")
    public var scheme: String { baseURL.scheme ?? "" }

    /// The base URL's host, and its port when it has one, as MicroClient 0.0.1–0.0.8 exposed it; `""` when it has
    /// none.
    @available(*, deprecated, message: "MicroClient 0.0.8: use Courier's baseURL")
    public var hostname: String {
        guard let host = baseURL.host else { return "" }
        return baseURL.port.map { "\(host):\($0)" } ?? host
    }
}

/// The base URL of MicroClient 0.0.1–0.0.8's scheme and host name.
enum MicroClientHost {
    /// `scheme://hostname`, or a URL without a host (which fails every request with `invalidURL`) when they do not
    /// form one.
    static func baseURL(scheme: String, hostname: String) -> URL {
        if let url = URL(string: "\(scheme)://\(hostname)"), url.host.map({ !$0.isEmpty }) == true { return url }
        return URL(fileURLWithPath: "/")
    }
}

// MARK: - 0.0.13–0.0.17: client status

/// Whether a MicroClient 0.0.13–0.0.17 client was running a request, for test doubles that still declare
/// `statusPublisher()`. Courier's clients report no status.
@available(*, deprecated, message: "MicroClient 0.0.17: Courier's clients report no status; track your own calls")
public enum NetworkClientStatus: Sendable, Hashable {
    /// A request is in flight.
    case running
    /// No request is in flight.
    case idle
}

// MARK: - 0.0.15: non-optional `queryItems`

/// MicroClient 0.0.15 and later made `NetworkRequest.queryItems` a non-optional `[URLQueryItem]`, while 0.0.7–0.0.14
/// (and Courier) have `[URLQueryItem]?`. Optional chaining (`request.queryItems?.first`) only type-checks on an
/// optional, so the property stays optional, and these members let 0.0.15+ code read it as an array:
/// `request.queryItems.contains(item)`, `.count`, `.isEmpty`, `[1]`, also through `let items = request.queryItems`.
/// `nil` reads as an empty array. Only `Optional<[URLQueryItem]>` gets them, and only the members SDK tests of 0.0.15+
/// read (`count`, `isEmpty`, `first`, `first(where:)`, `contains(_:)`, `contains(where:)`, the integer subscript):
/// every other `[URLQueryItem]?` (`URLComponents.queryItems` too) gets them as well, so there are no more. `last`,
/// `map`, `filter` and iteration are not added (`map` would be ambiguous with `Optional.map`): write
/// `(request.queryItems ?? [])` there.
extension Optional where Wrapped == [URLQueryItem] {
    /// The number of query items; `0` when `nil`. From MicroClient 0.0.15's non-optional `queryItems`.
    public var count: Int { self?.count ?? 0 }

    /// Whether there are no query items (`nil` or empty). From MicroClient 0.0.15's non-optional `queryItems`.
    public var isEmpty: Bool { self?.isEmpty ?? true }

    /// The first query item; `nil` when there is none. From MicroClient 0.0.15's non-optional `queryItems`.
    public var first: URLQueryItem? { self?.first }

    /// The query item at `position`, which must be below ``count`` (it traps otherwise, like an array).
    /// From MicroClient 0.0.15's non-optional `queryItems`.
    public subscript(position: Int) -> URLQueryItem { (self ?? [])[position] }

    /// Whether `item` is one of the query items (same name and value). From MicroClient 0.0.15's non-optional
    /// `queryItems`.
    public func contains(_ item: URLQueryItem) -> Bool { self?.contains(item) ?? false }

    /// Whether a query item satisfies `predicate`. From MicroClient 0.0.15's non-optional `queryItems`.
    /// - Throws: What `predicate` throws.
    public func contains(where predicate: (URLQueryItem) throws -> Bool) rethrows -> Bool {
        try self?.contains(where: predicate) ?? false
    }

    /// The first query item that satisfies `predicate`. From MicroClient 0.0.15's non-optional `queryItems`.
    /// - Throws: What `predicate` throws.
    public func first(where predicate: (URLQueryItem) throws -> Bool) rethrows -> URLQueryItem? {
        try self?.first(where: predicate)
    }
}
