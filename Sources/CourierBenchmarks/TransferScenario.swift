import Courier
import Foundation
import LoopbackHTTPServer

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One transfer of `--transfer`, meant to be the only work of its process, so that the peak resident set
/// (`getrusage` `ru_maxrss`, what `/usr/bin/time -v` reports) is its own. The server runs in another process.
enum TransferScenario: String, Sendable, CaseIterable, Codable {
    /// `NetworkRequest<VoidRequest, DownloadedFile>` to a destination in a temporary folder.
    case courierDownload = "courier-download"
    /// `URLSession.download(for:)`, then the file moved to the same kind of destination.
    case rawDownload = "raw-download"
    /// `NetworkRequest<FileUpload, DiscardReceipt>` of a generated file.
    case courierUpload = "courier-upload"
    /// `URLSession.upload(for:fromFile:)` of the same file.
    case rawUpload = "raw-upload"
    /// Diagnostic: the same upload as a task without a completion handler, on a session whose delegate receives the
    /// answer, as a client that reports upload progress (Courier's sessions) must run it on Linux: corelibs then
    /// queues a `didSendBodyData` operation on the delegate queue for every piece of the body it hands to libcurl.
    case rawUploadDelegate = "raw-upload-delegate"
    /// `NetworkRequest<MultipartFormData, DiscardReceipt>`: one text field and the generated file (staged by Courier
    /// in a temporary file, inside the timed call).
    case courierMultipart = "courier-multipart"
    /// `upload(for:fromFile:)` of the same form, framed into a file before the timer starts (not timed).
    case rawMultipart = "raw-multipart"
    /// The same as `raw-multipart`, but the framed file is written inside the timer (1 MiB pieces, as Courier
    /// stages it): the same work Courier does.
    case rawMultipartStaged = "raw-multipart-staged"

    /// Whether the client uploads (the server discards) rather than downloads.
    var isUpload: Bool {
        switch self {
        case .courierDownload, .rawDownload: false
        default: true
        }
    }
}

/// What one `--transfer` run measured.
struct TransferResult: Codable, Sendable {
    let scenario: TransferScenario
    /// The payload: the file downloaded or uploaded (without multipart framing).
    let bytes: Int
    /// Body bytes on the wire: the payload, plus the multipart framing for the multipart scenarios.
    let bodyBytes: Int
    /// The transfer alone, on the monotonic clock: from the call to its result (downloads: the file moved to its
    /// destination; uploads: the server's answer decoded).
    let wallSeconds: Double
    /// The client process's CPU time (user and system, every thread) over the same span: less disturbed than wall
    /// time by other work on the machine.
    let cpuSeconds: Double
    /// The process's peak resident set at the end of the transfer.
    let peakResidentBytes: Int
    /// The process's peak resident set when the transfer started (payload prepared, client created).
    let peakResidentBytesBefore: Int

    /// One line for people.
    var line: String {
        let rate = Double(bodyBytes) / wallSeconds / 1_000_000
        return "\(scenario.rawValue): \(bytes) bytes in \(format(wallSeconds, digits: 3)) s "
            + "(\(format(rate, digits: 0)) MB/s, CPU \(format(cpuSeconds, digits: 3)) s), peak RSS \(format(Double(peakResidentBytes) / 1e6, digits: 1)) MB "
            + "(\(format(Double(peakResidentBytesBefore) / 1e6, digits: 1)) MB before the transfer)"
    }
}

/// Runs `--transfer`: one transfer against the server at `baseURL` (or a transfer server started as a child process
/// when it is `nil`), checks every byte, and prints one line (or, with `json`, one JSON object).
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func runTransfer(_ scenario: TransferScenario, size: Int, baseURL: String?, json: Bool) async throws {
    let server = baseURL == nil ? try TransferServerProcess() : nil
    defer { server?.stop() }
    var base = baseURL ?? server?.baseURL ?? ""
    while base.hasSuffix("/") { base.removeLast() }
    guard let url = URL(string: base), url.host != nil else {
        throw BenchmarkError.usage("not an absolute http URL: \(base)")
    }
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-transfer-\(UUID())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }

    let transfer = Transfer(scenario: scenario, size: size, base: base, baseURL: url, folder: folder)
    let result = try await transfer.run()
    if json {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print(String(decoding: try encoder.encode(result), as: UTF8.self))
    } else {
        print(result.line)
    }
}

