import Foundation
import Testing

@testable import Courier

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private struct Memo: Codable, Sendable, Equatable {
    let id: Int
    let text: String
}

private typealias GetMemo = NetworkRequest<VoidRequest, Memo>

/// Signals, in order, what an answer closure reached, for the test to await without sleeping.
private struct Signals: Sendable {
    let stream: AsyncStream<String>
    let continuation: AsyncStream<String>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: String.self)
    }

    func send(_ signal: String) { continuation.yield(signal) }

    /// The next signal, or `nil` when none came within 20 s.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    func next() async -> String? {
        let stream = self.stream
        return await firstWithin {
            var iterator = stream.makeAsyncIterator()
            return await iterator.next()
        }
    }
}

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private func client(
    _ transport: InMemoryTransport, baseURL: String = "https://memos.test/api", encoder: JSONEncoder = JSONEncoder(),
    sensitiveHeaders: Set<String> = []
) -> NetworkClient {
    NetworkClient(
        configuration: NetworkConfiguration(
            transport: transport, defaultEncoder: encoder, baseURL: URL(string: baseURL)!,
            sensitiveHeaders: sensitiveHeaders))
}

/// `count` bytes of a pattern that repeats every 251 bytes, so that a shifted or reordered piece shows.
private func patternBytes(_ count: Int) -> Data {
    Data((0..<count).map { UInt8($0 % 251) })
}

private func temporaryFile(_ name: String) -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("courier-inmemory-\(UUID().uuidString)-\(name)")
}

