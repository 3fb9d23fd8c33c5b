import Foundation

/// The request model of a ``NetworkRequest`` whose body is streamed from a file, never held in memory:
/// `NetworkRequest<FileUpload, R>(path: "/upload", method: .put, body: FileUpload(url: fileURL))`.
///
/// The file is read as the request is sent (and again if a decorator such as `retrying()` sends it again), with its
/// size as `Content-Length`. A file that does not exist, cannot be read or is not a regular file (a folder, a FIFO, a
/// device such as `/dev/zero`, a socket, or a link to one) fails with
/// ``NetworkClientError/fileAccessFailed(url:reason:)`` before anything is sent. On Linux exactly that size is sent,
/// never more; a file that grows or shrinks before it has been sent fails the call at once with `fileAccessFailed`.
public struct FileUpload: Encodable, Hashable, Sendable {
    /// The file to send.
    public let url: URL
    /// The `Content-Type` to send; when `nil` (the default) it is guessed from the file's extension
    /// (`application/octet-stream` when unknown). A `Content-Type` in `additionalHeaders` wins over both.
    public let contentType: String?

    /// Creates a file upload body.
    /// - Parameters:
    ///   - url: The file to send.
    ///   - contentType: The `Content-Type`; `nil` by default (guessed from the extension).
    public init(url: URL, contentType: String? = nil) {
        self.url = url
        self.contentType = contentType
    }

    /// The `Content-Type` sent for this file.
    var effectiveContentType: String {
        contentType ?? MediaType.guess(forExtension: url.pathExtension)
    }
}

/// Media types guessed from file name extensions, for uploads and multipart file parts.
enum MediaType {
    private static let byExtension: [String: String] = [
        "json": "application/json", "txt": "text/plain", "html": "text/html", "htm": "text/html", "css": "text/css",
        "csv": "text/csv", "xml": "application/xml", "pdf": "application/pdf", "zip": "application/zip",
        "gz": "application/gzip", "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif",
        "webp": "image/webp", "heic": "image/heic", "svg": "image/svg+xml", "mp4": "video/mp4",
        "mov": "video/quicktime",
        "mp3": "audio/mpeg", "wav": "audio/wav", "m4a": "audio/mp4",
    ]

    /// The media type for a file name extension, or `application/octet-stream`.
    static func guess(forExtension pathExtension: String) -> String {
        byExtension[pathExtension.lowercased()] ?? "application/octet-stream"
    }
}
