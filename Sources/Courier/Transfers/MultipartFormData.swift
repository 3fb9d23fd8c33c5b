import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A `multipart/form-data` body (RFC 7578): text fields and files, for example a photo with its caption.
///
/// ```swift
/// var form = MultipartFormData()
/// form.append("Sunset", name: "caption")
/// form.append(fileAt: photoURL, name: "photo")   // filename and Content-Type from the file
/// let request = NetworkRequest<MultipartFormData, Photo>(path: "/photos", method: .post, body: form)
/// ```
///
/// - Names and file names are quoted, with `"`, CR and LF written as `%22`, `%0D` and `%0A` (RFC 7578 §2 and the
///   WHATWG form rules); non-ASCII file names are sent as UTF-8, which browsers and servers read.
/// - The boundary is random (244 bits) and checked against every in-memory part; a file part is not scanned, and
///   the chance that it holds the boundary by accident is negligible.
/// - A body up to ``inMemoryThreshold`` (10 MiB) is built in memory. A larger one is written to a temporary file,
///   streamed from it, and the file is removed after success, failure and cancellation alike. `Content-Length` is
///   always sent.
/// - A file part that does not exist, cannot be read or is not a regular file (a folder, a FIFO, a device such as
///   `/dev/zero`) fails with ``NetworkClientError/fileAccessFailed(url:reason:)`` before anything is sent; so does one
///   that changes size while it is read, or whose reading the caller cancels or the request's `totalTimeout` ends.
public struct MultipartFormData: Encodable, Sendable {
    /// Bodies up to this size, in bytes, are built in memory; larger ones are staged in a temporary file: 10 MiB.
    public static let inMemoryThreshold = 10 * 1024 * 1024

    private enum Content: Sendable {
        case data(Data)
        case file(URL)
    }

    private struct Part: Sendable {
        let name: String
        let filename: String?
        let contentType: String?
        let content: Content
    }

    private var parts: [Part] = []

    /// Creates an empty form.
    public init() {}

    /// Appends a text field.
    /// - Parameters:
    ///   - value: The field's text, sent as UTF-8.
    ///   - name: The field name.
    public mutating func append(_ value: String, name: String) {
        parts.append(Part(name: name, filename: nil, contentType: nil, content: .data(Data(value.utf8))))
    }

    /// Appends bytes held in memory, as a file when `filename` is given.
    /// - Parameters:
    ///   - data: The bytes.
    ///   - name: The field name.
    ///   - filename: The file name the server sees; `nil` by default (a plain field).
    ///   - contentType: The part's `Content-Type`; `nil` by default: `application/octet-stream` for a file, none for
    ///     a plain field.
    public mutating func append(_ data: Data, name: String, filename: String? = nil, contentType: String? = nil) {
        let type = contentType ?? (filename == nil ? nil : "application/octet-stream")
        parts.append(Part(name: name, filename: filename, contentType: type, content: .data(data)))
    }

    /// Appends a file, read when the request is sent (never held in memory when the body is staged).
    /// - Parameters:
    ///   - url: The file.
    ///   - name: The field name.
    ///   - filename: The file name the server sees; `nil` by default (the file's own name).
    ///   - contentType: The part's `Content-Type`; `nil` by default (guessed from the extension).
    public mutating func append(fileAt url: URL, name: String, filename: String? = nil, contentType: String? = nil) {
        let type = contentType ?? MediaType.guess(forExtension: url.pathExtension)
        parts.append(
            Part(name: name, filename: filename ?? url.lastPathComponent, contentType: type, content: .file(url)))
    }

