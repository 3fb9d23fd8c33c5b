import Courier
import Foundation
import LoopbackHTTPServer

/// The scenarios, by the name given on the command line.
enum Scenario: String, CaseIterable {
    /// Requests whose `timeoutInterval` or `totalTimeout` is far above what corelibs accepts (it traps at about
    /// 9.2e15 s): each must succeed (Courier clamps it), or, for infinity, may be refused as `invalidRequest`.
    case hugeRequestTimeout = "huge-request-timeout"
    /// Session configurations whose `timeoutIntervalForRequest` or `timeoutIntervalForResource` is infinity, NaN or
    /// 1e300, handed to `NetworkConfiguration(sessionConfiguration:baseURL:)`: a request with each must succeed.
    case sessionConfigTimeouts = "session-config-timeouts"
    /// Many requests with `NetworkConfiguration(baseURL:)`, each cancelled 0–2 ms (seeded) after it starts: each
    /// ends with a success or `CancellationError`, and the process survives.
    case massCancelDefault = "mass-cancel-default"
    /// The same with `NetworkConfiguration(session: .shared, baseURL:)` (corelibs' shared session has a URLCache).
    case massCancelShared = "mass-cancel-shared"
    /// The caller's own code on Courier's session and in its callbacks, calling URLSession synchronously: an
    /// `onProgress` that creates tasks, the "cancel every task" idiom through `getAllTasks`, completion handlers that
    /// start the next request, and `flush`. On Linux Courier's callbacks run on the queue every session shares, where
    /// such a call traps; each must complete and the process survive.
    case callersCode = "callers-code"
    /// File uploads of a few MB (`FileUpload`) on a session Courier owns, a few at a time: each cancelled 0–20 ms
    /// (seeded) after it starts, or sent to an endpoint that answers 413 at once, without reading the body, and closes
    /// the connection. Each ends with a success, `CancellationError` or `NetworkClientError`, and the process
    /// survives, without hanging. With corelibs' `uploadTask(fromFile:)` the cancellations trapped the process in
    /// every run of 160 uploads (about one cancel in 15): its file reader unpauses libcurl's handle when a read
    /// completes after the cancel removed it (`_EasyHandle._PauseState.setState`, CURLE_BAD_FUNCTION_ARGUMENT). The
    /// refused uploads never trapped it; they check that a body the server does not read ends the call.
    case cancelledUploads = "cancelled-uploads"
    /// `FileUpload`s and multipart file parts of `/dev/zero`, a FIFO nobody writes to, and links to them: each fails
    /// with `fileAccessFailed` at once, and another client's request still completes. Before Courier accepted regular
    /// files only, the FIFO froze every URLSession in the process and `/dev/zero` in a form grew without bound.
    case specialFileBodies = "special-file-bodies"
    /// Responses that declare far more than they send: 60 GB under a 64 GB `maximumResponseSize`, then a close (a
    /// typed error, where reserving the declared length trapped); and 40 at once declaring 100 MiB each, held open,
    /// under an address-space limit 2.5 GB above what the process uses (reserving each length exhausted it).
    case declaredLengths = "declared-lengths"
    /// A download into a folder this process may not write to (as `nobody` when run as root): `fileAccessFailed`
    /// whose reason names EACCES, where it used to say ENOENT.
    case readOnlyDownloadFolder = "read-only-download-folder"
    /// Streams (`ServerSentEvents`) opened and ended at random: cancelled before the head, cancelled while reading,
    /// broken out of, dropped unread, or read to the end. Each ends in a success or `CancellationError`, every
    /// connection is closed on the server's side, the process survives, and its resident memory after the last round
    /// is within a few MB of what it was after the first (no stream is kept).
    case massCancelStreams = "mass-cancel-streams"
    /// A reader of about 64 MB/s reads 32 MiB of a 256 MiB stream that the server writes as fast as it is taken, with
    /// no other transfer in the process (Courier then holds libcurl back for it): what Courier buffers stays within
    /// its capacity and backlog, and the server within that and the kernel's buffers ahead of the reader. Prints the
    /// most Courier buffered and the most the server was ahead.
    case slowStreamReader = "slow-stream-reader"
    /// Fills a `ResponseCache` on disk in the `--directory` from a server of its own and prints the URL it
    /// stored (`url=…`), for the test that reads it back in another process.
    case cacheFill = "cache-fill"
    /// Fills an 8 MB memory `ResponseCache` with 1,500 responses that hold far more than their body (200 small header
    /// fields and a `Vary` of 32 names each), from a transport in memory: the cache reports at most its capacity, and
    /// the process grows by at most that and 6 MB (every byte an entry holds is counted; it grew by 6 MB, 9 MB under the
    /// thread sanitizer). Counting the header bytes only, it grew by 21 MB.
    case cacheMemory = "cache-memory"
}

