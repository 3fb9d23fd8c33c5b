import Foundation
import LoopbackHTTPServer
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("Outbox crash")
struct OutboxCrashTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "SIGKILL at random moments: every acknowledged entry arrives, in order per key, handled; duplicates only from kills"
    )
    func killAndRestart() async throws {
        // About 35 MB of bodies cross the in-process server: not beside the soak's memory figure.
        try await MemoryHeavyTests.exclusively { try await Self.killAndRestartRun() }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    private static func killAndRestartRun() async throws {
        let child = try builtExecutable(named: "OutboxCrashChild")
        let entries = 1_000
        let workers = 8
        let kills = 12
        let concurrentSends = 4  // Outbox.Limits().maximumConcurrentSends, the child's setting.
        var generator = SplitMix64(seed: 0x0B0C)
        // About one request in twenty fails with a 503, so retries happen around the kills too.
        let server = try LoopbackServer { request in
            request.sequenceNumber % 20 == 7 ? .respond(status: 503) : .respond(status: 201)
        }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("courier-crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let ackFile = work.appendingPathComponent("acks.txt").path
        let handledFile = work.appendingPathComponent("handled.txt").path
        let outboxDirectory = work.appendingPathComponent("outbox").path
        let traceFile = work.appendingPathComponent("trace.txt").path

        let childLogPath = work.appendingPathComponent("child-stderr.txt").path
        _ = FileManager.default.createFile(atPath: childLogPath, contents: nil)
        let childLog = try FileHandle(forWritingTo: URL(fileURLWithPath: childLogPath))
        defer { try? childLog.close() }
        func launch() throws -> Process {
            let process = Process()
            process.executableURL = child
            process.arguments = [
                outboxDirectory, server.baseURL.absoluteString, ackFile, handledFile, "\(entries)", "\(workers)", "7",
                traceFile,
            ]
            // A file, not the test's pipe: a child that writes much must never block on a full pipe.
            process.standardOutput = FileHandle.nullDevice
            process.standardError = childLog
            process.standardInput = FileHandle.nullDevice
            try startChild(process)
            return process
        }

        let clock = ContinuousClock()
        let start = clock.now
        var killed = 0
        var runs = 0
        while killed < kills {
            await fewDescriptorsOpen()
            let process = try launch()
            runs += 1
            // A random moment: early ones land during start-up and replay, later ones during enqueues and sends.
            let delay = Int.random(in: 60...400, using: &generator)
            try await Task.sleep(for: .milliseconds(delay))
            let wasRunning = process.isRunning
            if wasRunning {
                kill(process.processIdentifier, SIGKILL)
                killed += 1
            }
            process.waitUntilExit()
            // A run that finished by itself found everything acknowledged and drained: no later run has anything left
            // to kill, and waiting for more kills would relaunch children for ever.
            if !wasRunning, process.terminationReason == .exit, process.terminationStatus == 0 { break }
        }
        await fewDescriptorsOpen()
        let final = try launch()
        runs += 1
        let drained = await eventually(timeout: .seconds(90)) { !final.isRunning }
        if !drained { kill(final.processIdentifier, SIGKILL) }
        final.waitUntilExit()
        let duration = clock.now - start
        let stderrTail = String(
            decoding: (FileManager.default.contents(atPath: childLogPath) ?? Data()).suffix(2_000), as: UTF8.self)
        #expect(drained, "the last run did not drain within 90 s; its stderr ends with: \(stderrTail)")
        #expect(final.terminationStatus == 0)

        func lines(_ path: String) -> [String] {
            ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        let acknowledged = lines(ackFile)
        let handled = Set(lines(handledFile))
        #expect(Set(acknowledged).count == entries)

        // What reached the server, in arrival order.
        let arrivals = server.recordedRequests.compactMap { request -> (key: String, ok: Bool)? in
            request.header("Idempotency-Key").map { ($0, request.sequenceNumber % 20 != 7) }
        }
        var delivered: [String: Int] = [:]
        var firstArrival: [String] = []
        var seen: Set<String> = []
        for arrival in arrivals {
            if arrival.ok { delivered[arrival.key, default: 0] += 1 }
            if seen.insert(arrival.key).inserted { firstArrival.append(arrival.key) }
        }
        let missing = acknowledged.filter { delivered[$0] == nil }
        #expect(missing.isEmpty, "acknowledged but never delivered: \(missing.prefix(10))")
        let unhandled = acknowledged.filter { !handled.contains($0) }
        #expect(unhandled.isEmpty, "acknowledged but never handled: \(unhandled.prefix(10))")

        // First arrivals per ordering key (worker) follow enqueue order.
        var violations = 0
        for worker in 0..<workers {
            let order = firstArrival.filter { $0.hasPrefix("\(worker)-") }.compactMap {
                Int($0.split(separator: "-")[1])
            }
            violations += zip(order, order.dropFirst()).filter { $0 >= $1 }.count
        }
        #expect(violations == 0)

        // In flight at a kill: in a run that was killed, an enqueue that had not returned, or an entry attempted and
        // not yet finished on disk.
        var inFlight: Set<String> = []
        var runTrace: [Substring] = []
        func closeRun() {
            var open: Set<Substring> = []
            for line in runTrace {
                let parts = line.split(separator: " ", maxSplits: 1)
                guard parts.count == 2 else { continue }
                switch parts[0] {
                case "E", "T": open.insert(parts[1])
                case "A", "D": open.remove(parts[1])
                default: break
                }
            }
            inFlight.formUnion(open.map(String.init))
        }
        let traceLines = lines(traceFile)
        let lastStart = traceLines.lastIndex(of: "S") ?? traceLines.endIndex
        for line in traceLines[..<lastStart] {
            if line == "S" {
                closeRun()
                runTrace = []
            } else {
                runTrace.append(Substring(line))
            }
        }
        closeRun()
        // Duplicates only for entries in flight at a kill, and at most the entries being sent at each kill.
        let duplicated = Set(delivered.filter { $0.value > 1 }.keys)
        #expect(duplicated.isSubset(of: inFlight), "duplicated, not in flight: \(duplicated.subtracting(inFlight))")
        let duplicates = duplicated.count
        let extraCopies = delivered.values.reduce(0) { $0 + max(0, $1 - 1) }
        #expect(duplicates <= killed * concurrentSends)
        // No credential on disk, from the interceptor's token.
        let bytes = everyByte(under: URL(fileURLWithPath: outboxDirectory))
        #expect(bytes.range(of: Data("crash-test-token".utf8)) == nil)
        let quarantined =
            (try? FileManager.default.contentsOfDirectory(atPath: outboxDirectory + "/quarantine").count) ?? 0
        print(
            "Outbox crash test: \(killed) kills, \(runs) runs, \(acknowledged.count) acknowledged, "
                + "\(delivered.count) keys delivered, \(arrivals.count) requests (\(arrivals.filter { !$0.ok }.count) "
                + "answered 503), \(duplicates) entries duplicated (\(extraCopies) extra copies), "
                + "\(inFlight.count) in flight at the kills, \(violations) order violations, \(handled.count) handled, \(quarantined) files quarantined, "
                + "\(duration)")
    }
}
