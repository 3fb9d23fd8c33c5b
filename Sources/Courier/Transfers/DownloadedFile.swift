import Foundation

/// The response model of a ``NetworkRequest`` whose body is streamed to a file, never held in memory:
/// `NetworkRequest<VoidRequest, DownloadedFile>(path: "/video.mp4", method: .get)`.
///
/// The file belongs to the caller: Courier writes the body to a partial file beside the request's
/// ``NetworkRequest/downloadDestination`` as it arrives and renames it there when complete, or by default puts it in a
/// new folder under the user's caches directory (`Courier Downloads/<UUID>/<the server's file name>`), and never
/// deletes it. A response whose status is not acceptable leaves no file behind: it throws
/// ``NetworkClientError/unacceptableStatusCode(statusCode:response:data:)`` with the body (up to
/// ``NetworkConfiguration/maximumResponseSize``) as `data`. Downloads are not subject to the size limit.
///
/// A download that fails on its way, from a server that offers ranges (`Accept-Ranges: bytes` and a strong `ETag` or
/// `Last-Modified`), keeps its bytes; the next run of the same request on the same configuration, by the caller or by
/// ``NetworkClientProtocol/retrying(_:)``, asks only for the rest (`Range`, `If-Range`). A cancelled download keeps
/// nothing. See <doc:Transfers> for the rules.
public struct DownloadedFile: Decodable, Hashable, Sendable {
    /// Where the file is.
    public let url: URL
    /// Its size in bytes.
    public let byteCount: Int64
    /// The response's `Content-Type`, if it had one.
    public let contentType: String?

    /// Creates a description of a downloaded file, for example in a test double.
    /// - Parameters:
    ///   - url: Where the file is.
    ///   - byteCount: Its size in bytes.
    ///   - contentType: The response's `Content-Type`; `nil` by default.
    public init(url: URL, byteCount: Int64, contentType: String? = nil) {
        self.url = url
        self.byteCount = byteCount
        self.contentType = contentType
    }
}

/// Where a download goes and which statuses count as success.
struct DownloadTarget: Sendable {
    /// The file to create, or `nil` for the default place.
    let destination: URL?
    /// The statuses whose body is the file; other bodies are kept in memory as the error's data.
    let acceptableStatusCodes: Set<Int>?

    func accepts(_ status: Int) -> Bool {
        ResponseKinds.accepts(status, acceptableStatusCodes)
    }

    /// Takes the file URLSession wrote at `location`: for an acceptable status, moves it to the destination; for
    /// another, reads its first `bodyLimit` bytes as the error's body. `location` is gone afterwards either way.
    func take(_ location: URL, response: URLResponse, bodyLimit: Int) -> Result<ReceivedResponse, NetworkClientError> {
        defer { try? FileManager.default.removeItem(at: location) }  // Already moved, unless something failed.
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard accepts(status) else {
            let handle = try? FileHandle(forReadingFrom: location)
            let body = (try? handle?.read(upToCount: bodyLimit)) ?? Data()
            try? handle?.close()
            return .success(ReceivedResponse(data: body, response: response, file: nil))
        }
        return finish(location, response: response).map {
            ReceivedResponse(data: Data(), response: response, file: $0)
        }
    }

    /// Where the body is written while it arrives: beside the destination, so that moving it there at the end is a
    /// rename (`.<name>.<UUID>.courier-partial`), or `<caches>/Courier Downloads/Partial/<UUID>.courier-partial` for
    /// the default destination.
    func partialFile() -> URL {
        let name = UUID().uuidString + ".courier-partial"
        if let destination {
            return destination.deletingLastPathComponent()
                .appendingPathComponent("." + destination.lastPathComponent + "." + name)
        }
        return Self.downloadsFolder.appendingPathComponent("Partial", isDirectory: true).appendingPathComponent(name)
    }

    /// Moves the complete body Courier wrote at `file` to the destination; `file` is gone afterwards either way.
    func finish(_ file: URL, response: URLResponse) -> Result<DownloadedFile, NetworkClientError> {
        do {
            return .success(try move(file, response: response))
        } catch {
            try? FileManager.default.removeItem(at: file)
            let reason = "the download cannot be moved there: \(error.localizedDescription)"
            return .failure(.fileAccessFailed(url: destination ?? Self.defaultDestination(response), reason: reason))
        }
    }

    /// Moves the file URLSession wrote at `location` to the destination, replacing a file already there.
    private func move(_ location: URL, response: URLResponse) throws -> DownloadedFile {
        let fileManager = FileManager.default
        let target = destination ?? Self.defaultDestination(response)
        try fileManager.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        if fileManager.fileExists(atPath: target.path) { try fileManager.removeItem(at: target) }
        try fileManager.moveItem(at: location, to: target)
        let size = (try fileManager.attributesOfItem(atPath: target.path)[.size] as? NSNumber)?.int64Value ?? 0
        let contentType = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Type")
        return DownloadedFile(url: target, byteCount: size, contentType: contentType)
    }

    /// `<caches>/Courier Downloads/<UUID>/<file name>`: the `Content-Disposition` file name, else the last path
    /// component of the URL (corelibs' `suggestedFilename` says `Unknown` without the header).
    static func defaultDestination(_ response: URLResponse) -> URL {
        let disposition = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Disposition")
        let name = disposition != nil ? response.suggestedFilename : response.url?.lastPathComponent
        return downloadsFolder.appendingPathComponent(UUID().uuidString, isDirectory: true)
            .appendingPathComponent(safeFileName(name))
    }

    /// The server's file name as one plain name inside its folder: its last path component, or `download` when that
    /// is empty, `.`, `..` or hidden (a `Content-Disposition` of `filename=".."` must not name the folder above).
    static func safeFileName(_ suggested: String?) -> String {
        let name = (suggested ?? "").split(separator: "/").last.map(String.init) ?? ""
        return name.isEmpty || name.hasPrefix(".") ? "download" : name
    }

    /// `<caches>/Courier Downloads`.
    static var downloadsFolder: URL {
        let caches =
            FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        return caches.appendingPathComponent("Courier Downloads", isDirectory: true)
    }
}