/// The parsed command line.
struct ProbeOptions {
    var scenario: Scenario
    var seed: UInt64 = 2_026
    /// How many calls the mass-cancellation and upload scenarios make; each scenario has its own default.
    var count: Int?
    var timeLimit: Double = 240
    /// The directory of `cache-fill`.
    var directory: String?

    static let usage =
        "Usage: CourierProbe <\(Scenario.allCases.map(\.rawValue).joined(separator: "|"))> "
        + "[--seed N] [--count N] [--time-limit SECONDS] [--directory PATH]"

    init?(_ arguments: [String]) {
        var remaining = arguments[...]
        guard let name = remaining.popFirst(), let scenario = Scenario(rawValue: name) else { return nil }
        self.scenario = scenario
        while let flag = remaining.popFirst() {
            guard let value = remaining.popFirst() else { return nil }
            switch flag {
            case "--seed":
                guard let seed = UInt64(value) else { return nil }
                self.seed = seed
            case "--count":
                guard let count = Int(value), count > 0 else { return nil }
                self.count = count
            case "--directory":
                directory = value
            case "--time-limit":
                guard let limit = Double(value), limit > 0 else { return nil }
                timeLimit = limit
            default: return nil
            }
        }
    }
}

/// Writes one line to standard error at once (no buffering), so that it survives a crash.
func progress(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Parses the arguments, runs the scenario on the global executor while this thread waits, prints the result and
/// exits. A watchdog thread exits with status 3 if the scenario hangs.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func probeMain(_ arguments: [String]) -> Never {
    guard let options = ProbeOptions(arguments) else {
        progress(ProbeOptions.usage)
        exit(2)
    }
    let name = options.scenario.rawValue
    let watchdog = Thread {
        Thread.sleep(forTimeInterval: options.timeLimit)
        FileHandle.standardOutput.write(Data("\(name): FAILED: did not finish within \(options.timeLimit) s\n".utf8))
        exit(3)
    }
    watchdog.start()
    // Created in a nonisolated function, so the task does not inherit the main actor that this thread blocks.
    Task {
        let (behaved, summary) = await run(options)
        FileHandle.standardOutput.write(Data("\(name): \(behaved ? "ok" : "FAILED"): \(summary)\n".utf8))
        exit(behaved ? 0 : 1)
    }
    while true { DispatchSemaphore(value: 0).wait() }
}

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private func run(_ options: ProbeOptions) async -> (Bool, String) {
    let server: LoopbackServer
    do {
        server = try LoopbackServer { request in
            guard request.path.hasPrefix("/item/"), let index = Int(request.path.dropFirst(6)) else { return .echo }
            // A spread of answer times, so that cancellations land before, during and after the response.
            return .respond(status: 200, body: Data("ok".utf8), delay: .milliseconds(index % 3))
        }
    } catch {
        return (false, "could not start the loopback server: \(error)")
    }
    defer { server.stop() }
    switch options.scenario {
    case .hugeRequestTimeout: return await hugeRequestTimeout(server)
    case .sessionConfigTimeouts: return await sessionConfigTimeouts(server)
    case .massCancelDefault:
        let configuration = NetworkConfiguration(baseURL: server.baseURL)
        return await massCancel(configuration, server: server, options: options)
    case .massCancelShared:
        let configuration = NetworkConfiguration(session: .shared, baseURL: server.baseURL)
        return await massCancel(configuration, server: server, options: options)
    case .callersCode: return await callersCode()
    case .cancelledUploads: return await cancelledUploads(options)
    case .specialFileBodies: return await specialFileBodies(server)
    case .declaredLengths: return await declaredLengths()
    case .readOnlyDownloadFolder: return await readOnlyDownloadFolder(server)
    case .cacheFill: return await cacheFill(options.directory)
    case .cacheMemory: return await cacheMemory(options)
    case .massCancelStreams: return await massCancelStreams(options)
    case .slowStreamReader: return await slowStreamReader()
    }
}

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private typealias Echo = NetworkRequest<VoidRequest, EchoedRequest>

