import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The HTTP method of a ``NetworkRequest``.
public enum HTTPMethod: String, Sendable, Hashable, CaseIterable {
    /// `GET`: read a resource. Shared by ``DeduplicatingClient`` by default.
    case get = "GET"
    /// `POST`: create a resource or run an action.
    case post = "POST"
    /// `PUT`: replace a resource.
    case put = "PUT"
    /// `PATCH`: modify part of a resource.
    case patch = "PATCH"
    /// `DELETE`: remove a resource.
    case delete = "DELETE"
    /// `HEAD`: like `GET`, without a response body. Shared by ``DeduplicatingClient`` by default.
    case head = "HEAD"
    /// `OPTIONS`: ask which methods a resource allows.
    case options = "OPTIONS"
}

/// A name/value pair sent in an `application/x-www-form-urlencoded` request body.
///
/// Names and values are percent-encoded so that the server reads back exactly the given text, including `+`, `&`,
/// `=`, `%`, spaces and non-ASCII characters. An item whose `value` is `nil` is left out of the body.
public struct URLFormItem: Hashable, Sendable {
    /// The field name, as the server should read it.
    public let name: String
    /// The field value, as the server should read it; `nil` leaves the item out of the body.
    public let value: String?

    /// Creates a form item.
    /// - Parameters:
    ///   - name: The field name.
    ///   - value: The field value; `nil` leaves the item out of the body.
    public init(name: String, value: String?) {
        self.name = name
        self.value = value
    }
}

/// The request model of a ``NetworkRequest`` that sends no body.
public struct VoidRequest: Encodable, Hashable, Sendable {
    /// Creates an empty request model.
    public init() {}
}

/// The response model of a ``NetworkRequest`` whose response body is ignored.
///
/// Courier skips decoding for it, so an empty body (for example a `204 No Content`) is a success.
public struct VoidResponse: Decodable, Hashable, Sendable {
    /// Creates an empty response model.
    public init() {}
}

