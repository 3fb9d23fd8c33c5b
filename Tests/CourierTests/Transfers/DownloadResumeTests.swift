import Foundation
import LoopbackHTTPServer
import Testing

@testable import Courier

/// Downloads cut off midway, run again: what is asked for (`Range`, `If-Range`), and what ends up on disk. Each test
/// runs apart from the soak test (`MemoryHeavyTests`), whose resident-memory figure must be its own.
@Suite("Download resume", .serialized)
struct DownloadResumeTests {
    /// The resource every test downloads: byte `i` is `i % 251`, as the server's `.stream` generates it.
    static let size = 3_000_000
    static func bytes(_ range: Range<Int>) -> Data { Data(range.map { UInt8($0 % 251) }) }
    static let etag = "\"v1-3000000\""
    static let resumable = [
        ServerHeader(name: "Accept-Ranges", value: "bytes"), ServerHeader(name: "ETag", value: etag),
    ]

    /// The first answer: the head of the whole resource with `headers`, then only its first `sent` bytes, then the
    /// connection closes.
    static func cutOff(after sent: Int, headers: [ServerHeader] = resumable) -> ServerResponse {
        .stream(status: 200, headers: headers, length: sent, declaredLength: size)
    }

    /// A range request answered as a file server does: 206 with the rest when `If-Range` matches `etag`.
    static func rest(for request: ServerRequest) -> ServerResponse {
        guard let range = request.header("Range"), range.hasPrefix("bytes="), range.hasSuffix("-"),
            let start = Int(range.dropFirst("bytes=".count).dropLast()), request.header("If-Range") == etag
        else { return .respond(status: 400) }
        return .respond(
            status: 206,
            headers: resumable + [ServerHeader(name: "Content-Range", value: "bytes \(start)-\(size - 1)/\(size)")],
            body: bytes(start..<size))
    }

    /// A GET of the resource to `big.bin` in `folder`.
    static func download(to folder: URL) -> NetworkRequest<VoidRequest, DownloadedFile> {
        NetworkRequest(path: "big.bin", method: .get, downloadDestination: folder.appendingPathComponent("big.bin"))
    }

    /// A fresh, empty folder for one test's files.
    static func scratchFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "courier-resume-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// Answers the requests in turn with `answers` (the last one again after that) and records each request.
    final class Script: Sendable {
        let requests = Locked<[ServerRequest]>([])
        let answers: [@Sendable (ServerRequest) -> ServerResponse]

        init(_ answers: [@Sendable (ServerRequest) -> ServerResponse]) {
            self.answers = answers
        }

        /// The server answering with this script, kept for as long as the script.
        private let server = Locked<LoopbackServer?>(nil)

        /// Starts a server that answers with this script, and a client of it.
        func client() throws -> NetworkClient {
            let started = try LoopbackServer { self.answer($0) }
            server.withLock { $0 = started }
            return started.client()
        }

        func answer(_ request: ServerRequest) -> ServerResponse {
            let index = requests.withLock { requests in
                requests.append(request)
                return requests.count - 1
            }
            return answers[min(index, answers.count - 1)](request)
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A download cut off midway, run again, asks for the rest with Range and If-Range and completes the file",
        arguments: [true, false])
    func resumesWhenRunAgain(chosenDestination: Bool) async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let script = Script([{ _ in Self.cutOff(after: 1_000_000) }, Self.rest])
            let server = try LoopbackServer { script.answer($0) }
            let client = server.client()
            let request = NetworkRequest<VoidRequest, DownloadedFile>(
                path: "big.bin", method: .get,
                downloadDestination: chosenDestination ? folder.appendingPathComponent("big.bin") : nil)

            await #expect {
                _ = try await client.run(request)
            } throws: { error in
                guard case NetworkClientError.transportFailed = error else { return false }
                return true
            }
            let reports = Locked<[TransferProgress]>([])
            let resumed = NetworkRequest<VoidRequest, DownloadedFile>(
                path: "big.bin", method: .get, downloadDestination: request.downloadDestination,
                onProgress: { progress in reports.withLock { $0.append(progress) } })
            let response = try await client.run(resumed)
            defer { if !chosenDestination { try? FileManager.default.removeItem(at: response.value.url) } }