/// Runs `request` and describes a failure, or returns nil if the server echoed the expected path.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private func expectEcho(_ client: NetworkClient, _ request: Echo, step: String) async -> String? {
    progress("step: \(step)")
    do {
        let echo = try await client.run(request).value
        return echo.path == "/\(request.path ?? "")" ? nil : "\(step): the server saw \(echo.path)"
    } catch {
        return "\(step): \(error)"
    }
}

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private func hugeRequestTimeout(_ server: LoopbackServer) async -> (Bool, String) {
    let client = NetworkClient(configuration: NetworkConfiguration(baseURL: server.baseURL))
    var failures: [String] = []
    let clamped: [(String, Echo)] = [
        ("timeoutInterval 1e300", Echo(path: "a", method: .get, timeoutInterval: 1e300)),
        ("timeoutInterval 9.3e15", Echo(path: "b", method: .get, timeoutInterval: 9.3e15)),
        ("totalTimeout 1e300", Echo(path: "c", method: .get, totalTimeout: 1e300)),
        ("totalTimeout infinity", Echo(path: "d", method: .get, totalTimeout: .infinity)),
    ]
    for (step, request) in clamped {
        if let failure = await expectEcho(client, request, step: step) { failures.append(failure) }
    }
    // An infinite idle timeout may be clamped or refused before sending; it must not trap.
    progress("step: timeoutInterval infinity")
    do {
        _ = try await client.run(Echo(path: "e", method: .get, timeoutInterval: .infinity))
    } catch NetworkClientError.invalidRequest {
    } catch {
        failures.append("timeoutInterval infinity: \(error)")
    }
    return failures.isEmpty ? (true, "5 requests, none trapped or failed") : (false, failures.joined(separator: "; "))
}

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private func sessionConfigTimeouts(_ server: LoopbackServer) async -> (Bool, String) {
    var failures: [String] = []
    let fields: [(String, ReferenceWritableKeyPath<URLSessionConfiguration, TimeInterval>)] = [
        ("timeoutIntervalForRequest", \.timeoutIntervalForRequest),
        ("timeoutIntervalForResource", \.timeoutIntervalForResource),
    ]
    for (name, field) in fields {
        for value in [Double.infinity, .nan, 1e300] {
            let sessionConfiguration = URLSessionConfiguration.ephemeral
            sessionConfiguration[keyPath: field] = value
            let configuration = NetworkConfiguration(
                sessionConfiguration: sessionConfiguration, baseURL: server.baseURL)
            let client = NetworkClient(configuration: configuration)
            let step = "\(name) = \(value)"
            if let failure = await expectEcho(client, Echo(path: "x", method: .get), step: step) {
                failures.append(failure)
            }
        }
    }
    return failures.isEmpty
        ? (true, "6 session configurations, none trapped or failed") : (false, failures.joined(separator: "; "))
}

/// SplitMix64: a tiny seeded generator, so that a failing run can be repeated with the same delays.
private struct SplitMix64 {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}

