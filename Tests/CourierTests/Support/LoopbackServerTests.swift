import Foundation
import LoopbackHTTPServer
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Proves the loopback test server with a plain `URLSession` (no Courier) and, for protocol corners URLSession
/// cannot produce, with a raw TCP socket.
@Suite("LoopbackServer")
struct LoopbackServerTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    private func makeSession() -> URLSession {
        URLSession(configuration: .ephemeral)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    private func status(_ response: URLResponse) -> Int {
        (response as? HTTPURLResponse)?.statusCode ?? -1
    }

    // MARK: Echo

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func echoRoundTripOfGET() async throws {
        let server = try LoopbackServer { _ in .echo }
        let session = makeSession()
        defer { session.invalidateAndCancel() }

        let target = "/a%20b/c?x=1&y=hello+world&z=a%2Bb&flag&e="
        var request = URLRequest(url: server.url(target))
        request.setValue("value 1", forHTTPHeaderField: "X-Test")
        let (data, response) = try await session.data(for: request)
        #expect(status(response) == 200)
        #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Type") == "application/json")

        let echoed = try JSONDecoder().decode(EchoedRequest.self, from: data)
        #expect(echoed.method == "GET")
        #expect(echoed.target == target)
        #expect(echoed.path == "/a b/c")
        #expect(echoed.rawQuery == "x=1&y=hello+world&z=a%2Bb&flag&e=")
        #expect(
            echoed.queryItems == [
                ServerQueryItem(name: "x", value: "1"),
                ServerQueryItem(name: "y", value: "hello world"),
                ServerQueryItem(name: "z", value: "a+b"),
                ServerQueryItem(name: "flag", value: nil),
                ServerQueryItem(name: "e", value: ""),
            ]
        )
        #expect(echoed.header("x-TEST") == "value 1")
        #expect(echoed.header("host") == "127.0.0.1:\(server.port)")
        #expect(echoed.formItems.isEmpty)
        #expect(echoed.bodyData.isEmpty)

        let recorded = try #require(server.recordedRequests.first)
        #expect(recorded.rawPath == "/a%20b/c")
        #expect(recorded.header("X-Test") == "value 1")
        #expect(recorded.sequenceNumber == 0)
        #expect(recorded.connectionID == 0)
        #expect(server.requestCount == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func echoRoundTripOfPOSTBodies() async throws {
        let server = try LoopbackServer { _ in .echo }
        let session = makeSession()
        defer { session.invalidateAndCancel() }