            let second = try #require(script.requests.withLock { $0 }.dropFirst().first)
            #expect(second.header("Range") == "bytes=1000000-")
            #expect(second.header("If-Range") == Self.etag)
            #expect(response.statusCode == 206)
            #expect(response.value.byteCount == Int64(Self.size))
            #expect(try Data(contentsOf: response.value.url) == Self.bytes(0..<Self.size))
            let received = reports.withLock { $0 }.map(\.bytesReceived)
            #expect(received.first ?? 0 > 1_000_000, "progress counts the bytes kept from the first run")
            #expect(received.last == Int64(Self.size))
            #expect(reports.withLock { $0 }.last?.totalBytesExpectedToReceive == Int64(Self.size))
            if chosenDestination {
                #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["big.bin"])
            }
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("retrying() resumes a download cut off midway by itself: one call, the second request asks for the rest")
    func retryingResumes() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let script = Script([{ _ in Self.cutOff(after: 700_000) }, Self.rest])
            let server = try LoopbackServer { script.answer($0) }
            let client = server.client().retrying(RetryPolicy(baseDelay: 0.01))
            let destination = folder.appendingPathComponent("big.bin")

            let response = try await client.run(
                NetworkRequest<VoidRequest, DownloadedFile>(
                    path: "big.bin", method: .get, downloadDestination: destination)
            )

            let requests = script.requests.withLock { $0 }
            #expect(requests.count == 2)
            #expect(requests.first?.header("Range") == nil)
            #expect(requests.last?.header("Range") == "bytes=700000-")
            #expect(try Data(contentsOf: destination) == Self.bytes(0..<Self.size))
            #expect(response.value.byteCount == Int64(Self.size))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("When the resource changed, the server's whole new body replaces the partial bytes")
    func changedResourceStartsOver() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let newBody = Data(repeating: 0x5A, count: 2_000_000)
            // If-Range no longer matches: a file server answers 200 with the whole new representation.
            let script = Script([
                { _ in Self.cutOff(after: 1_000_000) },
                { _ in .respond(status: 200, headers: [ServerHeader(name: "ETag", value: "\"v2\"")], body: newBody) },
            ])
            let client = try script.client()
            let request = Self.download(to: folder)

            _ = try? await client.run(request)
            let response = try await client.run(request)