/// Counts of how the calls ended.
private struct Tally: Sendable {
    var succeeded = 0
    var cancelled = 0
    var other: [String] = []

    mutating func add(_ other: Tally) {
        succeeded += other.succeeded
        cancelled += other.cancelled
        self.other += other.other
    }
}

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private func massCancel(
    _ configuration: NetworkConfiguration, server: LoopbackServer, options: ProbeOptions
) async -> (Bool, String) {
    let client = NetworkClient(configuration: configuration)
    let count = options.count ?? 5_000
    var random = SplitMix64(state: options.seed)
    // Drawn up front, in request order: the same seed gives the same delays whatever the scheduling.
    let delays = (0..<count).map { _ in Int(random.next() % 2_001) }  // microseconds
    let workers = 16
    let clock = ContinuousClock()
    let started = clock.now
    progress("step: \(count) requests, seed \(options.seed), \(workers) at a time")
    let tally = await withTaskGroup(of: Tally.self) { group in
        for worker in 0..<workers {
            group.addTask {
                var tally = Tally()
                for index in stride(from: worker, to: delays.count, by: workers) {
                    let call = Task {
                        try await client.run(NetworkRequest<VoidRequest, Data>(path: "item/\(index)", method: .get))
                    }
                    try? await Task.sleep(for: .microseconds(delays[index]))
                    call.cancel()
                    switch await call.result {
                    case .success: tally.succeeded += 1
                    case .failure(let error) where error is CancellationError: tally.cancelled += 1
                    case .failure(let error): tally.other.append("request \(index): \(error)")
                    }
                }
                return tally
            }
        }
        var total = Tally()
        for await part in group { total.add(part) }
        return total
    }
    let seconds =
        Double((clock.now - started).components.seconds)
        + Double((clock.now - started).components.attoseconds) / 1e18
    let summary =
        "\(count) calls (seed \(options.seed)): \(tally.succeeded) succeeded, \(tally.cancelled) cancelled, "
        + "\(tally.other.count) other, \(server.requestCount) reached the server, "
        + String(format: "%.1f s", seconds)
    guard tally.other.isEmpty else {
        return (false, summary + "; first: " + tally.other.prefix(3).joined(separator: "; "))
    }
    return (true, summary)
}