/// One transfer: its preparation (not timed), the timed call, and the checks.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private struct Transfer {
    let scenario: TransferScenario
    let size: Int
    let base: String
    let baseURL: URL
    let folder: URL

    /// The multipart form's text field.
    static let caption = "Courier transfer benchmark"

    func run() async throws -> TransferResult {
        // Courier's own session (`NetworkConfiguration(baseURL:)`), or raw URLSession on a session made from the
        // same configuration: `.default` without a URLCache (what Courier creates on Linux).
        let courier = NetworkClient(configuration: NetworkConfiguration(baseURL: baseURL))
        let session = URLSession(configuration: Target.sessionConfiguration(.default))
        defer { session.finishTasksAndInvalidate() }

        // Not timed: the payload file, written in 1 MiB pieces, so that making it does not raise the peak.
        let payload = folder.appendingPathComponent("payload.bin")
        var payloadChecksum: UInt32 = 1
        if scenario.isUpload {
            payloadChecksum = try CountingBytes.write(size, to: payload)
        }
        var framed: (url: URL, form: MultipartFraming)?
        if scenario == .rawMultipart {
            let form = MultipartFraming(boundary: MultipartFraming.randomBoundary(), caption: Self.caption)
            let url = folder.appendingPathComponent("framed.bin")
            try form.write(payload: payload, to: url)
            framed = (url, form)
        }
        let destination = folder.appendingPathComponent("download.bin")

        let before = peakResidentBytes()
        let cpuStart = processCPUSeconds()
        let clock = ContinuousClock()
        let start = clock.now
        var receipt: DiscardReceipt?
        switch scenario {
        case .courierDownload:
            let file = try await courier.run(
                NetworkRequest<VoidRequest, DownloadedFile>(
                    path: "bytes/\(size)", method: .get, downloadDestination: destination)
            )
            .value
            guard file.url == destination else { throw BenchmarkError.badResponse("the file is at \(file.url)") }
        case .rawDownload:
            let (location, response) = try await session.download(for: URLRequest(url: url("/bytes/\(size)")))
            try check(response)
            try FileManager.default.moveItem(at: location, to: destination)
        case .courierUpload:
            receipt = try await courier.run(
                NetworkRequest<FileUpload, DiscardReceipt>(
                    path: "discard", method: .post,
                    body: FileUpload(url: payload, contentType: "application/octet-stream"))
            )
            .value
        case .rawUpload:
            receipt = try await rawUpload(session, file: payload, contentType: "application/octet-stream")
        case .rawUploadDelegate:
            receipt = try await DelegateUpload.run(
                uploadRequest(contentType: "application/octet-stream"), file: payload,
                configuration: Target.sessionConfiguration(.default))
        case .courierMultipart:
            var form = MultipartFormData()
            form.append(Self.caption, name: "caption")
            form.append(
                fileAt: payload, name: "file", filename: MultipartFraming.filename,
                contentType: "application/octet-stream")
            receipt = try await courier.run(
                NetworkRequest<MultipartFormData, DiscardReceipt>(path: "discard", method: .post, body: form)
            )
            .value
        case .rawMultipart:
            guard let framed else { throw BenchmarkError.badResponse("the framed body was not prepared") }
            receipt = try await rawUpload(session, file: framed.url, contentType: framed.form.contentType)
        case .rawMultipartStaged:
            let form = MultipartFraming(boundary: MultipartFraming.randomBoundary(), caption: Self.caption)
            let staged = folder.appendingPathComponent("staged.bin")
            try form.write(payload: payload, to: staged)
            defer { try? FileManager.default.removeItem(at: staged) }
            receipt = try await rawUpload(session, file: staged, contentType: form.contentType)
        }
        let elapsed = clock.now - start
        let cpu = processCPUSeconds() - cpuStart
        let peak = peakResidentBytes()

        // Not timed: every byte checked.
        let bodyBytes: Int
        if let receipt {
            bodyBytes = try verify(receipt, payloadChecksum: payloadChecksum)
        } else {
            try CountingBytes.verify(destination, size: size)
            bodyBytes = size
        }
        return TransferResult(
            scenario: scenario, bytes: size, bodyBytes: bodyBytes,
            wallSeconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
            cpuSeconds: cpu, peakResidentBytes: peak, peakResidentBytesBefore: before)
    }

    private func url(_ path: String) -> URL {
        guard let url = URL(string: base + path) else { preconditionFailure("not a URL: \(base + path)") }
        return url
    }

    /// `POST /discard` with the headers Courier sends.
    private func uploadRequest(contentType: String) -> URLRequest {
        var request = URLRequest(url: url(TransferServer.discardPath))
        request.httpMethod = "POST"
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        return request
    }

    /// Raw `upload(for:fromFile:)` to `/discard`, and the answer decoded.
    private func rawUpload(_ session: URLSession, file: URL, contentType: String) async throws -> DiscardReceipt {
        let (data, response) = try await session.upload(for: uploadRequest(contentType: contentType), fromFile: file)
        try check(response)
        return try JSONDecoder().decode(DiscardReceipt.self, from: data)
    }

    /// Checks what the server received against the payload (and, for a form, its framing, rebuilt from the boundary
    /// the server saw); returns the body's size.
    private func verify(_ receipt: DiscardReceipt, payloadChecksum: UInt32) throws -> Int {
        var expectedSize = size
        var expectedChecksum = payloadChecksum
        if scenario == .courierMultipart || scenario == .rawMultipart || scenario == .rawMultipartStaged {
            guard let contentType = receipt.contentType, let boundary = MultipartFraming.boundary(in: contentType)
            else {
                throw BenchmarkError.badResponse("the form arrived without a boundary: \(receipt.contentType ?? "-")")
            }
            let form = MultipartFraming(boundary: boundary, caption: Self.caption)
            expectedSize += form.head.count + form.tail.count
            expectedChecksum = adler32Combine(
                adler32Combine(Adler32.checksum(form.head), payloadChecksum, secondLength: size),
                Adler32.checksum(form.tail), secondLength: form.tail.count)
        }
        guard receipt.received == expectedSize, receipt.adler32 == expectedChecksum else {
            throw BenchmarkError.badResponse(
                "the server received \(receipt.received) bytes with Adler-32 \(hex(receipt.adler32)); expected "
                    + "\(expectedSize) bytes with \(hex(expectedChecksum))")
        }
        return expectedSize
    }
}