            #expect(script.requests.withLock { $0 }.last?.header("Range") == "bytes=1000000-")
            #expect(response.statusCode == 200)
            #expect(try Data(contentsOf: response.value.url) == newBody)
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["big.bin"], "no partial file left")
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A 416 answer drops the partial bytes and the same call downloads the whole resource again")
    func unsatisfiableRangeStartsOver() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let script = Script([
                { _ in Self.cutOff(after: 1_000_000) },
                { _ in .respond(status: 416, headers: [ServerHeader(name: "Content-Range", value: "bytes */10")]) },
                { _ in .stream(status: 200, headers: Self.resumable, length: Self.size) },
            ])
            let client = try script.client()
            let request = Self.download(to: folder)

            _ = try? await client.run(request)
            let response = try await client.run(request)

            let requests = script.requests.withLock { $0 }
            #expect(requests.count == 3)
            #expect(requests[1].header("Range") == "bytes=1000000-")
            #expect(requests[2].header("Range") == nil)
            #expect(requests[2].header("If-Range") == nil)
            #expect(response.statusCode == 200)
            #expect(try Data(contentsOf: response.value.url) == Self.bytes(0..<Self.size))
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["big.bin"])
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A response that cannot be resumed (no Accept-Ranges, no validator, a weak ETag) is downloaded again whole",
        arguments: [
            [ServerHeader(name: "ETag", value: etag)],
            [ServerHeader(name: "Accept-Ranges", value: "bytes")],
            [ServerHeader(name: "Accept-Ranges", value: "bytes"), ServerHeader(name: "ETag", value: "W/\"v1\"")],
            [ServerHeader(name: "Accept-Ranges", value: "none"), ServerHeader(name: "ETag", value: etag)],
        ])
    func notResumable(headers: [ServerHeader]) async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let script = Script([
                { _ in Self.cutOff(after: 1_000_000, headers: headers) },
                { _ in .stream(status: 200, headers: headers, length: Self.size) },
            ])
            let client = try script.client()
            let request = Self.download(to: folder)

            await #expect(throws: NetworkClientError.self) { _ = try await client.run(request) }
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty, "nothing kept to resume")
            let response = try await client.run(request)

            #expect(script.requests.withLock { $0 }.last?.header("Range") == nil)
            #expect(try Data(contentsOf: response.value.url) == Self.bytes(0..<Self.size))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Resuming uses Last-Modified in If-Range when the server sends no strong ETag")
    func lastModifiedValidator() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let date = "Sun, 22 Nov 2026 08:00:00 GMT"
            let headers = [
                ServerHeader(name: "Accept-Ranges", value: "bytes"), ServerHeader(name: "Last-Modified", value: date),
            ]
            let script = Script([
                { _ in Self.cutOff(after: 500_000, headers: headers) },
                { request in
                    guard request.header("If-Range") == date, request.header("Range") == "bytes=500000-" else {
                        return .respond(status: 400)
                    }
                    return .respond(
                        status: 206,
                        headers: headers + [
                            ServerHeader(name: "Content-Range", value: "bytes 500000-\(Self.size - 1)/\(Self.size)")
                        ],
                        body: Self.bytes(500_000..<Self.size))
                },
            ])
            let client = try script.client()
            let request = Self.download(to: folder)

            _ = try? await client.run(request)
            let response = try await client.run(request)

            #expect(response.statusCode == 206)
            #expect(try Data(contentsOf: response.value.url) == Self.bytes(0..<Self.size))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A cancelled download keeps nothing: no partial file, and the next run asks for the whole resource")
    func cancelledKeepsNothing() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let script = Script([
                { _ in .stream(status: 200, headers: Self.resumable, length: Self.size, holdAfter: 100_000) },
                { _ in .stream(status: 200, headers: Self.resumable, length: Self.size) },
            ])
            let client = try script.client()
            let request = Self.download(to: folder)

            let call = Task { try await client.run(request) }
            // Cancelled while the body is being written: its partial file is there.
            try #require(
                await eventually {
                    !((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).isEmpty
                })
            call.cancel()
            await #expect(throws: CancellationError.self) { try await call.value }
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)

            let response = try await client.run(request)
            #expect(script.requests.withLock { $0 }.last?.header("Range") == nil)
            #expect(try Data(contentsOf: response.value.url) == Self.bytes(0..<Self.size))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A download that passes its totalTimeout keeps its bytes: the next run resumes")
    func timedOutKeepsBytes() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let script = Script([
                { _ in .stream(status: 200, headers: Self.resumable, length: Self.size, holdAfter: 800_000) },
                Self.rest,
            ])
            let server = try LoopbackServer { script.answer($0) }
            let client = server.client()
            let destination = folder.appendingPathComponent("big.bin")

            await #expect {
                _ = try await client.run(
                    NetworkRequest<VoidRequest, DownloadedFile>(
                        path: "big.bin", method: .get, totalTimeout: 1, downloadDestination: destination))
            } throws: { error in
                guard case NetworkClientError.transportFailed(let underlying) = error else { return false }
                return underlying.code == .timedOut
            }
            let response = try await client.run(
                NetworkRequest<VoidRequest, DownloadedFile>(
                    path: "big.bin", method: .get, downloadDestination: destination)
            )

            // The bytes that arrived within the second are kept (all 800,000 unless the machine is very slow).
            let range = try #require(script.requests.withLock { $0 }.last?.header("Range"))
            let kept = try #require(Int(range.dropFirst("bytes=".count).dropLast()))
            #expect(range.hasPrefix("bytes=") && range.hasSuffix("-") && kept > 0 && kept <= 800_000, "\(range)")
            #expect(try Data(contentsOf: response.value.url) == Self.bytes(0..<Self.size))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "Downloads cancelled at random moments end whole or leave nothing: no partial file, no deadlock",
        .timeLimit(.minutes(1)))
    func cancelledAtRandom() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            // Every other download stops sending at some point of its body, so that the cancellation lands mid-body.
            let server = try LoopbackServer { request in
                guard let index = Int(request.path.dropFirst("/file-".count)), index % 2 == 1 else {
                    return .stream(status: 200, headers: Self.resumable, length: 256_000)
                }
                return .stream(
                    status: 200, headers: Self.resumable, length: 256_000, holdAfter: index * 1_237 % 256_000)
            }
            let client = server.client()
            var generator = SystemRandomNumberGenerator()
            let delays = (0..<200).map { _ in Int.random(in: 0...4_000, using: &generator) }
            let finished = await withTaskGroup(of: String?.self) { group in
                for (index, delay) in delays.enumerated() {
                    group.addTask {
                        let name = "file-\(index).bin"
                        let task = Task {
                            try await client.run(
                                NetworkRequest<VoidRequest, DownloadedFile>(
                                    path: "file-\(index)", method: .get,
                                    downloadDestination: folder.appendingPathComponent(name)))
                        }
                        try? await Task.sleep(for: .microseconds(delay))
                        task.cancel()
                        guard case .success(let response) = await task.result else { return nil }
                        return response.value.byteCount == 256_000 ? name : "wrong size: \(name)"
                    }
                }
                return await group.reduce(into: Set<String>()) { if let name = $1 { $0.insert(name) } }
            }
            #expect(!finished.contains { $0.hasPrefix("wrong") })
            #expect(!finished.contains { Int($0.dropFirst("file-".count).dropLast(".bin".count))! % 2 == 1 })
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: folder.path)) == finished)
            // The same session still downloads afterwards.
            let file = try await client.run(
                NetworkRequest<VoidRequest, DownloadedFile>(
                    method: .get, downloadDestination: folder.appendingPathComponent("after.bin")))
            #expect(try Data(contentsOf: file.value.url) == Self.bytes(0..<256_000))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A download behind a redirect to a new URL each time (a signed CDN link) resumes on the next run")
    func resumesBehindARedirect() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let script = Script([
                { _ in .respond(status: 302, headers: [ServerHeader(name: "Location", value: "/cdn/1?sig=a")]) },
                { _ in Self.cutOff(after: 1_000_000) },
                { _ in .respond(status: 302, headers: [ServerHeader(name: "Location", value: "/cdn/2?sig=b")]) },
                Self.rest,
            ])
            let client = try script.client()
            let request = Self.download(to: folder)

            _ = try? await client.run(request)
            let response = try await client.run(request)

            let requests = script.requests.withLock { $0 }
            #expect(requests.map(\.path) == ["/big.bin", "/cdn/1", "/big.bin", "/cdn/2"])
            #expect(requests[2].header("Range") == "bytes=1000000-", "the first URL's kept bytes")
            #expect(requests[3].header("Range") == "bytes=1000000-", "carried to the redirect's target")
            #expect(requests[3].header("If-Range") == Self.etag)
            #expect(response.statusCode == 206)
            #expect(try Data(contentsOf: response.value.url) == Self.bytes(0..<Self.size))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A restart after a stale range is not a redirect: 20 redirects after it are still followed")
    func restartIsNotARedirect() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            // The kept bytes, then a 416 (restart), then 20 redirects: the budget is exactly 20.
            var answers: [@Sendable (ServerRequest) -> ServerResponse] = [
                { _ in Self.cutOff(after: 1_000_000) },
                { _ in .respond(status: 416, headers: [ServerHeader(name: "Content-Range", value: "bytes */10")]) },
            ]
            for hop in 1...20 {
                answers.append { _ in
                    .respond(status: 302, headers: [ServerHeader(name: "Location", value: "/hop/\(hop)")])
                }
            }
            answers.append { _ in .stream(status: 200, headers: Self.resumable, length: Self.size) }
            let script = Script(answers)
            let client = try script.client()
            let request = Self.download(to: folder)

            _ = try? await client.run(request)
            let response = try await client.run(request)

            let requests = script.requests.withLock { $0 }
            #expect(requests.count == 23)
            #expect(requests[1].header("Range") == "bytes=1000000-")
            #expect(requests[2].header("Range") == nil)
            #expect(requests.last?.path == "/hop/20")
            #expect(response.statusCode == 200)
            #expect(try Data(contentsOf: response.value.url) == Self.bytes(0..<Self.size))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "A 206 that does not continue the kept bytes (another range, another ETag, too short) starts over at once",
        arguments: [
            "bytes 0-2999999/3000000",  // starts at 0, not where the kept bytes end
            "bytes 1000000-1999999/3000000",  // ends before the end of the resource
            "bytes 1000000-2999999/3000001",  // another length than the first response's
        ])
    func staleRangeStartsOver(contentRange: String) async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let script = Script([
                { _ in Self.cutOff(after: 1_000_000) },
                // The stale range's body stalls after 200 kB: only cancelling it lets the call go on.
                { _ in
                    .stream(
                        status: 206,
                        headers: Self.resumable + [ServerHeader(name: "Content-Range", value: contentRange)],
                        length: Self.size, holdAfter: 200_000)
                },
                { _ in .stream(status: 200, headers: Self.resumable, length: Self.size) },
            ])
            let client = try script.client()
            _ = try? await client.run(Self.download(to: folder))

            let response = try await client.run(Self.download(to: folder))

            let requests = script.requests.withLock { $0 }
            #expect(requests.count == 3)
            #expect(requests.last?.header("Range") == nil)
            #expect(response.statusCode == 200)
            #expect(try Data(contentsOf: response.value.url) == Self.bytes(0..<Self.size))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A 206 of another representation (a server that ignores If-Range) is never spliced onto the kept bytes")
    func changedValidatorOn206() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let newBody = Data(repeating: 0xEE, count: Self.size)
            let v2 = [ServerHeader(name: "Accept-Ranges", value: "bytes"), ServerHeader(name: "ETag", value: "\"v2\"")]
            let script = Script([
                { _ in Self.cutOff(after: 1_000_000) },
                { _ in
                    .respond(
                        status: 206,
                        headers: v2 + [
                            ServerHeader(name: "Content-Range", value: "bytes 1000000-\(Self.size - 1)/\(Self.size)")
                        ],
                        body: newBody.suffix(Self.size - 1_000_000))
                },
                { _ in .respond(status: 200, headers: v2, body: newBody) },
            ])
            let client = try script.client()
            _ = try? await client.run(Self.download(to: folder))

            let response = try await client.run(Self.download(to: folder))

            #expect(script.requests.withLock { $0 }.count == 3)
            #expect(try Data(contentsOf: response.value.url) == newBody)
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A resumed download cut off again keeps every byte so far")
    func cutOffTwice() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let range = "bytes 1000000-\(Self.size - 1)/\(Self.size)"
            let script = Script([
                { _ in Self.cutOff(after: 1_000_000) },
                { _ in
                    // A 206 must repeat the validator (a 206 that repeats none starts over: TransferHostileTests).
                    .stream(
                        status: 206, headers: [ServerHeader(name: "Content-Range", value: range)] + Self.resumable,
                        length: 500_000, declaredLength: Self.size - 1_000_000, offset: 1_000_000)
                },
                Self.rest,
            ])
            let client = try script.client()
            _ = try? await client.run(Self.download(to: folder))
            _ = try? await client.run(Self.download(to: folder))

            let response = try await client.run(Self.download(to: folder))

            #expect(script.requests.withLock { $0 }.last?.header("Range") == "bytes=1500000-")
            #expect(try Data(contentsOf: response.value.url) == Self.bytes(0..<Self.size))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A 401 with a Basic challenge on a download that accepts 401 ends at once with the file")
    func acceptedUnauthorizedDownload() async throws {
        try await MemoryHeavyTests.exclusively {
            let folder = try Self.scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let server = try LoopbackServer { _ in
                .respond(
                    status: 401, headers: [ServerHeader(name: "WWW-Authenticate", value: #"Basic realm="api""#)],
                    body: Data("denied".utf8))
            }
            let destination = folder.appendingPathComponent("answer.txt")

            let response = try await server.client().run(
                NetworkRequest<VoidRequest, DownloadedFile>(
                    path: "f", method: .get, totalTimeout: 60, acceptableStatusCodes: [200, 401],
                    downloadDestination: destination))

            #expect(response.statusCode == 401)
            #expect(try Data(contentsOf: destination) == Data("denied".utf8))
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["answer.txt"])
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A server's file name cannot leave its folder: '..', '.', hidden and path-like names become plain names")
    func serverFileNames() {
        #expect(DownloadTarget.safeFileName("..") == "download")
        #expect(DownloadTarget.safeFileName(".") == "download")
        #expect(DownloadTarget.safeFileName(".profile") == "download")
        #expect(DownloadTarget.safeFileName("") == "download")
        #expect(DownloadTarget.safeFileName(nil) == "download")
        #expect(DownloadTarget.safeFileName("a/../b.pdf") == "b.pdf")
        #expect(DownloadTarget.safeFileName("report.pdf") == "report.pdf")
    }
}