/// See ``Scenario/cancelledUploads``.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private func cancelledUploads(_ options: ProbeOptions) async -> (Bool, String) {
    let server: LoopbackServer
    do {
        // "/upload" reads and drops the body, then answers. "/refuse" is sent a body above the server's 1 GiB limit,
        // so the server answers 413 as soon as the head arrives, reads none of the body and closes the connection.
        server = try LoopbackServer(
            requestBodyMode: { _, path in path == "/upload" ? .discard : .buffer },
            handler: { _ in .respond(status: 204) })
    } catch {
        return (false, "could not start the loopback server: \(error)")
    }
    defer { server.stop() }
    let uploadSize = 4 << 20
    let folder = FileManager.default.temporaryDirectory
        .appendingPathComponent("CourierProbe-uploads-\(UUID().uuidString)")
    let file = folder.appendingPathComponent("upload.bin")
    let hugeFile = folder.appendingPathComponent("huge.bin")
    do {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(repeating: 0x5A, count: uploadSize).write(to: file)
        // Sparse: 1 GiB + 1 byte that take no disk space.
        try Data().write(to: hugeFile)
        let handle = try FileHandle(forWritingTo: hugeFile)
        try handle.truncate(atOffset: (1 << 30) + 1)
        try handle.close()
    } catch {
        return (false, "could not create the files to upload: \(error)")
    }
    defer { try? FileManager.default.removeItem(at: folder) }

    let configuration = NetworkConfiguration(sessionConfiguration: .ephemeral, baseURL: server.baseURL)
    let client = NetworkClient(configuration: configuration)
    let count = options.count ?? 160
    var random = SplitMix64(state: options.seed)
    // Drawn up front, in upload order: one in four is refused, the others cancelled after 0–20 ms.
    let plan: [Int?] = (0..<count).map { _ in
        let delay = Int(random.next() % 20_001)  // microseconds
        return random.next() % 4 == 0 ? nil : delay
    }
    let workers = 4
    let clock = ContinuousClock()
    let started = clock.now
    progress("step: \(count) uploads of \(uploadSize >> 20) MiB, seed \(options.seed), \(workers) at a time")
    let tally = await withTaskGroup(of: UploadTally.self) { group in
        for worker in 0..<workers {
            group.addTask {
                var tally = UploadTally()
                for index in stride(from: worker, to: plan.count, by: workers) {
                    let delay = plan[index]
                    let request = NetworkRequest<FileUpload, VoidResponse>(
                        path: delay == nil ? "refuse" : "upload", method: .put,
                        body: FileUpload(url: delay == nil ? hugeFile : file))
                    let call = Task { try await client.run(request) }
                    if let delay {
                        try? await Task.sleep(for: .microseconds(delay))
                        call.cancel()
                    }
                    switch await call.result {
                    case .success: tally.succeeded += 1
                    case .failure(let error) where error is CancellationError: tally.cancelled += 1
                    case .failure(NetworkClientError.unacceptableStatusCode(413, _, _)): tally.refused += 1
                    case .failure(let error as NetworkClientError): tally.failed.append("upload \(index): \(error)")
                    case .failure(let error): tally.other.append("upload \(index): \(error)")
                    }
                }
                return tally
            }
        }
        var total = UploadTally()
        for await part in group { total.add(part) }
        return total
    }
    let elapsed = clock.now - started
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let summary =
        "\(count) uploads (seed \(options.seed)): \(tally.succeeded) succeeded, \(tally.cancelled) cancelled, "
        + "\(tally.refused) refused with 413, \(tally.failed.count) other NetworkClientError, "
        + "\(tally.other.count) other, \(server.requestCount) arrived whole, " + String(format: "%.1f s", seconds)
    guard tally.other.isEmpty else {
        return (false, summary + "; first: " + tally.other.prefix(3).joined(separator: "; "))
    }
    guard tally.cancelled > 0, tally.refused + tally.failed.count > 0 else {
        return (false, summary + "; the scenario did not both cancel and get refused")
    }
    return (true, summary)
}

/// Counts of how the uploads of ``Scenario/cancelledUploads`` ended.
private struct UploadTally: Sendable {
    var succeeded = 0
    var cancelled = 0
    var refused = 0
    /// Other `NetworkClientError`s (a reset connection, say): allowed.
    var failed: [String] = []
    /// Any other error: not allowed.
    var other: [String] = []

    mutating func add(_ other: UploadTally) {
        succeeded += other.succeeded
        cancelled += other.cancelled
        refused += other.refused
        failed += other.failed
        self.other += other.other
    }
}