/// Checks that an answer is a 200.
private func check(_ response: URLResponse?) throws {
    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
    guard status == 200 else { throw BenchmarkError.badResponse("status \(status)") }
}

/// `raw-upload-delegate`: an upload task without a completion handler on a session of its own whose delegate collects
/// the answer (and is told of every piece sent, as corelibs tells any task delegate).
private final class DelegateUpload: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // `answer` and `continuation` are guarded by `lock`.
    private let lock = NSLock()
    private var answer = Data()
    private var continuation: CheckedContinuation<Data, any Error>?

    static func run(_ request: URLRequest, file: URL, configuration: URLSessionConfiguration) async throws
        -> DiscardReceipt
    {
        let delegate = DelegateUpload()
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let data = try await withCheckedThrowingContinuation { continuation in
            delegate.lock.withLock { delegate.continuation = continuation }
            session.uploadTask(with: request, fromFile: file).resume()
        }
        return try JSONDecoder().decode(DiscardReceipt.self, from: data)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.withLock { answer.append(data) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (continuation, answer) = lock.withLock {
            defer { self.continuation = nil }
            return (self.continuation, self.answer)
        }
        if let error {
            continuation?.resume(throwing: error)
            return
        }
        do {
            try check(task.response)
            continuation?.resume(returning: answer)
        } catch {
            continuation?.resume(throwing: error)
        }
    }
}

/// The bytes of every payload: byte `i` is `UInt8(i % 251)`, as `GET /bytes/<n>` sends them.
enum CountingBytes {
    /// A whole number of periods, about 1 MiB: the piece files are written and checked in.
    static let tile = Data((0..<(251 * 4_096)).map { UInt8($0 % 251) })

