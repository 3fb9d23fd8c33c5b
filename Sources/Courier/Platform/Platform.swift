// Linux shims live here and only here.
import Foundation

// On Linux, `URLSession`, `URLRequest` and `URLResponse` live in FoundationNetworking. Courier re-exports it so that
// SDK code written for Apple platforms (`import Courier` plus Foundation) compiles unchanged on Linux.
#if canImport(FoundationNetworking)
@_exported import FoundationNetworking
#endif

/// Whether URLSession can send to an IPv6 literal host (`http://[::1]:8080`). corelibs compares the host it reads
/// (`::1`) with libcurl's (`[::1]`), finds them different and fails every such request with `badURL`.
#if canImport(FoundationNetworking)
let supportsIPv6LiteralHosts = false
#else
let supportsIPv6LiteralHosts = true
#endif

/// Whether Courier must enforce `timeoutIntervalForResource` itself: corelibs Foundation ignores it.
#if canImport(FoundationNetworking)
let enforcesResourceTimeout = true
#else
let enforcesResourceTimeout = false
#endif

/// The timeout to hand to URLSession for a requested `interval`: at most ``NetworkConfiguration/maximumTimeout``
/// (corelibs converts timeouts to integer milliseconds and traps above about 9.2e15 s or on infinity), and on Linux
/// rounded up to whole seconds (corelibs truncates, so 0.5 s would fail at once and 1.5 s fire after 1 s). A NaN or
/// non-positive `interval` becomes `fallback`.
func transportTimeout(_ interval: TimeInterval, fallback: TimeInterval) -> TimeInterval {
    guard interval > 0 else { return fallback }  // NaN compares false.
    let clamped = min(interval, NetworkConfiguration.maximumTimeout)
    #if canImport(FoundationNetworking)
    return clamped.rounded(.up)
    #else
    return clamped
    #endif
}

/// The configuration of a session Courier creates: timeouts URLSession can take (see `transportTimeout`), and on
/// Linux no `URLCache`.
///
/// corelibs reads the cache on a background queue before a task's protocol exists; a cancellation landing in that
/// window is reported after the task left the session's registry, and the process traps. The lookup also costs about
/// a tenth of a small request's CPU time. Apple platforms keep the cache.
func ownedSessionConfiguration(_ configuration: URLSessionConfiguration) -> URLSessionConfiguration {
    let copy = configuration.copy() as! URLSessionConfiguration
    #if canImport(FoundationNetworking)
    copy.urlCache = nil
    #endif
    copy.timeoutIntervalForRequest = transportTimeout(copy.timeoutIntervalForRequest, fallback: 60)
    copy.timeoutIntervalForResource = transportTimeout(copy.timeoutIntervalForResource, fallback: 604_800)
    return copy
}

/// The `URLError` code Apple's URLSession reports for a failure corelibs reports as `code`, with libcurl's text
/// `detail`.
///
/// corelibs maps only a few libcurl errors to `URLError` codes and reports the rest as `.unknown`. A connection that
/// closes before the declared body is complete (libcurl's `CURLE_PARTIAL_FILE`: "transfer closed with 2300000 bytes
/// remaining to read", or "… outstanding read data remaining" when chunked) is `.networkConnectionLost` on Apple
/// platforms: the code ``RetryPolicy`` retries, and after which a download resumes. A TLS failure gets the code
/// Apple reports for it (see `tlsErrorCode(libcurlText:)`).
func platformErrorCode(_ code: URLError.Code, detail: String?) -> URLError.Code {
    #if canImport(FoundationNetworking)
    // "transfer closed with …" (curl 7.x, as here); "end of response with … missing" and "Transferred a partial
    // file" (later curl releases, and curl_easy_strerror's text).
    let partialFile = ["transfer closed with", "end of response with", "Transferred a partial file"]
    if code == .unknown, let detail, partialFile.contains(where: { detail.hasPrefix($0) }) {
        return .networkConnectionLost
    }
    if code == .unknown, let detail, let tlsCode = tlsErrorCode(libcurlText: detail) { return tlsCode }
    #endif
    return code
}

/// `request` with `stream` as its body, `length` bytes framed by `Content-Length`, as a task of a corelibs session
/// sends a file body (the driven session and a caller's session alike). corelibs frames a stream body as chunked; a
/// `Transfer-Encoding` of one space makes libcurl drop its own `Transfer-Encoding: chunked` and send no such header at
/// all (a blank custom header only removes libcurl's; `""` would go out as an empty header, which strict servers
/// reject).
func streamingRequest(_ request: URLRequest, body stream: InputStream, length: Int64) -> URLRequest {
    var request = request
    request.httpBodyStream = stream
    request.setValue(String(length), forHTTPHeaderField: "Content-Length")
    request.setValue(" ", forHTTPHeaderField: "Transfer-Encoding")
    return request
}
