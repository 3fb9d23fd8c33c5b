import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// File uploads, multipart forms and downloads to disk, through a real URLSession against the loopback server.
@Suite("Transfers", .serialized)
struct TransferTests {
    /// A fresh, empty folder for one test's files.
    private static func scratchFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "courier-transfer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// Bytes that are not all alike, so that a shifted or truncated copy cannot compare equal.
    private static func pattern(_ count: Int, seed: UInt8 = 7) -> Data {
        var generator = SplitMix64(seed: UInt64(seed))
        return Data((0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A FileUpload streams the file: the server receives the same bytes, with Content-Length and Content-Type")
    func fileUpload() async throws {
        let folder = try Self.scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("photo.png")
        let bytes = Self.pattern(3_000_000)
        try bytes.write(to: file)
        let server = try echoServer()

        let echo = try await server.client().run(
            NetworkRequest<FileUpload, EchoedRequest>(path: "upload", method: .put, body: FileUpload(url: file))
        ).value

        #expect(echo.method == "PUT")
        #expect(echo.bodyData == bytes)
        #expect(echo.header("content-length") == "3000000")
        #expect(echo.header("content-type") == "image/png")
        #expect(echo.header("transfer-encoding") == nil)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A missing or unreadable upload file is fileAccessFailed naming the file, and nothing is sent")
    func missingUploadFile() async throws {
        let server = try echoServer()
        let missing = URL(fileURLWithPath: "/nonexistent/courier-\(UUID().uuidString).bin")
        await #expect {
            _ = try await server.client().run(
                NetworkRequest<FileUpload, VoidResponse>(method: .post, body: FileUpload(url: missing)))
        } throws: { error in
            guard case NetworkClientError.fileAccessFailed(let url, let reason) = error else { return false }
            return url == missing && reason.contains("does not exist") && "\(error)".contains(missing.path)
        }
        var form = MultipartFormData()
        form.append(fileAt: missing, name: "file")
        await #expect {
            _ = try await server.client().run(
                NetworkRequest<MultipartFormData, VoidResponse>(method: .post, body: form))
        } throws: { error in
            guard case NetworkClientError.fileAccessFailed(let url, _) = error else { return false }
            return url == missing
        }
        #expect(server.recordedRequests.isEmpty)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "Multipart: 3 fields and 2 files arrive byte for byte; quotes, CR/LF and non-ASCII names survive",
        arguments: [false, true])
    func multipart(staged: Bool) async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            // Over the in-memory threshold when `staged`, so the body is streamed from a temporary file.
            let fileBytes = Self.pattern(staged ? MultipartFormData.inMemoryThreshold + 1_000 : 70_000)
            let file = folder.appendingPathComponent("report.pdf")
            try fileBytes.write(to: file)
            let server = try echoServer()
            let recorder = BodyFileRecorder(wrapping: server.configuration().transport)
            let client = NetworkClient(
                configuration: NetworkConfiguration(transport: recorder, baseURL: server.baseURL))

            var form = MultipartFormData()
            form.append("plain", name: "title")
            form.append("--x\r\nContent-Disposition: form-data; name=\"evil\"\r\n\r\n", name: "tricky")
            form.append("ünïcødé ✓", name: "name \"quoted\"\r\nline")
            form.append(fileAt: file, name: "document")
            form.append(
                Data([0, 1, 2, 255]), name: "avatar", filename: "pho\"to\u{00E9}.bin", contentType: "image/x-test")
            let echo = try await client.run(
                NetworkRequest<MultipartFormData, EchoedRequest>(path: "form", method: .post, body: form)
            ).value

            let contentType = try #require(echo.header("content-type"))
            #expect(contentType.hasPrefix("multipart/form-data; boundary="))
            #expect(echo.header("content-length") == String(echo.bodyData.count))
            let parts = try MultipartParser.parse(echo.bodyData, contentType: contentType)
            #expect(parts.map(\.name) == ["title", "tricky", "name %22quoted%22%0D%0Aline", "document", "avatar"])
            #expect(parts[0].body == Data("plain".utf8) && parts[0].filename == nil)
            #expect(parts[1].body == Data("--x\r\nContent-Disposition: form-data; name=\"evil\"\r\n\r\n".utf8))
            #expect(parts[2].body == Data("ünïcødé ✓".utf8))
            #expect(parts[3].filename == "report.pdf" && parts[3].contentType == "application/pdf")
            #expect(parts[3].body == fileBytes)
            #expect(parts[4].filename == "pho%22to\u{00E9}.bin" && parts[4].contentType == "image/x-test")
            #expect(parts[4].body == Data([0, 1, 2, 255]))
            // A staged body is sent from its temporary file, which is gone once the call returned.
            let staging = recorder.bodyFiles
            #expect(staging.count == (staged ? 1 : 0))
            #expect(!staging.contains { FileManager.default.fileExists(atPath: $0.path) })
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A 64 MB download goes to the chosen file, byte for byte, with its size and type; progress ends at the total")
    func download() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let bytes = Self.pattern(64 << 20)
            let server = try LoopbackServer { _ in
                .respond(status: 200, headers: [ServerHeader(name: "Content-Type", value: "video/mp4")], body: bytes)
            }
            let destination = folder.appendingPathComponent("nested/movie.mp4")
            let reports = Locked<[TransferProgress]>([])

            let response = try await server.client().run(
                NetworkRequest<VoidRequest, DownloadedFile>(
                    path: "movie.mp4", method: .get, downloadDestination: destination,
                    onProgress: { progress in reports.withLock { $0.append(progress) } }))

            #expect(response.value.url == destination)
            #expect(response.value.byteCount == Int64(bytes.count))
            #expect(response.value.contentType == "video/mp4")
            #expect(response.statusCode == 200)
            #expect(try Data(contentsOf: destination) == bytes)
            let received = reports.withLock { $0 }.map(\.bytesReceived)
            #expect(received.count > 1, "progress was reported during the download")
            #expect(received == received.sorted(), "progress never goes back")
            #expect(received.last == Int64(bytes.count))
            #expect(reports.withLock { $0 }.last?.totalBytesExpectedToReceive == Int64(bytes.count))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A download answered with 404 throws unacceptableStatusCode with the body, and leaves no file")
    func downloadOf404() async throws {
        let folder = try Self.scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try LoopbackServer { _ in .respond(status: 404, body: Data("{\"error\":\"gone\"}".utf8)) }
        let destination = folder.appendingPathComponent("missing.bin")
        await #expect {
            _ = try await server.client().run(
                NetworkRequest<VoidRequest, DownloadedFile>(method: .get, downloadDestination: destination))
        } throws: { error in
            guard case NetworkClientError.unacceptableStatusCode(404, _, let data) = error else { return false }
            return data == Data("{\"error\":\"gone\"}".utf8)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Without Content-Disposition, a download to the default place is named after the URL's last component")
    func defaultDownloadName() async throws {
        let server = try LoopbackServer { _ in .respond(status: 200, body: Data("%PDF".utf8)) }
        let file = try await server.client().run(
            NetworkRequest<VoidRequest, DownloadedFile>(path: "files/report.pdf", method: .get)
        ).value
        defer { try? FileManager.default.removeItem(at: file.url.deletingLastPathComponent()) }
        #expect(file.url.lastPathComponent == "report.pdf")
        #expect(FileManager.default.contents(atPath: file.url.path) == Data("%PDF".utf8))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Cancelling mid-download stops the transfer and leaves no file at the destination")
    func cancelledDownload() async throws {
        let folder = try Self.scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try LoopbackServer { _ in
            .drip(status: 200, body: Data(count: 10_000), interval: .milliseconds(5))
        }
        let destination = folder.appendingPathComponent("slow.bin")
        let client = server.client()
        let received = Locked<Int64>(0)
        let call = Task {
            try await client.run(
                NetworkRequest<VoidRequest, DownloadedFile>(
                    method: .get, downloadDestination: destination,
                    onProgress: { progress in received.withLock { $0 = progress.bytesReceived } }))
        }
        // Cancel once the body is arriving (so the partial file exists), not after a guess at how long that takes.
        #expect(await eventually { received.withLock { $0 } > 0 })
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        // The call returns once the partial file is settled: nothing is left beside the destination.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Cancelling mid-upload stops the transfer, the server never gets a whole request, no staged file remains")
    func cancelledUpload() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = folder.appendingPathComponent("big.bin")
            try Data(count: 200 << 20).write(to: file)
            let gate = Gate()
            defer { gate.open() }
            // The server holds the request once its head arrived, so the client cannot finish sending the body.
            let server = try gatedServer(gate, answering: .respond(status: 204))
            var form = MultipartFormData()
            form.append(fileAt: file, name: "file")
            let recorder = BodyFileRecorder(wrapping: server.configuration().transport)
            let client = NetworkClient(
                configuration: NetworkConfiguration(transport: recorder, baseURL: server.baseURL))
            let reports = Locked<[TransferProgress]>([])
            let call = Task {
                try await client.run(
                    NetworkRequest<MultipartFormData, VoidResponse>(
                        method: .post, body: form, onProgress: { progress in reports.withLock { $0.append(progress) } })
                )
            }
            // Wait until the upload is under way, then cancel it.
            #expect(await eventually { !reports.withLock { $0 }.isEmpty })
            call.cancel()
            await #expect(throws: CancellationError.self) { try await call.value }
            let sent = reports.withLock { $0 }.last?.bytesSent ?? 0
            #expect(sent < 200 << 20, "the upload was stopped before the whole body went out")
            #expect(server.recordedRequests.isEmpty)
            // The staged form was removed before the call returned.
            let staging = recorder.bodyFiles
            #expect(staging.count == 1)
            #expect(!staging.contains { FileManager.default.fileExists(atPath: $0.path) })
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Upload progress reports bytes sent, never going back, ending at the file's size")
    func uploadProgress() async throws {
        let folder = try Self.scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("data.bin")
        try Self.pattern(2_000_000).write(to: file)
        let server = try LoopbackServer { _ in .respond(status: 204) }
        let reports = Locked<[TransferProgress]>([])
        _ = try await server.client().run(
            NetworkRequest<FileUpload, VoidResponse>(
                method: .post, body: FileUpload(url: file),
                onProgress: { progress in reports.withLock { $0.append(progress) } }))
        let sent = reports.withLock { $0 }.map(\.bytesSent)
        #expect(sent == sent.sorted())
        #expect(sent.last == 2_000_000)
        #expect(reports.withLock { $0 }.contains { $0.totalBytesExpectedToSend == 2_000_000 })
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A progress handler that blocks holds up no other call, and the call ends after its last report",
        .timeLimit(.minutes(1)))
    func blockingProgressHandler() async throws {
        let server = try LoopbackServer { request in
            request.path == "/big"
                ? .stream(status: 200, length: 2_000_000) : .respond(status: 200, body: Data("ok".utf8))
        }
        let other = try LoopbackServer { _ in .respond(status: 200, body: Data("ok".utf8)) }
        let release = DispatchSemaphore(value: 0)
        let reports = Locked<[Int64]>([])
        let download = Task {
            try await server.client().run(
                NetworkRequest<VoidRequest, Data>(
                    path: "big", method: .get,
                    onProgress: { progress in
                        let first = reports.withLock { reports in
                            reports.append(progress.bytesReceived)
                            return reports.count == 1
                        }
                        if first { release.wait() }  // Blocks until the other calls are done.
                    }))
        }
        try #require(await eventually { !reports.withLock { $0 }.isEmpty })

        // The handler is blocked: another configuration, and the same one, still get their answers.
        #expect(try await other.client().run(NetworkRequest<VoidRequest, String>(method: .get)).value == "ok")
        #expect(try await server.client().run(NetworkRequest<VoidRequest, String>(method: .get)).value == "ok")
        release.signal()

        let body = try await download.value.value
        #expect(body.count == 2_000_000)
        let received = reports.withLock { $0 }
        #expect(received.last == 2_000_000, "the call ended after its last report")
        #expect(received == received.sorted())
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("retrying() sends a file upload again, whole, after a 503")
    func retriedUpload() async throws {
        let folder = try Self.scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("data.bin")
        let bytes = Self.pattern(300_000)
        try bytes.write(to: file)
        let attempts = Locked(0)
        let server = try LoopbackServer { _ in
            attempts.withLock { count in
                count += 1
                return count == 1 ? .respond(status: 503) : .echo
            }
        }
        let client = server.client().retrying(RetryPolicy(maxAttempts: 2, baseDelay: 0, maxDelay: 0))

        let echo = try await client.run(
            NetworkRequest<FileUpload, EchoedRequest>(path: "put", method: .put, body: FileUpload(url: file))
        ).value

        #expect(server.recordedRequests.count == 2)
        #expect(server.recordedRequests.map(\.body) == [bytes, bytes])
        #expect(echo.bodyData == bytes)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A 307 answer to a file upload sends the whole file again to the new location")
    func redirectedUpload() async throws {
        let folder = try Self.scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("data.bin")
        let bytes = Self.pattern(500_000)
        try bytes.write(to: file)
        let server = try LoopbackServer { request in
            request.path == "/old" ? .redirect(status: 307, location: "/new") : .echo
        }
        let echo = try await server.client().run(
            NetworkRequest<FileUpload, EchoedRequest>(path: "old", method: .post, body: FileUpload(url: file))
        ).value
        #expect(echo.path == "/new")
        #expect(echo.method == "POST")
        #expect(echo.bodyData == bytes)
    }
}

/// A multipart/form-data parser written from RFC 7578, independent of Courier's encoder.
enum MultipartParser {
    struct Part {
        var name: String?
        var filename: String?
        var contentType: String?
        var body: Data
    }

    struct Malformed: Error {}

    static func parse(_ body: Data, contentType: String) throws -> [Part] {
        guard let range = contentType.range(of: "boundary=") else { throw Malformed() }
        let delimiter = Data(("--" + contentType[range.upperBound...]).utf8)
        var parts: [Part] = []
        guard var cursor = body.range(of: delimiter)?.upperBound else { throw Malformed() }
        while true {
            // After a delimiter: "--" ends the body, CRLF starts a part.
            if body[cursor...].starts(with: Data("--".utf8)) { return parts }
            guard body[cursor...].starts(with: Data("\r\n".utf8)) else { throw Malformed() }
            let headStart = cursor + 2
            guard let headEnd = body.range(of: Data("\r\n\r\n".utf8), in: headStart..<body.endIndex) else {
                throw Malformed()
            }
            let head = String(decoding: body[headStart..<headEnd.lowerBound], as: UTF8.self)
            guard let next = body.range(of: Data("\r\n".utf8) + delimiter, in: headEnd.upperBound..<body.endIndex)
            else {
                throw Malformed()
            }
            var part = Part(body: body[headEnd.upperBound..<next.lowerBound])
            for line in head.components(separatedBy: "\r\n") {
                let lower = line.lowercased()
                if lower.hasPrefix("content-type:") {
                    part.contentType = line.dropFirst("content-type:".count).trimmingCharacters(in: .whitespaces)
                } else if lower.hasPrefix("content-disposition:") {
                    part.name = quoted("name", in: line)
                    part.filename = quoted("filename", in: line)
                }
            }
            parts.append(part)
            cursor = next.upperBound
        }
    }

    /// The value of `key="…"` in a Content-Disposition line.
    private static func quoted(_ key: String, in line: String) -> String? {
        guard let start = line.range(of: "; \(key)=\"") else { return nil }
        let rest = line[start.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }
}

/// Forwards each exchange to a real transport and records the files request bodies were streamed from: where a staged
/// multipart form was, to check that it is gone (the shared temporary folder may hold other tests' and processes').
final class BodyFileRecorder: HTTPTransport {
    private let wrapped: any HTTPTransport
    private let files = Locked<[URL]>([])

    init(wrapping transport: any HTTPTransport) {
        wrapped = transport
    }

    var bodyFiles: [URL] { files.withLock { $0 } }

    func send(_ exchange: HTTPExchange) async throws {
        if case .file(let url, _) = exchange.body { files.withLock { $0.append(url) } }
        try await wrapped.send(exchange)
    }
}
