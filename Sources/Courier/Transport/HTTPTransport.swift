import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The engine under Courier: sends one HTTP request and hands the response, as it arrives, to the ``HTTPExchange``.
///
/// Everything Courier promises sits above this seam, so it holds for any transport: the size limit, the total
/// deadline, cancellation, the redirect rules (which redirects are followed, what they carry, the budget of
/// ``NetworkConfiguration/maximumRedirects``), downloads to files with resume, progress, redaction and the status
/// check. A transport only moves bytes:
///
/// - It sends ``HTTPExchange/request`` once, with ``HTTPExchange/body``: no redirect followed (a `3xx` is a response
///   like any other), no retry, no cache of its own.
/// - It calls ``HTTPExchange/receive(_:)-(HTTPURLResponse)`` with the response head, then
///   ``HTTPExchange/receive(_:)-(Data)`` with each piece of the body in order (decompressed if the server compressed
///   it), and returns when the body has ended. Either call returns `false` when Courier needs no more: stop reading
///   and return. A transport that can pause reading awaits ``HTTPExchange/readyForMore()`` before it reads each next
///   piece, so that a streamed response's slow reader holds the server back (see <doc:Streaming>).
/// - It enforces the request's idle timeout, `request.timeoutInterval`: the longest silence, in seconds, before the
///   response head and between two pieces of the body (each request body piece sent starts it again too), as
///   `URLSession` counts it. It is ``NetworkRequest/timeoutInterval``, or what an interceptor set, or `URLRequest`'s
///   default, 60 seconds: a transport that ignores it lets a server that accepts a connection and never answers hang
///   the call (``NetworkRequest/totalTimeout`` bounds the whole call, but is 7 days unless set). When it passes, the
///   transport cancels its request and throws `URLError(.timedOut)`.
/// - It registers ``HTTPExchange/whenStopped(_:)``: Courier stops an exchange when its caller is cancelled, its
///   deadline passes or its body breaks a rule. The transport then cancels its work and returns promptly (what it
///   returns or throws then is ignored: the caller gets Courier's reason).
/// - It throws a `URLError` when the exchange fails, with the code that says why (``RetryPolicy`` retries on it);
///   Courier wraps it in ``NetworkClientError/transportFailed(_:)`` and removes the secrets from it. Another error
///   becomes `URLError(.unknown)` that names only its type, since its text may carry secrets. Returning without an error means
///   the head was handed over and the body ended; returning before any head fails the exchange.
/// - If it adds anything to the request on the wire (header fields, cookies, credentials of its own), it says so in
///   ``additions(to:)``, so that a ``ResponseCache`` keys on it; a transport that wraps another forwards the wrapped
///   one's.
///
/// The calls on the exchange come one at a time, from any thread. A ``HTTPExchange/whenStopped(_:)`` handler runs on
/// the thread that stops the exchange (a cancellation handler, Courier's deadline timer): it must not block.
///
/// ``NetworkConfiguration`` uses Courier's driven `URLSession` unless you pass another transport to
/// ``NetworkConfiguration/init(transport:defaultDecoder:defaultEncoder:baseURL:sensitiveHeaders:)``.
/// ``InMemoryTransport`` answers canned HTTP messages for tests. See <doc:ThePipeline> for an adapter's shape.
public protocol HTTPTransport: Sendable {
    /// Sends `exchange.request` once and reports its response to `exchange`.
    ///
    /// - Throws: An error when the request cannot be sent or the response does not arrive whole; whatever it throws
    ///   after ``HTTPExchange/whenStopped(_:)`` ran is ignored.
    func send(_ exchange: HTTPExchange) async throws

    /// What this transport adds to `request` when it sends it, besides the request's own header fields: header fields
    /// of its own, cookies, the credentials it answers an authentication challenge with (see ``RequestAdditions``).
    ///
    /// A ``ResponseCache`` files each response under them, so that what reaches the wire reaches the cache's key.
    /// Courier's `URLSession` transports report their session's; a transport that sends the request as it is keeps
    /// the default, ``RequestAdditions/none``. A transport that wraps another must return the wrapped one's additions
    /// (with its own): returning none while the transport under it adds a credential would let a shared cache serve
    /// one credential's response to another. Called once per cacheable hop, before ``send(_:)``; keep it cheap.
    func additions(to request: URLRequest) -> RequestAdditions
}

extension HTTPTransport {
    /// ``RequestAdditions/none``: the request goes out as it is.
    public func additions(to request: URLRequest) -> RequestAdditions { .none }
}

/// The body of a request a transport sends.
public enum HTTPRequestBody: Sendable, Equatable {
    /// No body.
    case none
    /// These bytes (also in ``HTTPExchange/request``'s `httpBody`).
    case data(Data)
    /// The bytes of a regular file, `byteCount` of them: send them as they are read (never all in memory), with
    /// `Content-Length: byteCount`. ``HTTPExchange/makeBodyStream()`` reads them with Courier's checks.
    case file(URL, byteCount: Int64)
}

extension HTTPRequestBody {
    /// The body of the regular file at `file`, measured now (never opened here: opening a FIFO blocks).
    ///
    /// - Throws: ``NetworkClientError/fileAccessFailed(url:reason:)`` when it is not a readable regular file.
    static func measuring(_ file: URL) throws(NetworkClientError) -> HTTPRequestBody {
        .file(file, byteCount: try RegularFile.size(of: file))
    }
}