/// A typed description of one HTTP request: what to send and what to decode the response into.
///
/// Only `method` is required. `baseURL`, `decoder`, `encoder`, `maximumResponseSize` and `acceptableStatusCodes`
/// fall back to the ``NetworkConfiguration`` of the client that runs the request, and the timeouts to its session's. Build these in a factory and hand them to ``NetworkClientProtocol/run(_:)``:
///
/// ```swift
/// let request = NetworkRequest<VoidRequest, [Post]>(path: "/posts", method: .get,
///                                                   queryItems: [URLQueryItem(name: "page", value: "2")])
/// let posts = try await client.run(request).value
/// ```
///
/// - `RequestModel` is JSON-encoded as the body; `Data` is sent as is, ``VoidRequest`` sends nothing,
///   ``FileUpload`` streams a file and ``MultipartFormData`` sends a `multipart/form-data` form.
/// - `ResponseModel` is JSON-decoded from a 2xx body; `Data` returns the raw body, `String` decodes UTF-8,
///   ``VoidResponse`` skips decoding and ``DownloadedFile`` streams the body to a file. ``ServerSentEvents``,
///   ``JSONLines`` and ``ByteStream`` return at the head and yield the body as it arrives.
public struct NetworkRequest<RequestModel: Encodable & Sendable, ResponseModel: Decodable & Sendable>: Sendable {
    /// The path appended to the base URL with exactly one `/` between them; `nil` or empty means the base URL itself.
    ///
    /// The path is literal text: Courier percent-encodes it, so `?`, `#`, `%` and spaces reach the server as
    /// written. It can never change the scheme, host or port, and `.` or `..` segments are rejected.
    public let path: String?
    /// The HTTP method.
    public let method: HTTPMethod
    /// The query items, in order, percent-encoded so the server reads back exactly these names and values.
    /// An item whose value is `nil` is sent as a bare name (`?flag`).
    public let queryItems: [URLQueryItem]?
    /// The items of an `application/x-www-form-urlencoded` body. Items whose value is `nil` are left out.
    /// Setting both `formItems` and `body` is an error (``NetworkClientError/invalidRequest(reason:)``).
    public let formItems: [URLFormItem]?
    /// The body, JSON-encoded with `encoder` (or the configuration's default encoder); `Data` is sent as is.
    public var body: RequestModel? { storedBody.map { $0 as! RequestModel } }
    /// ``body``, stored without its type. No stored property of a request depends on `RequestModel` or
    /// `ResponseModel`, so its layout is fixed: the pipeline's generic code copies a request and reads its fields
    /// without looking up `NetworkRequest<RequestModel, ResponseModel>`'s metadata in the runtime on every call. Only a
    /// `RequestModel` is ever stored, so the cast cannot fail.
    let storedBody: (any Encodable & Sendable)?
    /// A base URL that replaces ``NetworkConfiguration/baseURL`` for this request; `nil` by default.
    public let baseURL: URL?
    /// The decoder for the response; `nil` uses ``NetworkConfiguration/defaultDecoder``.
    public let decoder: JSONDecoder?
    /// The encoder for the body; `nil` uses ``NetworkConfiguration/defaultEncoder``.
    public let encoder: JSONEncoder?
    /// Header fields added to the request. They replace Courier's defaults (`Accept: application/json` and the
    /// body's `Content-Type`) when they name the same field, compared case-insensitively.
    public internal(set) var additionalHeaders: [String: String]?
    /// The time, in seconds, the request may stay idle before it fails with `URLError.timedOut`;
    /// `nil` (the default) keeps the session's `timeoutIntervalForRequest` (over another ``HTTPTransport``,
    /// `URLRequest`'s 60 seconds). On Linux, where URLSession counts whole seconds, it is rounded up: `0.5` waits one
    /// second rather than failing at once. It must be a positive number, or the request fails with
    /// ``NetworkClientError/invalidRequest(reason:)`` (NaN, zero and negative values); values above
    /// ``NetworkConfiguration/maximumTimeout`` (infinity included) are lowered to it.
    public let timeoutInterval: TimeInterval?
    /// The most time, in seconds, the whole request may take, from sending to the last byte of the response, however
    /// steadily the server sends; `nil` (the default) keeps the session's `timeoutIntervalForResource` (7 days for
    /// `.default`), which Courier enforces itself where the platform does not (Linux). When it passes, the transfer
    /// is cancelled and the call throws ``NetworkClientError/transportFailed(_:)`` with `URLError.timedOut`. It must
    /// be a positive number, or the request fails with ``NetworkClientError/invalidRequest(reason:)``; values above
    /// ``NetworkConfiguration/maximumTimeout`` (infinity included) are lowered to it.
    ///
    /// It bounds one attempt, not the call: under ``NetworkClientProtocol/retrying(_:)`` each attempt has the whole
    /// of it again, so a call against a silent server takes up to ``RetryPolicy/maxAttempts`` times `totalTimeout`,
    /// plus the waits between attempts. ``RetryPolicy/totalBudget`` bounds the waits (no retry starts that would end
    /// its wait past the budget) but never cuts an attempt under way.
    public let totalTimeout: TimeInterval?
    /// The largest response body, in bytes after decompression, this request accepts in memory; `nil` (the default)
    /// uses ``NetworkConfiguration/maximumResponseSize``. A larger body stops the transfer with
    /// ``NetworkClientError/responseTooLarge(limit:)``.
    public let maximumResponseSize: Int?
    /// The status codes that count as success for this request; `nil` (the default) uses
    /// ``NetworkConfiguration/acceptableStatusCodes`` (`200..<300`). Any other status throws
    /// ``NetworkClientError/unacceptableStatusCode(statusCode:response:data:)``. For example
    /// `Set(200..<300).union([304])` to read a `304 Not Modified` as success (with ``VoidResponse`` or `Data`).
    public let acceptableStatusCodes: Set<Int>?
    /// Where a ``DownloadedFile`` response is moved: the file to create (replacing a regular file already there,
    /// creating the folders; a folder or a symbolic link there is refused with
    /// ``NetworkClientError/fileAccessFailed(url:reason:)`` and left alone); `nil` (the default) puts it in a new
    /// folder under the user's caches directory, named by `Content-Disposition` or the URL's last path component.
    /// Ignored by other response types.
    public let downloadDestination: URL?
    /// Called with the bytes sent and received as the transfer goes, in order, on a background queue of the
    /// transfer's own; `nil` by default. Reports that arrive while the handler runs are merged into the newest one,
    /// and the call returns after the last report.
    /// Bytes received are reported as the body's pieces reach Courier, on every transport: as they arrive on a session
    /// Courier drives (`NetworkConfiguration(baseURL:)`, on every platform), ``InMemoryTransport`` and the
    /// AsyncHTTPClient transport; at the end, when the whole body arrived, on a session passed to
    /// `NetworkConfiguration(session:…)` that Courier cannot drive (on Apple platforms any, `URLSession.shared`
    /// included; on Linux one with a delegate of its own). Bytes sent are reported by the transports that tell
    /// ``HTTPExchange/sent(_:of:)``: all of these but such a passed session. ``DeduplicatingClient`` calls only the
    /// handler of the request that started a shared call.
    public let onProgress: (@Sendable (TransferProgress) -> Void)?
    /// How the decorators treat this request: sharing, credential, retry and a log tag; `RequestOptions()` (no
    /// change) by default.
    public var options: RequestOptions
    /// The longest line or event, in bytes, a streamed response (``ServerSentEvents``, ``JSONLines``) accepts; `nil`
    /// (the default) uses ``NetworkConfiguration/defaultMaximumStreamItemSize`` (1 MiB). A longer one ends the sequence with
    /// ``NetworkClientError/responseTooLarge(limit:)``. Ignored by other response types, which
    /// ``maximumResponseSize`` bounds whole.
    public let maximumStreamItemSize: Int?
    /// Whether a ``ServerSentEvents`` stream that ends or drops is opened again, with `Last-Event-ID`; `nil` (the
    /// default) never. Applies to `GET` requests only (a `POST` stream is never sent twice) and is ignored by other
    /// response types.
    public let reconnection: StreamReconnection?
    /// The credential an ``AuthenticatingClient`` put on the request, for the client at the bottom to keep to its
    /// origins; `nil` when none did.
    var credentialScope: CredentialScope?
    /// Where the request that ``replacingURL(with:)`` made this one from was going, for the client at the bottom to
    /// treat this one, should it go to another origin, as a cross-origin redirect from there; `nil` when it was not
    /// made that way.
    var replacedFrom: ReplacedOrigin?
    /// The request's own interceptors, which run in place of ``NetworkConfiguration/interceptors`` for it, in order;
    /// `nil` (the default) runs the configuration's. Set only by MicroClient 0.0.22's initializer that takes
    /// `interceptors:` (deprecated): new code changes every request with the configuration's
    /// ``NetworkConfiguration/interceptors``, and one request with its own fields (``additionalHeaders``).
    public internal(set) var interceptors: [any NetworkRequestInterceptor]?
    /// What an initializer at the edge asks for around this request (see ``ClientAdaptation``); `nil` (the default,
    /// and always with Courier's own initializers) leaves it to its client.
    var adaptation: (any ClientAdaptation)?
    /// The recorders of the decorators that want this request's ``SendReport`` (``reporting(to:)``); `nil` when none
    /// does. Not part of what is sent.
    var sendRecorders: SendRecorders?

