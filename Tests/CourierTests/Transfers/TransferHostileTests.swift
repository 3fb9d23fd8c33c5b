import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Issue 21, hostile round three, the transfer findings: what a hostile file system, another local user or a lying
/// server can do to an upload or a download, and what the caller gets instead (the downloaded bytes or a typed error,
/// never a lost folder, a smuggled request or a splice of two files). The cases that could crash or freeze the process
/// on the old code run in a child process (`CourierProbe`).
@Suite("Transfers, hostile round three", .serialized)
struct TransferHostileTests {
    /// A fresh, empty folder for one test's files.
    static func scratchFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "courier-hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// The names in `folder` that are Courier's partial files.
    static func partialFiles(in folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter {
            $0.hasSuffix(".courier-partial")
        }
    }

    /// Whether `error` is `fileAccessFailed` for `url` with a reason that contains `text`.
    static func isFileAccessFailure(_ error: any Error, url: URL, containing text: String) -> Bool {
        guard case NetworkClientError.fileAccessFailed(let failed, let reason) = error else { return false }
        return failed.standardizedFileURL.path == url.standardizedFileURL.path && reason.contains(text)
    }

    /// What is at `url` itself (a link is not followed), or `nil`.
    static func fileType(at url: URL) -> FileAttributeType? {
        (try? FileManager.default.attributesOfItem(atPath: url.path)[.type]) as? FileAttributeType
    }

