import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The response model of a ``NetworkRequest`` whose body is streamed to a file, never held in memory:
/// `NetworkRequest<VoidRequest, DownloadedFile>(path: "/video.mp4", method: .get)`.
///
/// The file belongs to the caller: Courier writes the body to a partial file beside the request's
/// ``NetworkRequest/downloadDestination`` as it arrives and renames it there when complete, or by default puts it in a
/// new folder under the user's caches directory (`Courier Downloads/<UUID>/<the server's file name>`), and never
/// deletes it. It replaces a regular file at the destination and nothing else: a folder, a symbolic link or another
/// non-regular file there fails with ``NetworkClientError/fileAccessFailed(url:reason:)``, and so does a partial file
/// replaced by another one (or a link) during the download. A response whose status is not acceptable leaves no file
/// behind: it throws ``NetworkClientError/unacceptableStatusCode(statusCode:response:data:)`` with the body (up to
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
    ///
    /// - Parameter written: The identity of the file Courier wrote (`fstat` of its still open descriptor): what is
    ///   renamed must be that file, not a link or another file put at `file` meanwhile; `nil` for a file that
    ///   URLSession wrote.
    func finish(
        _ file: URL, response: URLResponse, written: RegularFile.Identity? = nil
    ) -> Result<DownloadedFile, NetworkClientError> {
        do {
            return .success(try move(file, response: response, written: written))
        } catch {
            _ = unlink(file.path)  // Never recursive: a directory put in its place is not Courier's to delete.
            return .failure(error)
        }
    }

    /// Renames the file at `location` to the destination, replacing a regular file there and nothing else.
    ///
    /// - Throws: ``NetworkClientError/fileAccessFailed(url:reason:)`` when the destination is a directory, a symbolic
    ///   link (dangling or not: it is neither followed nor replaced) or another non-regular file, when `location` is
    ///   no longer the file written, or when the rename fails (with its `errno`).
    private func move(
        _ location: URL, response: URLResponse, written: RegularFile.Identity?
    ) throws(NetworkClientError) -> DownloadedFile {
        let target = destination ?? Self.defaultDestination(response)
        let folder = target.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw .fileAccessFailed(url: target, reason: "the download's folder cannot be created: \(error)")
        }
        switch RegularFile.entry(at: target.path)?.kind {
        case nil, .regular?: break
        case .directory?:
            throw .fileAccessFailed(url: target, reason: "the destination is a directory; Courier never replaces one")
        case .symbolicLink?:
            throw .fileAccessFailed(
                url: target, reason: "the destination is a symbolic link; Courier neither follows nor replaces one")
        case .other?:
            throw .fileAccessFailed(url: target, reason: "the destination is not a regular file")
        }
        let swapped = "the partial file was replaced during the download; nothing was moved to the destination"
        if let written {
            guard let entry = RegularFile.entry(at: location.path), entry.kind == .regular, entry.identity == written
            else { throw .fileAccessFailed(url: target, reason: swapped) }
        }
        guard rename(location.path, target.path) == 0 else {
            let reason = "the download cannot be moved there: \(errnoDescription(errno))"
            throw .fileAccessFailed(url: target, reason: reason)
        }
        if let written {
            // Swapped between the check and the rename: what was renamed is not the download. Removed (a link or a
            // file, never followed), and the call fails.
            guard let entry = RegularFile.entry(at: target.path), entry.kind == .regular, entry.identity == written
            else {
                _ = unlink(target.path)
                throw .fileAccessFailed(url: target, reason: swapped)
            }
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: target.path)[.size] as? NSNumber)?.int64Value
        let contentType = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Type")
        return DownloadedFile(url: target, byteCount: size ?? 0, contentType: contentType)
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