    /// Creates a request.
    /// - Parameters:
    ///   - path: The path appended to the base URL; `nil` by default (the base URL itself).
    ///   - method: The HTTP method.
    ///   - queryItems: The query items, in order; `nil` by default.
    ///   - formItems: The items of a form-encoded body; `nil` by default.
    ///   - body: The body to JSON-encode (or `Data` to send as is); `nil` by default.
    ///   - baseURL: A base URL for this request only; `nil` by default.
    ///   - decoder: A decoder for this request only; `nil` by default.
    ///   - encoder: An encoder for this request only; `nil` by default.
    ///   - additionalHeaders: Header fields to add; `nil` by default.
    ///   - timeoutInterval: An idle timeout in seconds for this request only; `nil` by default.
    ///   - totalTimeout: A limit in seconds on the whole request; `nil` by default (the session's resource timeout).
    ///   - maximumResponseSize: The largest body accepted, in bytes; `nil` by default (the configuration's).
    ///   - acceptableStatusCodes: The statuses that count as success; `nil` by default (the configuration's).
    ///   - downloadDestination: Where a ``DownloadedFile`` goes; `nil` by default (the caches directory).
    ///   - onProgress: A progress handler; `nil` by default.
    ///   - options: How the decorators treat the request; `RequestOptions()` (no change) by default.
    ///   - maximumStreamItemSize: The longest line or event of a streamed response; `nil` by default (1 MiB).
    ///   - reconnection: When a ``ServerSentEvents`` `GET` is opened again; `nil` (never) by default.
    @inlinable
    public init(
        path: String? = nil,
        method: HTTPMethod,
        queryItems: [URLQueryItem]? = nil,
        formItems: [URLFormItem]? = nil,
        body: RequestModel? = nil,
        baseURL: URL? = nil,
        decoder: JSONDecoder? = nil,
        encoder: JSONEncoder? = nil,
        additionalHeaders: [String: String]? = nil,
        timeoutInterval: TimeInterval? = nil,
        totalTimeout: TimeInterval? = nil,
        maximumResponseSize: Int? = nil,
        acceptableStatusCodes: Set<Int>? = nil,
        downloadDestination: URL? = nil,
        onProgress: (@Sendable (TransferProgress) -> Void)? = nil,
        options: RequestOptions = RequestOptions(),
        maximumStreamItemSize: Int? = nil,
        reconnection: StreamReconnection? = nil
    ) {
        // Inlinable, so that the caller's code, which knows `RequestModel`, stores the body without its type: the
        // initializer compiled in Courier would look up `Optional<RequestModel>`'s metadata on every call.
        self.init(
            path: path, method: method, queryItems: queryItems, formItems: formItems,
            storedBody: body.map { $0 as any Encodable & Sendable }, baseURL: baseURL, decoder: decoder,
            encoder: encoder, additionalHeaders: additionalHeaders, timeoutInterval: timeoutInterval,
            totalTimeout: totalTimeout, maximumResponseSize: maximumResponseSize,
            acceptableStatusCodes: acceptableStatusCodes, downloadDestination: downloadDestination,
            onProgress: onProgress, options: options, maximumStreamItemSize: maximumStreamItemSize,
            reconnection: reconnection)
    }