    // MARK: 1. Download destinations

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A download whose destination is a folder holding files fails with fileAccessFailed; the folder is intact")
    func destinationIsADirectory() async throws {
        let folder = try Self.scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("photos")
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
        let kept = destination.appendingPathComponent("holiday.jpg")
        try Data("the caller's photo".utf8).write(to: kept)
        let server = try LoopbackServer { _ in .respond(status: 200, body: Data("downloaded".utf8)) }
        let request = NetworkRequest<VoidRequest, DownloadedFile>(
            path: "file", method: .get, downloadDestination: destination)

        await #expect {
            _ = try await server.client().run(request)
        } throws: { error in
            Self.isFileAccessFailure(error, url: destination, containing: "directory")
        }
        #expect(try Data(contentsOf: kept) == Data("the caller's photo".utf8))
        #expect(Self.partialFiles(in: folder).isEmpty)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A download whose destination is a dangling symbolic link is refused; the link is neither followed nor replaced"
    )
    func destinationIsADanglingLink() async throws {
        let folder = try Self.scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let elsewhere = folder.appendingPathComponent("elsewhere", isDirectory: true)
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let pointedAt = elsewhere.appendingPathComponent("planted")
        let destination = folder.appendingPathComponent("report.pdf")
        try FileManager.default.createSymbolicLink(at: destination, withDestinationURL: pointedAt)
        let server = try LoopbackServer { _ in .respond(status: 200, body: Data("downloaded".utf8)) }
        let request = NetworkRequest<VoidRequest, DownloadedFile>(
            path: "file", method: .get, downloadDestination: destination)

        await #expect {
            _ = try await server.client().run(request)
        } throws: { error in
            Self.isFileAccessFailure(error, url: destination, containing: "symbolic link")
        }
        #expect(
            try FileManager.default.destinationOfSymbolicLink(atPath: destination.path) == pointedAt.path,
            "the link is left as it was")
        #expect(!FileManager.default.fileExists(atPath: pointedAt.path), "nothing was written through the link")
        #expect(Self.partialFiles(in: folder).isEmpty)
    }

    /// As root every folder is writable: the probe drops to `nobody` to meet a folder it may not write to, so it runs
    /// from a copy that `nobody` can reach wherever the repository is cloned (`/root` is mode 0700).
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A download into a read-only folder says EACCES (permission denied), not ENOENT")
    func readOnlyFolder() async throws {
        try await expectProbe(
            "read-only-download-folder", arguments: ["--time-limit", "30"], timeLimit: .seconds(60),
            reachableByAnyUser: true)
    }

    // MARK: 2. Non-regular files as bodies

    /// On the old code the FIFO froze every URLSession in the probe (the watchdog then ends it) and `/dev/zero` in a
    /// form grew without bound.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("FileUpload and multipart parts of /dev/zero, a FIFO or a link to them fail with fileAccessFailed at once")
    func specialFileBodies() async throws {
        try await expectProbe("special-file-bodies", arguments: ["--time-limit", "30"], timeLimit: .seconds(60))
    }

    // MARK: 3. Declared lengths

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A declared Content-Length of 60 GB, or 40 of 100 MiB under a 2.5 GB address-space headroom, is not reserved")
    func declaredLengths() async throws {
        try await MemoryHeavyTests.exclusively {
            try await expectProbe("declared-lengths", arguments: ["--time-limit", "30"], timeLimit: .seconds(60))
        }
    }

    // MARK: 4. A file that changes size during a FileUpload

    /// A server whose `/upload` holds the request body unread until `release` opens (after opening `headArrived`),
    /// then answers with the number of body bytes it read; every other path is echoed.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    static func heldUploadServer(headArrived: Gate, release: Gate) throws -> LoopbackServer {
        try LoopbackServer(
            requestBodyMode: { _, path in
                if path == "/upload" {
                    headArrived.open()
                    release.wait()
                }
                return .discard
            },
            handler: { request in
                guard request.path == "/upload" else { return .echo }
                return .respond(status: 200, body: Data("\(request.discardedBody?.byteCount ?? -1)".utf8))
            })
    }

    /// 32 MiB: far more than loopback's socket buffers, so the upload is still reading the file while the server holds.
    static let uploadSize = 32 << 20

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A file that grows during a FileUpload sends nothing past Content-Length and fails with fileAccessFailed")
    func growingUploadFile() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = folder.appendingPathComponent("upload.bin")
            try Data(count: Self.uploadSize).write(to: file)
            let (headArrived, release) = (Gate(), Gate())
            let server = try Self.heldUploadServer(headArrived: headArrived, release: release)
            let client = server.client()
            let upload = NetworkRequest<FileUpload, String>(path: "upload", method: .post, body: FileUpload(url: file))
            let call = Task { try await client.run(upload).value }
            #expect(await Task.detached { headArrived.wait() }.value, "the upload reached the server")

            // Another request in the file's tail: sent past Content-Length, the server would run it.
            let handle = try FileHandle(forWritingTo: file)
            try handle.seekToEnd()
            try handle.write(contentsOf: Data("GET /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
            try handle.close()
            release.open()

            let result = await call.result
            #expect {
                _ = try result.get()
            } throws: { error in
                Self.isFileAccessFailure(error, url: file, containing: "changed size")
            }
            let next = try await client.run(Echo(path: "next", method: .get)).value
            #expect(next.path == "/next", "the next call gets its own response")
            #expect(!server.recordedRequests.contains { $0.path == "/smuggled" }, "no smuggled request ran")
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A file truncated during a FileUpload fails with fileAccessFailed at once, not after the idle timeout")
    func truncatedUploadFile() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = folder.appendingPathComponent("upload.bin")
            try Data(count: Self.uploadSize).write(to: file)
            let (headArrived, release) = (Gate(), Gate())
            let server = try Self.heldUploadServer(headArrived: headArrived, release: release)
            let client = server.client()  // Its idle timeout is 10 s.
            let upload = NetworkRequest<FileUpload, String>(path: "upload", method: .post, body: FileUpload(url: file))
            let call = Task { try await client.run(upload).value }
            #expect(await Task.detached { headArrived.wait() }.value, "the upload reached the server")

            #expect(truncate(file.path, off_t(Self.uploadSize / 2)) == 0)
            let took = await elapsed {
                release.open()
                await #expect {
                    _ = try await call.value
                } throws: { error in
                    Self.isFileAccessFailure(error, url: file, containing: "changed size")
                }
            }
            #expect(took < promptly)
        }
    }

    /// A session delegate of the caller's own: Courier cannot drive such a session and sends through its tasks.
    final class CallersDelegate: NSObject, URLSessionDataDelegate, Sendable {}

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("On a caller's session with its own delegate, a file that grows during a FileUpload fails the same way")
    func growingUploadFileOnCallersSession() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = folder.appendingPathComponent("upload.bin")
            try Data(count: Self.uploadSize).write(to: file)
            let (headArrived, release) = (Gate(), Gate())
            let server = try Self.heldUploadServer(headArrived: headArrived, release: release)
            let session = URLSession(
                configuration: .ephemeral, delegate: CallersDelegate(), delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            let client = NetworkClient(configuration: NetworkConfiguration(session: session, baseURL: server.baseURL))
            let upload = NetworkRequest<FileUpload, String>(path: "upload", method: .post, body: FileUpload(url: file))
            let call = Task { try await client.run(upload).value }
            #expect(await Task.detached { headArrived.wait() }.value, "the upload reached the server")

            let handle = try FileHandle(forWritingTo: file)
            try handle.seekToEnd()
            try handle.write(contentsOf: Data("GET /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
            try handle.close()
            release.open()

            await #expect {
                _ = try await call.value
            } throws: { error in
                Self.isFileAccessFailure(error, url: file, containing: "changed size")
            }
            #expect(!server.recordedRequests.contains { $0.path == "/smuggled" }, "no smuggled request ran")
        }
    }

    // MARK: 5. The partial file swapped during a download

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A partial file swapped for a symbolic link mid-download never becomes the result: the bytes, or an error")
    func partialFileSwappedForALink() async throws {
        let folder = try Self.scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let attackersFile = folder.appendingPathComponent("attacker.txt")
        try Data("the attacker's content".utf8).write(to: attackersFile)
        let destination = folder.appendingPathComponent("file.bin")
        let body = Data((0..<200_000).map { UInt8($0 % 251) })
        let swapped = Locked(false)
        let server = try LoopbackServer { _ in
            .split(
                status: 200, body: body, splitAt: 100_000,
                between: {
                    // Once the partial file holds bytes, another user puts a link to their own file in its place.
                    let deadline = Date(timeIntervalSinceNow: 10)
                    while Date() < deadline {
                        if let name = Self.partialFiles(in: folder).first {
                            let partial = folder.appendingPathComponent(name)
                            let attributes = try? FileManager.default.attributesOfItem(atPath: partial.path)
                            if ((attributes?[.size] as? NSNumber)?.intValue ?? 0) > 0 {
                                let link = folder.appendingPathComponent("link")
                                guard
                                    (try? FileManager.default.createSymbolicLink(
                                        at: link, withDestinationURL: attackersFile))
                                        != nil, rename(link.path, partial.path) == 0
                                else { return }
                                swapped.withLock { $0 = true }
                                return
                            }
                        }
                        usleep(1_000)  // Polling for the client's file, bounded by the deadline above.
                    }
                })
        }
        let request = NetworkRequest<VoidRequest, DownloadedFile>(
            path: "file.bin", method: .get, downloadDestination: destination)

        let result: Result<DownloadedFile, any Error>
        do {
            result = .success(try await server.client().run(request).value)
        } catch {
            result = .failure(error)
        }

        #expect(swapped.withLock { $0 }, "the partial file was swapped")
        switch result {
        case .success(let file):
            #expect(Self.fileType(at: file.url) == .typeRegular, "the result is not a link")
            #expect(try Data(contentsOf: file.url) == body)
        case .failure(let error):
            #expect(Self.isFileAccessFailure(error, url: destination, containing: "replaced"), "\(error)")
            #expect(Self.fileType(at: destination) == nil, "nothing is left at the destination")
        }
        #expect(try Data(contentsOf: attackersFile) == Data("the attacker's content".utf8))
    }

    // MARK: 6. What a resume accepts

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A 206 that repeats no validator is not spliced onto the kept bytes: the download starts over")
    func resumeWithoutValidator() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try DownloadResumeTests.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let size = DownloadResumeTests.size
            let other = Data(repeating: 0xEE, count: size - 1_000_000)
            let script = DownloadResumeTests.Script([
                { _ in DownloadResumeTests.cutOff(after: 1_000_000) },
                { _ in
                    .respond(
                        status: 206,
                        headers: [ServerHeader(name: "Content-Range", value: "bytes 1000000-\(size - 1)/\(size)")],
                        body: other)
                },
                { _ in
                    .respond(
                        status: 200, headers: DownloadResumeTests.resumable,
                        body: DownloadResumeTests.bytes(0..<size))
                },
            ])
            let client = try script.client()
            _ = try? await client.run(DownloadResumeTests.download(to: folder))

            let response = try await client.run(DownloadResumeTests.download(to: folder))

            let requests = script.requests.withLock { $0 }
            #expect(requests.count == 3)
            #expect(requests.dropFirst().first?.header("Range") == "bytes=1000000-")
            #expect(requests.last?.header("Range") == nil, "started over without a range")
            #expect(try Data(contentsOf: response.value.url) == DownloadResumeTests.bytes(0..<size))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A 206 to a download that sent no Range is transportFailed(.badServerResponse), and leaves no file")
    func partialContentNobodyAskedFor() async throws {
        let folder = try Self.scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try LoopbackServer { _ in
            .respond(
                status: 206, headers: [ServerHeader(name: "Content-Range", value: "bytes 0-999/3000000")],
                body: Data(count: 1_000))
        }
        let destination = folder.appendingPathComponent("file.bin")
        let request = NetworkRequest<VoidRequest, DownloadedFile>(
            path: "file.bin", method: .get, downloadDestination: destination)

        await #expect {
            _ = try await server.client().run(request)
        } throws: { error in
            guard case NetworkClientError.transportFailed(let urlError) = error else { return false }
            return urlError.code == .badServerResponse
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }
}