@Suite("InMemoryTransport")
struct InMemoryTransportTests {
    // MARK: Requests and responses

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A canned JSON answer is decoded by the real client")
    func decodesJSON() async throws {
        let transport = InMemoryTransport { request in
            request.url.path == "/api/memos/1" ? .json(#"{"id":1,"text":"Buy milk"}"#) : .status(404)
        }
        let memo = try await client(transport).run(GetMemo(path: "/memos/1", method: .get)).value
        #expect(memo == Memo(id: 1, text: "Buy milk"))
        #expect(transport.requests.map(\.description) == ["GET https://memos.test/api/memos/1"])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("What Courier encodes is what reaches the wire: method, path, query, JSON body bytes, Content-Type")
    func encodingAtTheWire() async throws {
        let transport = InMemoryTransport { _ in .json(#"{"id":7,"text":"Tea & cake"}"#, status: 201) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let request = NetworkRequest<Memo, Memo>(
            path: "/memos", method: .post, queryItems: [URLQueryItem(name: "q", value: "a+b c")],
            body: Memo(id: 7, text: "Tea & cake"))
        _ = try await client(transport, encoder: encoder).run(request)

        let sent = try #require(transport.requests.first)
        #expect(sent.method == "POST")
        #expect(sent.url.absoluteString == "https://memos.test/api/memos?q=a%2Bb%20c")
        #expect(sent.query("q") == "a+b c")
        #expect(sent.body == Data(#"{"id":7,"text":"Tea & cake"}"#.utf8))
        #expect(sent.header("content-type") == "application/json")
        #expect(sent.header("Content-Length") == "28")
        #expect(sent.header("ACCEPT") == "application/json")
        #expect(sent.header("X-Not-Sent") == nil)
        #expect(try sent.decodedBody(as: Memo.self) == Memo(id: 7, text: "Tea & cake"))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A 404 fails with unacceptableStatusCode carrying the body")
    func notFound() async throws {
        let transport = InMemoryTransport { _ in .json(#"{"code":"missing"}"#, status: 404) }
        let error = try await #require(throws: NetworkClientError.self) {
            try await client(transport).run(GetMemo(path: "/memos/9", method: .get))
        }
        guard case .unacceptableStatusCode(let status, let response, let data) = error else {
            Issue.record("expected unacceptableStatusCode, got \(error)")
            return
        }
        #expect(status == 404)
        #expect(response.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(data == Data(#"{"code":"missing"}"#.utf8))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A raw HTTP/1.1 message is answered as written: status, headers, body")
    func rawMessage() async throws {
        let transport = InMemoryTransport { _ in
            try InMemoryTransport.Response(
                parsing: "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nX-Request-Id: 42\r\n"
                    + "Content-Length: 22\r\n\r\n{\"id\":3,\"text\":\"Pens\"}")
        }
        let response = try await client(transport).run(GetMemo(path: "/memos/3", method: .get))
        #expect(response.value == Memo(id: 3, text: "Pens"))
        #expect(response.statusCode == 201)
        #expect((response.response as? HTTPURLResponse)?.value(forHTTPHeaderField: "x-request-id") == "42")
    }

    @Test("A raw message may use bare line feeds, and repeated fields are joined")
    func rawMessageWithLineFeeds() throws {
        let response = try InMemoryTransport.Response(
            parsing: """
                HTTP/1.1 503 Service Unavailable
                Retry-After: 1
                Vary: Accept
                vary: Origin

                down for maintenance
                """)
        #expect(response.status == 503)
        #expect(response.headers == ["Retry-After": "1", "Vary": "Accept, Origin"])
        #expect(response.body == Data("down for maintenance".utf8))
    }

    @Test(
        "A malformed raw message throws cannotParseResponse",
        arguments: [
            "200 OK\r\n\r\n", "HTTP/1.1 OK\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc",
        ])
    func malformedMessage(_ message: String) {
        let error = #expect(throws: URLError.self) { try InMemoryTransport.Response(parsing: message) }
        #expect(error?.code == .cannotParseResponse)
    }

    @Test("A body in pieces is cut into nearly equal pieces, never empty ones, in order")
    func pieces() {
        let body = patternBytes(10)
        #expect(
            InMemoryTransport.Response(body: body, pieces: 3).bodyPieces == [body[0..<4], body[4..<8], body[8..<10]])
        #expect(InMemoryTransport.Response(body: body, pieces: 50).bodyPieces.count == 10)
        #expect(InMemoryTransport.Response(body: body, pieces: 0).bodyPieces == [body])
        #expect(InMemoryTransport.Response(pieces: 4).bodyPieces.isEmpty)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("An answer that throws a URLError fails the call with transportFailed")
    func answerThrows() async throws {
        let transport = InMemoryTransport { _ in throw URLError(.notConnectedToInternet) }
        let error = try await #require(throws: NetworkClientError.self) {
            try await client(transport).run(GetMemo(path: "/memos/1", method: .get))
        }
        guard case .transportFailed(let urlError) = error else {
            Issue.record("expected transportFailed, got \(error)")
            return
        }
        #expect(urlError.code == .notConnectedToInternet)
    }

    // MARK: Courier's rules above the transport

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A body that passes maximumResponseSize in its middle fails with responseTooLarge")
    func sizeLimitMidBody() async throws {
        // 40 bytes in 4 pieces and no Content-Length: nothing refuses it up front, the third piece passes 25.
        let transport = InMemoryTransport { _ in InMemoryTransport.Response(body: patternBytes(40), pieces: 4) }
        let small = NetworkRequest<VoidRequest, Data>(path: "/blob", method: .get, maximumResponseSize: 25)
        let error = try await #require(throws: NetworkClientError.self) { try await client(transport).run(small) }
        guard case .responseTooLarge(let limit) = error else {
            Issue.record("expected responseTooLarge, got \(error)")
            return
        }
        #expect(limit == 25)
        let exact = NetworkRequest<VoidRequest, Data>(path: "/blob", method: .get, maximumResponseSize: 40)
        #expect(try await client(transport).run(exact).value == patternBytes(40))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A 302 is followed by Courier: two requests reach the transport, the second to the new URL")
    func followsRedirect() async throws {
        let transport = InMemoryTransport { request in
            switch request.url.path {
            case "/api/old": .redirect(to: "/new")
            case "/new": .json(#"{"id":2,"text":"moved"}"#)
            default: .status(404)
            }
        }
        let memo = try await client(transport).run(GetMemo(path: "/old", method: .get)).value
        #expect(memo == Memo(id: 2, text: "moved"))
        #expect(
            transport.requests.map(\.description) == ["GET https://memos.test/api/old", "GET https://memos.test/new"])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A cross-origin 307 keeps the method and the body and drops Authorization")
    func crossOrigin307() async throws {
        let transport = InMemoryTransport { request in
            request.url.host == "memos.test"
                ? .redirect(to: "https://mirror.test/upload", status: 307) : .json(request.body)
        }
        let request = NetworkRequest<Memo, Memo>(
            path: "/upload", method: .post, body: Memo(id: 5, text: "kept"),
            additionalHeaders: ["Authorization": "Bearer s3cr3t", "X-Trace": "abc"])
        let echoed = try await client(transport).run(request).value
        #expect(echoed == Memo(id: 5, text: "kept"))

        let requests = transport.requests
        try #require(requests.count == 2)
        #expect(requests[0].header("Authorization") == "Bearer s3cr3t")
        #expect(requests[1].description == "POST https://mirror.test/upload")
        #expect(requests[1].header("Authorization") == nil)
        #expect(requests[1].header("X-Trace") == "abc")
        #expect(try requests[1].decodedBody(as: Memo.self) == Memo(id: 5, text: "kept"))
        #expect(requests[1].body == requests[0].body)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A 21st redirect fails with transportFailed(httpTooManyRedirects) after 20 are followed")
    func tooManyRedirects() async throws {
        let transport = InMemoryTransport { request in
            .redirect(to: "/hop/\(Int(request.url.lastPathComponent).map { $0 + 1 } ?? 1)")
        }
        let error = try await #require(throws: NetworkClientError.self) {
            try await client(transport).run(GetMemo(path: "/hop/0", method: .get))
        }
        guard case .transportFailed(let urlError) = error else {
            Issue.record("expected transportFailed, got \(error)")
            return
        }
        #expect(urlError.code == .httpTooManyRedirects)
        #expect(transport.requests.count == 21)
        #expect(transport.requests.last?.url.path == "/hop/20")
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A redirect to a file: URL is refused with redirectRefused and never sent")
    func fileRedirectRefused() async throws {
        let transport = InMemoryTransport { _ in .redirect(to: "file:///etc/passwd") }
        let error = try await #require(throws: NetworkClientError.self) {
            try await client(transport).run(GetMemo(path: "/memos/1", method: .get))
        }
        guard case .redirectRefused = error else {
            Issue.record("expected redirectRefused, got \(error)")
            return
        }
        #expect(transport.requests.map(\.description) == ["GET https://memos.test/api/memos/1"])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("totalTimeout stops a call whose answer never returns, promptly, with transportFailed(timedOut)")
    func totalTimeout() async throws {
        let never = AnswerGate()
        defer { never.open() }  // Lets the abandoned answer end with the test.
        let clock = ContinuousClock()
        let start = clock.now
        let stoppedAfter = Locked<Duration?>(nil)
        let reached = Locked<ContinuousClock.Instant?>(nil)
        let stoppedAt = Locked<ContinuousClock.Instant?>(nil)
        let transport = InMemoryTransport { _ in
            reached.withLock { $0 = clock.now }
            // Ignores cancellation (only the transport's not waiting for it ends the call), but notes when the
            // transport cancelled it: that is when Courier's deadline stopped the exchange.
            await withTaskCancellationHandler {
                await never.wait()
            } onCancel: {
                let now = clock.now
                stoppedAt.withLock { $0 = now }
                stoppedAfter.withLock { $0 = now - start }
            }
            return .status(200)
        }
        let client = client(transport)
        let request = GetMemo(path: "/slow", method: .get, totalTimeout: 0.2)
        // A transport that waited for the answer would hang here: the time limit fails the test instead.
        let caught = try await withTimeLimit(.seconds(20)) { () -> (any Error)? in
            do {
                _ = try await client.run(request)
                return nil
            } catch {
                return error
            }
        }
        guard case .transportFailed(let urlError) = try #require(caught as? NetworkClientError) else {
            Issue.record("expected transportFailed, got \(String(describing: caught))")
            return
        }
        #expect(urlError.code == .timedOut)
        // Measured where the deadline acts (a dispatch timer), not where the caller resumes: the caller's resumption
        // waits for a cooperative thread, which the whole suite's parallel load can hold up for seconds.
        // The upper bound counts from when the request reached the transport: getting there also waits for a
        // cooperative thread (a full-suite run once took 5.15 s from the test's start).
        let stopped = try #require(stoppedAfter.withLock { $0 })
        #expect(stopped >= .milliseconds(200))
        let reachedTransport = try #require(reached.withLock { $0 })
        let stoppedThere = try #require(stoppedAt.withLock { $0 })
        #expect(stoppedThere - reachedTransport < promptly)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Cancelling the caller ends the call promptly with CancellationError and cancels the answer")
    func cancellation() async throws {
        let signals = Signals()
        let clock = ContinuousClock()
        let cancelledAt = Locked<ContinuousClock.Instant?>(nil)
        let transport = InMemoryTransport { _ in
            signals.send("answering")
            do {
                try await withTaskCancellationHandler {
                    try await Task.sleep(for: .seconds(3_600))
                } onCancel: {
                    cancelledAt.withLock { $0 = clock.now }
                }
            } catch {
                signals.send(error is CancellationError ? "answer cancelled" : "answer failed: \(error)")
                throw error
            }
            return .status(200)
        }
        let client = client(transport)
        let call = Task { try await client.run(GetMemo(path: "/slow", method: .get)) }
        #expect(await signals.next() == "answering")
        let cancelled = clock.now
        call.cancel()
        // A transport that waited for the answer would hang here: the time limit fails the test instead.
        let outcome = try await withTimeLimit(.seconds(20)) { await call.result }
        #expect(throws: CancellationError.self) { try outcome.get() }
        // Measured where the cancellation acts (the answer's task is cancelled), not where the caller resumes, which
        // waits for a cooperative thread that the whole suite's parallel load can hold up for seconds.
        let answerCancelled = try #require(cancelledAt.withLock { $0 })
        #expect(answerCancelled - cancelled < promptly)
        #expect(await signals.next() == "answer cancelled")
    }

    // MARK: Transfers

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A DownloadedFile request lands the canned body in its file, progress ending at the total")
    func download() async throws {
        let body = patternBytes(100_000)
        let transport = InMemoryTransport { _ in
            InMemoryTransport.Response(
                headers: ["Content-Type": "text/csv", "Content-Length": "100000"], body: body, pieces: 5)
        }
        let destination = temporaryFile("export.csv")
        defer { try? FileManager.default.removeItem(at: destination) }
        let reports = Locked<[TransferProgress]>([])
        let request = NetworkRequest<VoidRequest, DownloadedFile>(
            path: "/export.csv", method: .get, downloadDestination: destination,
            onProgress: { progress in reports.withLock { $0.append(progress) } })

        let file = try await client(transport).run(request).value

        #expect(file.url.standardizedFileURL == destination.standardizedFileURL)
        #expect(file.byteCount == 100_000)
        #expect(file.contentType == "text/csv")
        #expect(try Data(contentsOf: destination) == body)
        let received = reports.withLock { $0 }.map(\.bytesReceived)
        // Reports not yet delivered are replaced by newer ones, so how many arrive varies; their order does not.
        #expect(received == received.sorted())
        #expect(received.allSatisfy { $0 <= 100_000 })
        let last = try #require(reports.withLock { $0.last })
        #expect(last.bytesReceived == 100_000)
        #expect(last.totalBytesExpectedToReceive == 100_000)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A FileUpload body arrives byte for byte with its Content-Length, and upload progress reaches it")
    func fileUpload() async throws {
        let bytes = patternBytes(150_000)
        let source = temporaryFile("upload.bin")
        try bytes.write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }
        let transport = InMemoryTransport { _ in .status(204) }
        let reports = Locked<[TransferProgress]>([])
        let request = NetworkRequest<FileUpload, VoidResponse>(
            path: "/files/upload.bin", method: .put, body: FileUpload(url: source),
            onProgress: { progress in reports.withLock { $0.append(progress) } })

        _ = try await client(transport).run(request)

        let sent = try #require(transport.requests.first)
        #expect(sent.method == "PUT")
        #expect(sent.body == bytes)
        #expect(sent.header("Content-Length") == "150000")
        #expect(sent.header("Content-Type") == "application/octet-stream")
        #expect(reports.withLock { $0.last?.bytesSent } == 150_000)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A multipart form with a file part arrives encoded, the file's bytes inside, under its boundary")
    func multipartWithFile() async throws {
        let source = temporaryFile("notes.txt")
        try Data("file line\n".utf8).write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }
        var form = MultipartFormData()
        form.append("Ann", name: "author")
        form.append(fileAt: source, name: "attachment", filename: "notes.txt", contentType: "text/plain")
        let transport = InMemoryTransport { _ in .status(204) }
        _ = try await client(transport).run(
            NetworkRequest<MultipartFormData, VoidResponse>(path: "/forms", method: .post, body: form))

        let sent = try #require(transport.requests.first)
        let contentType = try #require(sent.header("Content-Type"))
        #expect(contentType.hasPrefix("multipart/form-data; boundary="))
        let boundary = String(contentType.dropFirst("multipart/form-data; boundary=".count))
        let text = String(decoding: sent.body, as: UTF8.self)
        #expect(text.hasPrefix("--\(boundary)\r\n"))
        #expect(text.hasSuffix("--\(boundary)--\r\n"))
        #expect(text.contains("name=\"author\"\r\n\r\nAnn\r\n"))
        #expect(text.contains("filename=\"notes.txt\"\r\nContent-Type: text/plain\r\n\r\nfile line\n\r\n"))
        #expect(sent.header("Content-Length") == String(sent.body.count))
    }

    // MARK: Decorators and the outbox over the real client

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("retrying() sends a GET again after a 503 and returns the second answer")
    func retriesA503() async throws {
        let answers = Locked(0)
        let transport = InMemoryTransport { _ in
            let attempt = answers.withLock { count in
                count += 1
                return count
            }
            return attempt == 1 ? .status(503) : .json(#"{"id":1,"text":"back"}"#)
        }
        let memo = try await client(transport).retrying(RetryPolicy(baseDelay: 0)).run(
            GetMemo(path: "/memos/1", method: .get)
        ).value
        #expect(memo == Memo(id: 1, text: "back"))
        #expect(
            transport.requests.map(\.description) == [
                "GET https://memos.test/api/memos/1", "GET https://memos.test/api/memos/1",
            ])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("authenticated(by:) renews the credential once after a 401 and sends the request again with it")
    func renewsAfter401() async throws {
        let store = TokenStore(token: "expired")
        let transport = InMemoryTransport { request in
            request.header("Authorization") == "Bearer fresh-1" ? .json(#"{"id":1,"text":"mine"}"#) : .status(401)
        }
        let memo = try await client(transport).authenticated(by: store.authenticator).run(
            GetMemo(path: "/memos/1", method: .get)
        ).value
        #expect(memo == Memo(id: 1, text: "mine"))
        #expect(store.refreshes == ["expired"])
        #expect(transport.requests.map { $0.header("Authorization") } == ["Bearer expired", "Bearer fresh-1"])
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("deduplicated() sends concurrent identical GETs once and every caller gets the answer")
    func deduplicates() async throws {
        let gate = AnswerGate()
        let transport = InMemoryTransport { _ in
            await gate.wait()
            return .json(#"{"id":1,"text":"shared"}"#)
        }
        let client = client(transport).deduplicated()
        try await withThrowingTaskGroup(of: Memo.self) { group in
            for _ in 0..<20 {
                group.addTask { try await client.run(GetMemo(path: "/memos/1", method: .get)).value }
            }
            #expect(await eventually { client.waiterCount == 20 })
            gate.open()
            var received = 0
            for try await memo in group {
                #expect(memo == Memo(id: 1, text: "shared"))
                received += 1
            }
            #expect(received == 20)
        }
        #expect(transport.requests.count == 1)
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("logged(...) never shows a configured sensitive header, though it was sent")
    func loggingRedactsSensitiveHeaders() async throws {
        let transport = InMemoryTransport { _ in .json(#"{"id":1,"text":"ok"}"#) }
        let log = LogCollector()
        let client = client(transport, sensitiveHeaders: ["X-Device-Pin"]).logged(level: .debug, to: log.sink)
        _ = try await client.run(
            GetMemo(path: "/memos/1", method: .get, additionalHeaders: ["X-Device-Pin": "4921", "X-Trace": "abc"]))

        #expect(transport.requests.first?.header("X-Device-Pin") == "4921")
        #expect(log.all.count == 1)
        #expect(!log.everything.contains("4921"))
        #expect(log.everything.contains("X-Device-Pin: <redacted>"))
        #expect(log.everything.contains("X-Trace: abc"))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("An Outbox delivers a queued write through the transport, with its idempotency key")
    func outboxDelivers() async throws {
        let transport = InMemoryTransport { request in .json(request.body, status: 201) }
        let directory = temporaryOutboxDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outbox = try Outbox(directory: directory, client: client(transport), rules: Outbox.Rules(), paused: true)
        let received = Locked<[(OutboxEntry, Memo)]>([])
        outbox.onResult(kind: "createMemo", as: Memo.self) { entry, result in
            try received.withLock { $0.append((entry, try result.get().value)) }
        }
        let events = outbox.events()
        let id = try await outbox.enqueue(
            NetworkRequest<Memo, Memo>(path: "/memos", method: .post, body: Memo(id: 8, text: "later")),
            kind: "createMemo")
        #expect(transport.requests.isEmpty)
        outbox.resume()
        #expect(await firstEvent(events) { if case .drained = $0 { return true } else { return false } } != nil)
        await outbox.close()

        let (entry, memo) = try #require(received.withLock { $0.first })
        #expect(entry.ticket == id)
        #expect(memo == Memo(id: 8, text: "later"))
        let sent = try #require(transport.requests.first)
        #expect(transport.requests.count == 1)
        #expect(sent.description == "POST https://memos.test/api/memos")
        #expect(sent.header("Idempotency-Key") == entry.idempotencyKey)
        #expect(try sent.decodedBody(as: Memo.self) == Memo(id: 8, text: "later"))
    }
}