    /// Encodes the part names and sizes, so that two forms compare equal only when they would send the same parts.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        for part in parts {
            try container.encode(part.name)
            try container.encode(part.filename)
            try container.encode(part.contentType)
            switch part.content {
            case .data(let data): try container.encode(data)
            case .file(let url): try container.encode(url)
            }
        }
    }

    // MARK: Encoding

    /// The body, encoded: in memory up to ``inMemoryThreshold``, else in a temporary file the caller removes.
    enum Encoded {
        case data(Data, contentType: String)
        case file(URL, contentType: String)
    }

    /// Encodes the form; files are checked first, so that nothing is sent if one cannot be read.
    ///
    /// Each file part must be a regular file, and is read as exactly the size it had when checked; reading stops when
    /// the calling task is cancelled or `totalTimeout` passes.
    ///
    /// - Parameter totalTimeout: The request's total timeout, counted from now (at most
    ///   ``NetworkConfiguration/maximumTimeout``); `nil` (the default) for no limit.
    /// - Throws: ``NetworkClientError/fileAccessFailed(url:reason:)`` when a part is not a readable regular file,
    ///   changes size while it is read, or its reading was cancelled or ran past `totalTimeout`.
    func encoded(totalTimeout: TimeInterval? = nil) throws(NetworkClientError) -> Encoded {
        let deadline = totalTimeout.map { DispatchTime.now() + min($0, NetworkConfiguration.maximumTimeout) }
        var size: Int64 = 0
        var fileSizes: [Int64] = []
        for part in parts {
            if case .file(let url) = part.content {
                let fileSize = try RegularFile.size(of: url)
                fileSizes.append(fileSize)
                size += fileSize
            }
        }
        let reading = PartReading(sizes: fileSizes, deadline: deadline)
        let boundary = Self.boundary(
            avoiding: parts.compactMap { if case .data(let data) = $0.content { data } else { nil } })
        let contentType = "multipart/form-data; boundary=\(boundary)"
        let framing = parts.reduce(Int64(0)) { $0 + Int64(head(of: $1, boundary: boundary).count + 2) }
        size += framing + Int64(boundary.utf8.count + 6)
        do {
            if size <= Int64(Self.inMemoryThreshold) {
                var body = Data(capacity: Int(size))
                try write(boundary: boundary, reading: reading) { body.append($0) }
                return .data(body, contentType: contentType)
            }
            let staged = FileManager.default.temporaryDirectory
                .appendingPathComponent("courier-multipart-\(UUID().uuidString)")
            guard FileManager.default.createFile(atPath: staged.path, contents: nil) else {
                throw NetworkClientError.fileAccessFailed(url: staged, reason: "the temporary file cannot be created")
            }
            do {
                let handle = try FileHandle(forWritingTo: staged)
                defer { try? handle.close() }
                try write(boundary: boundary, reading: reading) { try handle.write(contentsOf: $0) }
            } catch {
                try? FileManager.default.removeItem(at: staged)
                throw error
            }
            return .file(staged, contentType: contentType)
        } catch let error as NetworkClientError {
            throw error
        } catch {
            throw .fileAccessFailed(url: FileManager.default.temporaryDirectory, reason: "\(error)")
        }
    }

    /// The sizes the file parts had when checked, in order, and when reading them must have ended.
    private struct PartReading {
        let sizes: [Int64]
        let deadline: DispatchTime?
    }

    /// Writes the whole body through `output`, reading file parts in 1 MiB pieces: each exactly the size it had when
    /// checked (a part that grows or shrinks meanwhile fails), stopping between pieces when the calling task is
    /// cancelled or the deadline passes.
    private func write(boundary: String, reading: PartReading, to output: (Data) throws -> Void) throws {
        var fileIndex = 0
        for part in parts {
            try output(head(of: part, boundary: boundary))
            switch part.content {
            case .data(let data):
                try output(data)
            case .file(let url):
                try copy(url, size: reading.sizes[fileIndex], deadline: reading.deadline, to: output)
                fileIndex += 1
            }
            try output(Data("\r\n".utf8))
        }
        try output(Data("--\(boundary)--\r\n".utf8))
    }

    /// Copies the regular file at `url`, which must still hold `size` bytes, to `output` in 1 MiB pieces.
    private func copy(_ url: URL, size: Int64, deadline: DispatchTime?, to output: (Data) throws -> Void) throws {
        let (descriptor, openedSize) = try RegularFile.openForReading(url)
        defer { closeDescriptor(descriptor) }
        let changed = NetworkClientError.fileAccessFailed(url: url, reason: "the file changed size while it was read")
        guard openedSize == size else { throw changed }
        var offset: Int64 = 0
        var piece = Data(count: Int(min(size, 1 << 20)))
        while offset < size {
            if Task.isCancelled {
                throw NetworkClientError.fileAccessFailed(url: url, reason: "the request was cancelled")
            }
            if let deadline, DispatchTime.now() >= deadline {
                throw NetworkClientError.fileAccessFailed(
                    url: url, reason: "reading the file took longer than the request's total timeout")
            }
            let wanted = Int(min(Int64(piece.count), size - offset))
            let count = piece.withUnsafeMutableBytes {
                RegularFile.read(descriptor, into: $0.baseAddress!, count: wanted, at: offset)
            }
            if count < 0 {
                throw NetworkClientError.fileAccessFailed(
                    url: url, reason: "the file cannot be read: \(errnoDescription(errno))")
            }
            guard count > 0 else { throw changed }
            try output(piece.prefix(count))
            offset += Int64(count)
        }
        guard RegularFile.size(ofDescriptor: descriptor) == size else { throw changed }
    }

    /// The delimiter and headers in front of `part`'s content.
    private func head(of part: Part, boundary: String) -> Data {
        var head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Self.escaped(part.name))\""
        if let filename = part.filename { head += "; filename=\"\(Self.escaped(filename))\"" }
        head += "\r\n"
        if let contentType = part.contentType { head += "Content-Type: \(Self.escaped(contentType))\r\n" }
        head += "\r\n"
        return Data(head.utf8)
    }

    /// A name or file name inside quotes: `"`, CR and LF percent-encoded, as browsers do.
    static func escaped(_ text: String) -> String {
        guard text.contains(where: { $0 == "\"" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }) else { return text }
        return text.replacingScalars {
            switch $0 {
            case "\"": "%22"
            case "\r": "%0D"
            case "\n": "%0A"
            default: nil
            }
        }
    }

    /// A random boundary that occurs in none of `contents`.
    private static func boundary(avoiding contents: [Data]) -> String {
        while true {
            let random = (UUID().uuidString + UUID().uuidString).replacingOccurrences(of: "-", with: "")
            let boundary = "courier-\(random.lowercased())"
            let bytes = Data(boundary.utf8)
            if !contents.contains(where: { $0.range(of: bytes) != nil }) { return boundary }
        }
    }
}