    /// The memberwise initializer behind ``init(path:method:queryItems:formItems:body:baseURL:decoder:encoder:additionalHeaders:timeoutInterval:totalTimeout:maximumResponseSize:acceptableStatusCodes:downloadDestination:onProgress:options:maximumStreamItemSize:reconnection:)``,
    /// with the body already stored without its type.
    @usableFromInline
    init(
        path: String?, method: HTTPMethod, queryItems: [URLQueryItem]?, formItems: [URLFormItem]?,
        storedBody: (any Encodable & Sendable)?, baseURL: URL?, decoder: JSONDecoder?, encoder: JSONEncoder?,
        additionalHeaders: [String: String]?, timeoutInterval: TimeInterval?, totalTimeout: TimeInterval?,
        maximumResponseSize: Int?, acceptableStatusCodes: Set<Int>?, downloadDestination: URL?,
        onProgress: (@Sendable (TransferProgress) -> Void)?, options: RequestOptions, maximumStreamItemSize: Int?,
        reconnection: StreamReconnection?
    ) {
        self.path = path
        self.method = method
        self.queryItems = queryItems
        self.formItems = formItems
        self.storedBody = storedBody
        self.baseURL = baseURL
        self.decoder = decoder
        self.encoder = encoder
        self.additionalHeaders = additionalHeaders
        self.timeoutInterval = timeoutInterval
        self.totalTimeout = totalTimeout
        self.maximumResponseSize = maximumResponseSize
        self.acceptableStatusCodes = acceptableStatusCodes
        self.downloadDestination = downloadDestination
        self.onProgress = onProgress
        self.options = options
        self.maximumStreamItemSize = maximumStreamItemSize
        self.reconnection = reconnection
    }
}