/// See ``Scenario/callersCode``.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private func callersCode() async -> (Bool, String) {
    let server: LoopbackServer
    do {
        server = try LoopbackServer { request in
            switch request.path {
            case "/big": .stream(status: 200, length: 2_000_000)
            case "/held": .stream(status: 200, length: 10_000_000, holdAfter: 100_000)
            default: .respond(status: 200, body: Data("ok".utf8))
            }
        }
    } catch {
        return (false, "could not start the loopback server: \(error)")
    }
    defer { server.stop() }
    let configuration = NetworkConfiguration(baseURL: server.baseURL)
    let client = NetworkClient(configuration: configuration)
    let session = configuration.session
    var failures: [String] = []

    progress("step: onProgress creates tasks on URLSession.shared and on Courier's session")
    let created = Locked(0)
    do {
        _ = try await client.run(
            NetworkRequest<VoidRequest, Data>(
                path: "big", method: .get,
                onProgress: { _ in
                    guard created.withLock({ $0 }) < 3 else { return }
                    _ = URLSession.shared.dataTask(with: server.baseURL)
                    _ = session.dataTask(with: server.baseURL)
                    created.withLock { $0 += 1 }
                }))
    } catch {
        failures.append("onProgress: \(error)")
    }

    progress("step: getAllTasks cancels the request in flight")
    let held = Task { try await client.run(NetworkRequest<VoidRequest, Data>(path: "held", method: .get)) }
    try? await Task.sleep(for: .milliseconds(300))
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        session.getAllTasks { tasks in
            for task in tasks { task.cancel() }
            done.resume()
        }
    }
    if case .success = await held.result { failures.append("getAllTasks: the held request was not cancelled") }

    progress("step: a completion handler starts the next request")
    let chained = await withCheckedContinuation { (done: CheckedContinuation<Int?, Never>) in
        session.dataTask(with: server.baseURL) { _, _, _ in
            session.dataTask(with: server.baseURL) { _, response, _ in
                done.resume(returning: (response as? HTTPURLResponse)?.statusCode)
            }.resume()
        }.resume()
    }
    if chained != 200 { failures.append("chained completion handlers: \(String(describing: chained))") }

    progress("step: flush, then a task from its completion handler")
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        session.flush {
            _ = session.dataTask(with: server.baseURL)
            done.resume()
        }
    }
    return failures.isEmpty
        ? (true, "4 steps of the caller's code on Courier's session, none trapped or hung")
        : (false, failures.joined(separator: "; "))
}

/// A value behind a lock, for the probe's callbacks and scenarios.
final class Locked<Value: Sendable>: @unchecked Sendable {
    // `value` is only read or written while `lock` is held.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

/// See ``Scenario/massCancelStreams``.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private func massCancelStreams(_ options: ProbeOptions) async -> (Bool, String) {
    let server: LoopbackServer
    do {
        server = try LoopbackServer { request in
            .writer(headers: [ServerHeader(name: "Content-Type", value: "text/event-stream")]) { writer in
                // Events every 0-3 ms, 40 in all (a stream read to its end lasts about 60 ms).
                let pause = Int(request.path.dropFirst(8)) ?? 1
                for index in 0..<40 {
                    guard writer.send("id: \(index)\ndata: event \(index)\n\n"), writer.wait(.milliseconds(pause % 4))
                    else { return .close }
                }
                return .finish
            }
        }
    } catch {
        return (false, "could not start the loopback server: \(error)")
    }
    defer { server.stop() }
    let client = NetworkClient(configuration: NetworkConfiguration(baseURL: server.baseURL))
    let count = options.count ?? 1_000
    var random = SplitMix64(state: options.seed)
    // Drawn up front: how each stream ends (0 cancel early, 1 cancel while reading, 2 break, 3 drop, 4 read all) and
    // after how many microseconds or events.
    let plan = (0..<count).map { _ in (Int(random.next() % 5), Int(random.next() % 3_001)) }
    let workers = 8
    var firstRoundMemory: Int?
    var failures: [String] = []
    var tally = Tally()
    let rounds = 5
    // The thread sanitizer's shadow memory grows with every byte the run touches: its figure is not a leak's.
    #if canImport(Glibc)
    let allowedGrowth = dlsym(nil, "__tsan_init") == nil ? 8 : 40  // nil is RTLD_DEFAULT: every loaded image.
    #else
    let allowedGrowth = 8
    #endif
    progress("step: \(count) streams, seed \(options.seed), \(workers) at a time, \(rounds) rounds")
    for round in 0..<rounds {
        let part = await withTaskGroup(of: Tally.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var tally = Tally()
                    for index in stride(
                        from: round * count / rounds + worker, to: (round + 1) * count / rounds, by: workers)
                    {
                        let (ending, amount) = plan[index]
                        let call = Task { () -> Int in
                            let response = try await client.run(
                                NetworkRequest<VoidRequest, ServerSentEvents>(path: "streams/\(index)", method: .get))
                            if ending == 3 { return 0 }
                            var read = 0
                            for try await _ in response.value {
                                read += 1
                                if ending == 2 && read >= amount % 40 { break }
                            }
                            return read
                        }
                        if ending <= 1 {
                            try? await Task.sleep(for: .microseconds(ending == 0 ? amount % 500 : 1_000 + amount))
                            call.cancel()
                        }
                        switch await call.result {
                        case .success: tally.succeeded += 1
                        case .failure(let error) where error is CancellationError: tally.cancelled += 1
                        case .failure(let error): tally.other.append("stream \(index): \(error)")
                        }
                    }
                    return tally
                }
            }
            var total = Tally()
            for await part in group { total.add(part) }
            return total
        }
        tally.add(part)
        let closed = await server.waitUntil(timeout: .seconds(10)) { $0.inProgressRequests == 0 }
        if !closed { failures.append("round \(round): \(server.inProgressRequests) streams still open on the server") }
        let memory = residentMegabytes()
        progress("step: round \(round) done, \(memory.map { "\($0) MB resident" } ?? "memory unknown")")
        if round == 0 { firstRoundMemory = memory }
        if round == rounds - 1, let first = firstRoundMemory, let memory, memory > first + allowedGrowth {
            failures.append("resident memory grew from \(first) MB after the first round to \(memory) MB")
        }
    }
    let summary =
        "\(count) streams (seed \(options.seed)): \(tally.succeeded) ended normally, \(tally.cancelled) cancelled, "
        + "\(tally.other.count) other, \(server.requestCount) reached the server"
    failures += tally.other.prefix(3)
    return failures.isEmpty ? (true, summary) : (false, summary + "; " + failures.joined(separator: "; "))
}