    /// Writes `size` counting bytes to a new file at `url`, a piece at a time; returns their Adler-32.
    static func write(_ size: Int, to url: URL) throws -> UInt32 {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw BenchmarkError.badResponse("cannot create \(url.path)")
        }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        return try write(size, to: handle)
    }

    /// Writes `size` counting bytes at the handle's position; returns their Adler-32.
    static func write(_ size: Int, to handle: FileHandle) throws -> UInt32 {
        var checksum = Adler32()
        var remaining = size
        while remaining > 0 {
            let piece = remaining >= tile.count ? tile : tile.prefix(remaining)
            try handle.write(contentsOf: piece)
            checksum.update(piece)
            remaining -= piece.count
        }
        return checksum.value
    }

    /// Checks that the file at `url` holds exactly `size` counting bytes.
    static func verify(_ url: URL, size: Int) throws {
        // One more period than `tile`, so that a piece starting at any phase can be compared in one go.
        let expected = tile + tile.prefix(251)
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var offset = 0
        while let piece = try handle.read(upToCount: tile.count), !piece.isEmpty {
            let phase = offset % 251
            let same = piece.withUnsafeBytes { read in
                expected.withUnsafeBytes { memcmp(read.baseAddress!, $0.baseAddress! + phase, read.count) == 0 }
            }
            guard offset + piece.count <= size, same else {
                throw BenchmarkError.badResponse("the downloaded file differs from the sent bytes after byte \(offset)")
            }
            offset += piece.count
        }
        guard offset == size else {
            throw BenchmarkError.badResponse("the downloaded file has \(offset) bytes, not \(size)")
        }
    }
}

/// A `multipart/form-data` body of one text field and one file part, framed as Courier's ``MultipartFormData``
/// frames it (RFC 7578): what the raw multipart scenarios send, and what the checks expect from Courier.
struct MultipartFraming {
    /// The file part's file name.
    static let filename = "payload.bin"

    let boundary: String
    /// Everything before the file's bytes: the text field, then the file part's delimiter and headers.
    let head: Data
    /// Everything after the file's bytes: the line break and the closing delimiter.
    let tail: Data

    init(boundary: String, caption: String) {
        self.boundary = boundary
        head = Data(
            ("--\(boundary)\r\nContent-Disposition: form-data; name=\"caption\"\r\n\r\n\(caption)\r\n"
                + "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\(Self.filename)\"\r\n"
                + "Content-Type: application/octet-stream\r\n\r\n").utf8)
        tail = Data("\r\n--\(boundary)--\r\n".utf8)
    }

    var contentType: String {
        "multipart/form-data; boundary=\(boundary)"
    }

    /// A boundary like Courier's: a prefix and 244 random bits.
    static func randomBoundary() -> String {
        "raw-" + (UUID().uuidString + UUID().uuidString).replacingOccurrences(of: "-", with: "").lowercased()
    }

    /// The boundary parameter of a `multipart/form-data` content type.
    static func boundary(in contentType: String) -> String? {
        guard let range = contentType.range(of: "boundary=") else { return nil }
        let value = contentType[range.upperBound...].prefix { $0 != ";" }
        return value.isEmpty ? nil : String(value)
    }

    /// Writes the framed body to a new file at `url`, copying the payload in 1 MiB pieces.
    func write(payload: URL, to url: URL) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw BenchmarkError.badResponse("cannot create \(url.path)")
        }
        let output = try FileHandle(forWritingTo: url)
        defer { try? output.close() }
        let input = try FileHandle(forReadingFrom: payload)
        defer { try? input.close() }
        try output.write(contentsOf: head)
        while let piece = try input.read(upToCount: 1 << 20), !piece.isEmpty { try output.write(contentsOf: piece) }
        try output.write(contentsOf: tail)
    }
}

/// The Adler-32 of two byte sequences one after the other, from the checksum of each (zlib's `adler32_combine`).
func adler32Combine(_ first: UInt32, _ second: UInt32, secondLength: Int) -> UInt32 {
    let modulus: UInt64 = 65_521
    let remainder = UInt64(secondLength) % modulus
    var sum1 = UInt64(first & 0xFFFF)
    var sum2 = (remainder * sum1) % modulus
    sum1 += UInt64(second & 0xFFFF) + modulus - 1
    sum2 += UInt64(first >> 16) + UInt64(second >> 16) + modulus - remainder
    sum1 %= modulus
    sum2 %= modulus
    return UInt32(sum2 << 16 | sum1)
}

/// `value` as eight hexadecimal digits.
func hex(_ value: UInt32) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 8 - digits.count) + digits
}