        var form = URLRequest(url: server.url("/form"))
        form.httpMethod = "POST"
        form.setValue("application/x-www-form-urlencoded; charset=utf-8", forHTTPHeaderField: "Content-Type")
        form.httpBody = Data("name=J%C3%BCrgen+X&plus=%2B&empty=&bare".utf8)
        let (formData, _) = try await session.data(for: form)
        let echoedForm = try JSONDecoder().decode(EchoedRequest.self, from: formData)
        #expect(echoedForm.method == "POST")
        #expect(echoedForm.bodyData == form.httpBody)
        #expect(echoedForm.header("Content-Length") == "\(form.httpBody?.count ?? -1)")
        #expect(
            echoedForm.formItems == [
                ServerQueryItem(name: "name", value: "Jürgen X"),
                ServerQueryItem(name: "plus", value: "+"),
                ServerQueryItem(name: "empty", value: ""),
                ServerQueryItem(name: "bare", value: nil),
            ]
        )

        let binary = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        var upload = URLRequest(url: server.url("/upload?kind=binary"))
        upload.httpMethod = "PUT"
        upload.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        upload.httpBody = binary
        let (uploadData, uploadResponse) = try await session.data(for: upload)
        #expect(status(uploadResponse) == 200)
        let echoedUpload = try JSONDecoder().decode(EchoedRequest.self, from: uploadData)
        #expect(echoedUpload.method == "PUT")
        #expect(echoedUpload.bodyData == binary)
        #expect(echoedUpload.formItems.isEmpty)
        #expect(server.recordedRequests.last?.body == binary)
    }

    // MARK: Connections

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func keepAliveReusesTheConnection() async throws {
        let server = try LoopbackServer { request in
            .respond(status: 200, body: Data(request.target.utf8))
        }
        let session = makeSession()
        defer { session.invalidateAndCancel() }

        for index in 0..<10 {
            let (data, response) = try await session.data(from: server.url("/item/\(index)"))
            #expect(status(response) == 200)
            #expect(String(decoding: data, as: UTF8.self) == "/item/\(index)")
        }
        #expect(server.requestCount == 10)
        #expect(server.connectionCount <= 2)
        #expect(server.recordedRequests.map(\.sequenceNumber) == Array(0..<10))
        #expect(await server.waitUntil { $0.inProgressRequests == 0 })
        #expect(server.maxConcurrentRequests == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func concurrentDelayedRequestsOverlap() async throws {
        let server = try LoopbackServer { _ in
            .respond(status: 200, body: Data("slow".utf8), delay: .milliseconds(300))
        }
        let session = makeSession()
        defer { session.invalidateAndCancel() }

        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<4 {
                group.addTask {
                    let (_, response) = try await session.data(from: server.url("/slow/\(index)"))
                    return (response as? HTTPURLResponse)?.statusCode ?? -1
                }
            }
            for try await code in group {
                #expect(code == 200)
            }
        }
        #expect(server.requestCount == 4)
        #expect(server.maxConcurrentRequests > 1)
        #expect(server.connectionCount > 1)
    }

    // MARK: Responses

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func respondWithStatusHeadersAndBody() async throws {
        let server = try LoopbackServer { _ in
            .respond(
                status: 404,
                headers: [ServerHeader(name: "X-Reason", value: "gone fishing")],
                body: Data("nope".utf8)
            )
        }
        let session = makeSession()
        defer { session.invalidateAndCancel() }

        let (data, response) = try await session.data(from: server.url("/missing"))
        let http = try #require(response as? HTTPURLResponse)
        #expect(http.statusCode == 404)
        #expect(http.value(forHTTPHeaderField: "X-Reason") == "gone fishing")
        #expect(http.value(forHTTPHeaderField: "Content-Length") == "4")
        #expect(data == Data("nope".utf8))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func jsonAndDripResponses() async throws {
        struct Payload: Codable, Equatable {
            var name: String
            var count: Int
        }
        let server = try LoopbackServer { request in
            request.path == "/json"
                ? .json(Payload(name: "courier", count: 3), status: 201)
                : .drip(status: 200, body: Data("hello".utf8), interval: .milliseconds(20))
        }
        let session = makeSession()
        defer { session.invalidateAndCancel() }

        let (json, jsonResponse) = try await session.data(from: server.url("/json"))
        #expect(status(jsonResponse) == 201)
        #expect(try JSONDecoder().decode(Payload.self, from: json) == Payload(name: "courier", count: 3))

        let clock = ContinuousClock()
        let started = clock.now
        let (dripped, _) = try await session.data(from: server.url("/drip"))
        #expect(dripped == Data("hello".utf8))
        #expect(started.duration(to: clock.now) >= .milliseconds(90))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func partialBodyFails() async throws {
        let server = try LoopbackServer { _ in
            .partialBody(status: 200, declaredLength: 100, body: Data("short".utf8))
        }
        let session = makeSession()
        defer { session.invalidateAndCancel() }
        await #expect(throws: (any Error).self) { try await session.data(from: server.url("/partial")) }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func resetMidBodyFails() async throws {
        let server = try LoopbackServer { _ in
            .resetMidBody(status: 200, declaredLength: 100, body: Data("short".utf8))
        }
        let session = makeSession()
        defer { session.invalidateAndCancel() }
        await #expect(throws: (any Error).self) { try await session.data(from: server.url("/reset")) }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func rawGarbageFails() async throws {
        let server = try LoopbackServer { _ in .raw(Data("\u{1}\u{2}this is not HTTP at all\r\n\r\n".utf8)) }
        let session = makeSession()
        defer { session.invalidateAndCancel() }
        await #expect(throws: (any Error).self) { try await session.data(from: server.url("/garbage")) }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func hangTimesOutAndTheClientCloseIsCounted() async throws {
        let server = try LoopbackServer { _ in .hang }
        let session = makeSession()
        defer { session.invalidateAndCancel() }

        var request = URLRequest(url: server.url("/hang"))
        #if canImport(FoundationNetworking)
        // swift-corelibs-foundation truncates timeoutInterval to whole seconds (0.5 s times out at once).
        request.timeoutInterval = 1
        #else
        request.timeoutInterval = 0.5
        #endif
        let clock = ContinuousClock()
        let started = clock.now
        let error = await #expect(throws: URLError.self) { try await session.data(for: request) }
        #expect(error?.code == .timedOut)
        #expect(started.duration(to: clock.now) >= .milliseconds(400))
        #expect(await server.waitUntil { $0.clientClosedCount == 1 })
        #expect(server.inProgressRequests == 0)
        #expect(server.requestCount == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func redirectIsFollowedAcrossOrigins() async throws {
        let other = try LoopbackServer(host: "127.0.0.2") { _ in .echo }
        #expect(other.host == "127.0.0.2")
        #expect(other.baseURL.absoluteString == "http://127.0.0.2:\(other.port)")
        let server = try LoopbackServer { request in
            switch request.path {
            case "/start": .redirect(location: "/middle")
            case "/middle": .redirect(status: 307, location: other.url("/end?from=middle").absoluteString)
            default: .respond(status: 500)
            }
        }
        let session = makeSession()
        defer { session.invalidateAndCancel() }

        let (data, response) = try await session.data(from: server.url("/start"))
        #expect(status(response) == 200)
        #expect(response.url?.host == "127.0.0.2")
        let echoed = try JSONDecoder().decode(EchoedRequest.self, from: data)
        #expect(echoed.target == "/end?from=middle")
        #expect(echoed.header("Host") == "127.0.0.2:\(other.port)")
        #expect(server.recordedRequests.map(\.path) == ["/start", "/middle"])
        #expect(other.requestCount == 1)
    }

    // MARK: Hostile responses

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func gzipBombInflatesToZerosWithAValidTrailer() async throws {
        // The expanded size leaves a remainder after the 258-byte matches, so every part of the stream is exercised.
        let expandedSize = 5 * 1024 * 1024 + 7
        let server = try LoopbackServer { _ in .gzipBomb(expandedSize: expandedSize) }
        let session = makeSession()
        defer { session.invalidateAndCancel() }

        let (data, response) = try await session.data(from: server.url("/bomb"))
        let http = try #require(response as? HTTPURLResponse)
        #expect(http.statusCode == 200)
        #expect(data.count == expandedSize)
        #expect(data == Data(count: expandedSize))
        let compressed = try #require(Int(http.value(forHTTPHeaderField: "Content-Length") ?? ""))
        #expect(compressed == ServerResponse.gzipBombCompressedSize(expandedSize: expandedSize))
        #expect(compressed < expandedSize / 150, "ratio \(expandedSize / compressed):1")
        #expect(server.bodyBytesSent == compressed)
        // More than 1 GiB from a few MB.
        #expect(ServerResponse.gzipBombCompressedSize(expandedSize: (1 << 30) + 1) < 7_000_000)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(arguments: [0, 1, 2, 258, 259, 260, 2_065, 100_000])
    func gzipBombOfSmallSizes(expandedSize: Int) async throws {
        let server = try LoopbackServer { _ in .gzipBomb(expandedSize: expandedSize) }
        let client = try RawClient(port: server.port)
        client.send("GET /bomb HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let response = client.readBytesToEnd()
        let headEnd = try #require(response.indices.first { response[$0...].starts(with: Array("\r\n\r\n".utf8)) })
        let head = String(decoding: response[..<headEnd], as: UTF8.self)
        #expect(head.contains("\r\nContent-Encoding: gzip\r\n"))
        let body = Array(response[(headEnd + 4)...])
        #expect(head.contains("\r\nContent-Length: \(body.count)\r\n"))
        #expect(Array(body.prefix(3)) == [0x1F, 0x8B, 0x08])
        // The trailer: CRC-32 of the expanded bytes, then their count, both little-endian.
        let trailer = Array(body.suffix(8))
        let crc = trailer[0..<4].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let size = trailer[4..<8].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        #expect(crc == bitwiseCRC32(Array(repeating: 0, count: expandedSize)))
        #expect(size == UInt32(expandedSize))

        let session = makeSession()
        defer { session.invalidateAndCancel() }
        let (data, _) = try await session.data(from: server.url("/bomb"))
        #expect(data == Data(count: expandedSize))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(arguments: [false, true])
    func streamSendsAGeneratedBody(chunked: Bool) async throws {
        let length = 300_007
        let server = try LoopbackServer { _ in .stream(length: length, chunked: chunked) }
        let session = makeSession()
        defer { session.invalidateAndCancel() }

        let (data, response) = try await session.data(from: server.url("/stream"))
        let http = try #require(response as? HTTPURLResponse)
        #expect(data == Data((0..<length).map { UInt8($0 % 251) }))
        #expect(http.value(forHTTPHeaderField: "Content-Length") == (chunked ? nil : "\(length)"))
        #expect(http.value(forHTTPHeaderField: "Transfer-Encoding") == (chunked ? "chunked" : nil))
        #expect(server.bodyBytesSent == length)
        #expect(await server.waitUntil(timeout: .seconds(20)) { $0.inProgressRequests == 0 })
        #expect(server.clientClosedCount == 0)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func streamHeldAfterSomeBytesUntilTheClientLeaves() async throws {
        let server = try LoopbackServer { _ in .stream(length: 1 << 30, holdAfter: 1_000) }
        let session = makeSession()
        defer { session.invalidateAndCancel() }

        let client = try RawClient(port: server.port)
        client.send("GET /held HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = client.read(until: "\r\n\r\n")
        #expect(head.contains("\r\nContent-Length: 1073741824\r\n"))
        #expect(await server.waitUntil(timeout: .seconds(20)) { $0.bodyBytesSent == 1_000 })
        #expect(client.readBytes(count: 1_000) == (0..<1_000).map { UInt8($0 % 251) })
        client.shutdownNow()
        #expect(await server.waitUntil(timeout: .seconds(20)) { $0.clientClosedCount == 1 })

        // URLSession waits for the rest, and the server sees it go away when the task is cancelled.
        let task = Task { try await session.data(from: server.url("/held")) }
        #expect(await server.waitUntil(timeout: .seconds(20)) { $0.bodyBytesSent == 2_000 })
        task.cancel()
        await #expect(throws: (any Error).self) { try await task.value }
        #expect(await server.waitUntil(timeout: .seconds(20)) { $0.clientClosedCount == 2 })
        #expect(server.bodyBytesSent == 2_000)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func streamWithALyingContentLengthFails() async throws {
        let server = try LoopbackServer { _ in .stream(length: 10, declaredLength: 100) }
        let session = makeSession()
        defer { session.invalidateAndCancel() }
        await #expect(throws: (any Error).self) { try await session.data(from: server.url("/lie")) }
        #expect(server.bodyBytesSent == 10)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func interimResponsesForeverUntilTheClientLeaves() async throws {
        let server = try LoopbackServer { _ in .interimForever(interval: .milliseconds(50)) }
        let client = try RawClient(port: server.port)
        client.send("GET /processing HTTP/1.1\r\nHost: x\r\n\r\n")
        let interim = "HTTP/1.1 102 Processing\r\n\r\n"
        let received = client.read(until: interim + interim + interim)
        #expect(received == interim + interim + interim)
        client.shutdownNow()
        #expect(await server.waitUntil(timeout: .seconds(20)) { $0.clientClosedCount == 1 })
        #expect(server.interimResponsesSent >= 3)

        // URLSession never gets a final response: only cancelling ends the task.
        let session = makeSession()
        defer { session.invalidateAndCancel() }
        server.resetStatistics()
        let task = Task { try await session.data(from: server.url("/processing")) }
        #expect(await server.waitUntil(timeout: .seconds(20)) { $0.interimResponsesSent >= 5 })
        task.cancel()
        await #expect(throws: (any Error).self) { try await task.value }
        #expect(await server.waitUntil(timeout: .seconds(20)) { $0.clientClosedCount == 1 })
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(arguments: [301, 302, 303, 307, 308])
    func redirectSendsAnyLocationVerbatim(status: Int) throws {
        let server = try LoopbackServer { _ in .redirect(status: status, location: "file:///etc/passwd") }
        let client = try RawClient(port: server.port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let response = client.readToEnd()
        #expect(response.hasPrefix("HTTP/1.1 \(status) "))
        #expect(response.contains("\r\nLocation: file:///etc/passwd\r\n"))
        #expect(response.hasSuffix("\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(arguments: [307, 308])
    func echoShowsWhatTheRedirectedRequestCarried(status: Int) async throws {
        let server = try LoopbackServer { request in
            request.path == "/start" ? .redirect(status: status, location: "/landing") : .echo
        }
        let session = makeSession()
        defer { session.invalidateAndCancel() }

        var request = URLRequest(url: server.url("/start"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"{"name":"courier"}"#.utf8)
        let (data, _) = try await session.data(for: request)
        let echoed = try JSONDecoder().decode(EchoedRequest.self, from: data)
        let recorded = server.recordedRequests
        #expect(recorded.map(\.path) == ["/start", "/landing"])
        #expect(recorded.first?.body == request.httpBody)
        // The echo describes the redirected request exactly as it arrived (corelibs resends it without its body).
        #expect(echoed.method == "POST")
        #expect(echoed.method == recorded.last?.method)
        #expect(echoed.bodyData == recorded.last?.body)
        #expect(echoed.headers == recorded.last?.headers)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func aOneMegabyteHeaderIsSentWhole() throws {
        let big = String(repeating: "a", count: 1 << 20)
        let server = try LoopbackServer { _ in
            .respond(status: 200, headers: [ServerHeader(name: "X-Big", value: big)], body: Data("ok".utf8))
        }
        let client = try RawClient(port: server.port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let response = client.readToEnd()
        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\nX-Big: \(big)\r\n"))
        #expect(response.hasSuffix("\r\n\r\nok"))
    }

    // MARK: Lifecycle

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func stopIsIdempotentAndEndsRequestsInFlight() async throws {
        let server = try LoopbackServer { _ in .hang }
        let session = makeSession()
        defer { session.invalidateAndCancel() }

        let inFlight = Task { try await session.data(from: server.url("/hang")) }
        #expect(await server.waitUntil { $0.inProgressRequests == 1 })
        let clock = ContinuousClock()
        let elapsed = clock.measure { server.stop() }
        #expect(elapsed < promptly, "stop() waited for the request in flight")
        server.stop()
        await #expect(throws: (any Error).self) { try await inFlight.value }
        #expect(server.inProgressRequests == 0)
        #expect(server.clientClosedCount == 0)

        var request = URLRequest(url: server.url("/after-stop"))
        request.timeoutInterval = 1
        await #expect(throws: (any Error).self) { try await session.data(for: request) }
        server.resetStatistics()
        #expect(server.requestCount == 0 && server.recordedRequests.isEmpty)
    }

    // MARK: Protocol corners (raw socket)

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func chunkedBodyWithExpectContinue() throws {
        let server = try LoopbackServer { _ in .echo }
        let client = try RawClient(port: server.port)
        client.send(
            "POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n"
                + "Content-Type: application/x-www-form-urlencoded\r\nConnection: close\r\n\r\n"
        )
        let interim = client.read(until: "\r\n\r\n")
        #expect(interim == "HTTP/1.1 100 Continue\r\n\r\n")
        client.send("5;ext=1\r\na=1&b\r\n3\r\n=x+\r\n0\r\nX-Trailer: t\r\n\r\n")
        let response = client.readToEnd()
        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(response.contains("\r\nConnection: close\r\n"))
        let json = try #require(response.range(of: "\r\n\r\n").map { response[$0.upperBound...] })
        let echoed = try JSONDecoder().decode(EchoedRequest.self, from: Data(json.utf8))
        #expect(echoed.bodyData == Data("a=1&b=x+".utf8))
        #expect(echoed.formItems == [ServerQueryItem(name: "a", value: "1"), ServerQueryItem(name: "b", value: "x ")])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func pipelinedRequestsAndHTTP10() throws {
        let server = try LoopbackServer { request in .respond(status: 200, body: Data(request.target.utf8)) }
        let client = try RawClient(port: server.port)
        client.send("GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two?q HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let response = client.readToEnd()
        #expect(response.components(separatedBy: "HTTP/1.1 200 OK\r\n").count == 3)
        #expect(response.hasSuffix("\r\n\r\n/two?q"))
        let recorded = server.recordedRequests
        #expect(recorded.map(\.target) == ["/one", "/two?q"])
        #expect(recorded.map(\.connectionID) == [0, 0])

        let old = try RawClient(port: server.port)
        old.send("GET /old HTTP/1.0\r\n\r\n")
        let oldResponse = old.readToEnd()  // returns only because the server closes
        #expect(oldResponse.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(oldResponse.contains("\r\nContent-Length: 4\r\n"))
        #expect(oldResponse.hasSuffix("/old"))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test func malformedAndOversizedHeadsAreRejected() throws {
        let server = try LoopbackServer { _ in .echo }
        let malformed = try RawClient(port: server.port)
        malformed.send("NOT A REQUEST\r\n\r\n")
        #expect(malformed.readToEnd().hasPrefix("HTTP/1.1 400 Bad Request\r\n"))

        let folded = try RawClient(port: server.port)
        folded.send("GET / HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n")
        #expect(folded.readToEnd().hasPrefix("HTTP/1.1 400 Bad Request\r\n"))

        let oversized = try RawClient(port: server.port)
        oversized.send("GET / HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 70_000) + "\r\n\r\n")
        #expect(oversized.readToEnd().hasPrefix("HTTP/1.1 431 Request Header Fields Too Large\r\n"))
        #expect(server.requestCount == 0)
    }
}

/// A minimal blocking TCP client for sending hand-written HTTP.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private final class RawClient {
    private let fd: Int32

    init(port: Int, host: String = "127.0.0.1") throws {
        #if canImport(Glibc)
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        #if canImport(Darwin)
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        _ = inet_pton(AF_INET, host, &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            throw URLError(.cannotConnectToHost)
        }
    }

    deinit {
        close(fd)
    }

    /// Sends all of `text`; errors (the server may close early) are ignored.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func send(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { sendNoSignal(fd, $0) }
            if sent <= 0 { return }
            offset += sent
        }
    }

    /// Reads until the received text contains `marker`, the connection closes or 2 s pass without data.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func read(until marker: String) -> String {
        var received: [UInt8] = []
        while !String(decoding: received, as: UTF8.self).contains(marker) {
            var byte: UInt8 = 0
            guard recv(fd, &byte, 1, 0) == 1 else { break }
            received.append(byte)
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Reads until the server closes the connection (or 2 s pass without data).
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func readToEnd() -> String {
        String(decoding: readBytesToEnd(), as: UTF8.self)
    }

    /// Reads bytes until the server closes the connection (or 2 s pass without data).
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func readBytesToEnd() -> [UInt8] {
        readBytes(count: .max)
    }

    /// Reads up to `count` bytes: fewer if the connection closes or 2 s pass without data.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func readBytes(count: Int) -> [UInt8] {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while received.count < count {
            let wanted = min(chunk.count, count - received.count)
            let got = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, wanted, 0) }
            if got <= 0 { break }
            received.append(contentsOf: chunk[0..<got])
        }
        return received
    }

    /// Closes the connection now (the descriptor is not reused until deinit).
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func shutdownNow() {
        _ = shutdown(fd, Int32(SHUT_RDWR))
    }
}

/// CRC-32 (IEEE 802.3, as in gzip) computed bit by bit: slow, obviously right, independent of the server's.
private func bitwiseCRC32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}

/// `send(2)` that reports a closed peer as an error instead of raising SIGPIPE.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private func sendNoSignal(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
    #if canImport(Glibc)
    send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
    #else
    send(fd, bytes.baseAddress, bytes.count, 0)
    #endif
}