/// `VmRSS` from `/proc/self/status`, in MB; `nil` where there is no such file.
func residentMegabytes() -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }.map { $0 / 1_024 }
    }
    return nil
}

/// See ``Scenario/slowStreamReader``.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private func slowStreamReader() async -> (Bool, String) {
    let total = 256 << 20
    let server: LoopbackServer
    do {
        server = try LoopbackServer { _ in
            .writer(headers: [ServerHeader(name: "Content-Type", value: "application/octet-stream")]) { writer in
                let chunk = Data(repeating: 0x61, count: 64 * 1_024)
                var sent = 0
                while sent < total, writer.send(chunk) { sent += chunk.count }
                return .finish
            }
        }
    } catch {
        return (false, "could not start the loopback server: \(error)")
    }
    defer { server.stop() }
    let client = NetworkClient(configuration: NetworkConfiguration(baseURL: server.baseURL))
    var read = 0
    var mostAhead = 0
    do {
        let response = try await client.run(NetworkRequest<VoidRequest, ByteStream>(path: "bytes", method: .get))
        for try await chunk in response.value {
            read += chunk.count
            mostAhead = max(mostAhead, server.bodyBytesSent - read)
            // About 64 MB/s: far slower than loopback.
            try await Task.sleep(for: .microseconds(chunk.count / 64))
            if read >= 32 << 20 { break }
        }
    } catch {
        return (false, "the stream failed after \(read) bytes: \(error)")
    }
    // Courier's buffer and a piece (at most 512 KiB from libcurl), the backlog after a moment in which the reader read
    // nothing; the kernel's loopback buffers (here up to 32 MiB of receive and 4 MiB of send buffer) on top.
    let bound =
        NetworkConfiguration.streamBufferCapacity + NetworkConfiguration.maximumStreamBacklog + (512 << 10) + (40 << 20)
    let summary =
        "read \(read >> 20) MiB of a \(total >> 20) MiB stream at about 64 MB/s; the server was at most "
        + "\(mostAhead >> 10) KiB ahead and sent \(server.bodyBytesSent >> 20) MiB"
    guard mostAhead < bound, server.bodyBytesSent < total / 2 else { return (false, summary) }
    return (true, summary)
}
