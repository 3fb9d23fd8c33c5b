import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `--transfers`: every transfer scenario in its own child process (`--transfer`), against the transfer server in
/// another child process (`--serve-transfers`), in interleaved Courier/raw groups for `rounds` rounds; prints the
/// median and range of peak RSS and wall time per scenario and the Courier/raw wall ratios (medians of per-round
/// ratios). Fails when a transfer fails or its bytes do not match; never on timing.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
enum TransferDriver {
    /// The default payload: 200 MiB.
    static let defaultSize = 209_715_200
    /// The default number of rounds.
    static let defaultRounds = 5

    /// The groups run back to back in each round: a Courier scenario first, then the raw ones it is compared with.
    /// The order inside a group is reversed every other round.
    static let groups: [[TransferScenario]] = [
        [.courierDownload, .rawDownload],
        [.courierUpload, .rawUpload, .rawUploadDelegate],
        [.courierMultipart, .rawMultipart, .rawMultipartStaged],
    ]

    /// The ratios reported: Courier's wall time over the raw scenario's, round by round.
    static let pairs: [(courier: TransferScenario, raw: TransferScenario)] = [
        (.courierDownload, .rawDownload),
        (.courierUpload, .rawUpload),
        (.courierUpload, .rawUploadDelegate),
        (.courierMultipart, .rawMultipart),
        (.courierMultipart, .rawMultipartStaged),
    ]

    static func run(size: Int, rounds: Int, json: Bool) async throws {
        let machine = Machine.current()
        let loadBefore = loadAverage()
        let server = try TransferServerProcess()
        defer { server.stop() }
        printError(
            "transfers: \(size) bytes, \(rounds) rounds, server \(server.baseURL) (pid of its own), "
                + "load average \(loadBefore)")
        let started = ContinuousClock.now
        var results: [TransferScenario: [TransferResult]] = [:]
        for round in 0..<rounds {
            for group in groups {
                for scenario in round % 2 == 0 ? group : group.reversed() {
                    let result = try runChild(scenario, size: size, baseURL: server.baseURL)
                    printError("[round \(round + 1)/\(rounds)] \(result.line)")
                    results[scenario, default: []].append(result)
                }
            }
        }
        let loadAfter = loadAverage()
        let report = TransferReport(
            size: size, rounds: rounds, machine: machine.summary, loadAverageBefore: loadBefore,
            loadAverageAfter: loadAfter, results: results)
        printError("total: \(seconds(since: started)) s, load average \(loadAfter)")
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            print(report.markdown)
        }
    }

    /// Runs `--transfer scenario` in a child process and reads its JSON line.
    private static func runChild(_ scenario: TransferScenario, size: Int, baseURL: String) throws -> TransferResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: currentExecutablePath())
        process.arguments = [
            "--transfer", scenario.rawValue, "--size", String(size), "--base-url", baseURL, "--json",
        ]
        process.standardInput = FileHandle.nullDevice
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchmarkError.badResponse(
                "\(scenario.rawValue) failed (exit status \(process.terminationStatus)); its error is above")
        }
        do {
            return try JSONDecoder().decode(TransferResult.self, from: data)
        } catch {
            throw BenchmarkError.badResponse(
                "\(scenario.rawValue) printed no result: \(String(decoding: data.prefix(500), as: UTF8.self))")
        }
    }

    /// The 1, 5 and 15 minute load averages, as `uptime` prints them.
    static func loadAverage() -> String {
        var loads = [Double](repeating: 0, count: 3)
        guard getloadavg(&loads, 3) == 3 else { return "unknown" }
        return loads.map { format($0, digits: 2) }.joined(separator: ", ")
    }
}

/// The figures of `--transfers`, as a table or as JSON.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct TransferReport: Encodable {
    /// The median and range of one measure over the rounds.
    struct Spread: Encodable {
        let median: Double
        let minimum: Double
        let maximum: Double

        init(_ values: [Double]) {
            median = CourierBenchmarks.median(values)
            minimum = values.min() ?? .nan
            maximum = values.max() ?? .nan
        }

        func text(digits: Int) -> String {
            "\(format(median, digits: digits)) (\(format(minimum, digits: digits))–\(format(maximum, digits: digits)))"
        }
    }

    struct Row: Encodable {
        let scenario: String
        let bodyBytes: Int
        let peakResidentMB: Spread
        let wallSeconds: Spread
        /// The client process's CPU seconds during the transfer.
        let cpuSeconds: Spread
        /// Body megabytes (10^6) per second at the median wall time.
        let megabytesPerSecond: Double
    }

    struct Ratio: Encodable {
        let courier: String
        let raw: String
        /// Courier's wall time over raw's, round by round.
        let wallRatio: Spread
        /// Courier's CPU time over raw's, round by round.
        let cpuRatio: Spread
        /// Courier's median peak RSS minus raw's, in MB.
        let peakResidentDifferenceMB: Double
    }

    let size: Int
    let rounds: Int
    let machine: String
    let loadAverageBefore: String
    let loadAverageAfter: String
    let rows: [Row]
    let ratios: [Ratio]

    init(
        size: Int, rounds: Int, machine: String, loadAverageBefore: String, loadAverageAfter: String,
        results: [TransferScenario: [TransferResult]]
    ) {
        self.size = size
        self.rounds = rounds
        self.machine = machine
        self.loadAverageBefore = loadAverageBefore
        self.loadAverageAfter = loadAverageAfter
        rows = TransferDriver.groups.joined().compactMap { scenario in
            guard let runs = results[scenario], let first = runs.first else { return nil }
            let wall = Spread(runs.map(\.wallSeconds))
            return Row(
                scenario: scenario.rawValue, bodyBytes: first.bodyBytes,
                peakResidentMB: Spread(runs.map { Double($0.peakResidentBytes) / 1e6 }), wallSeconds: wall,
                cpuSeconds: Spread(runs.map(\.cpuSeconds)),
                megabytesPerSecond: Double(first.bodyBytes) / wall.median / 1e6)
        }
        ratios = TransferDriver.pairs.compactMap { pair in
            guard let courier = results[pair.courier], let raw = results[pair.raw] else { return nil }
            let perRound = zip(courier, raw).map { $0.wallSeconds / $1.wallSeconds }
            let cpuPerRound = zip(courier, raw).map { $0.cpuSeconds / $1.cpuSeconds }
            let peak = { (runs: [TransferResult]) in median(runs.map { Double($0.peakResidentBytes) / 1e6 }) }
            return Ratio(
                courier: pair.courier.rawValue, raw: pair.raw.rawValue, wallRatio: Spread(perRound),
                cpuRatio: Spread(cpuPerRound),
                peakResidentDifferenceMB: peak(courier) - peak(raw))
        }
    }

    var markdown: String {
        var lines = [
            "# Courier transfers: \(size) bytes (\(format(Double(size) / 1_048_576, digits: 1)) MiB)",
            "",
            "- Machine: \(machine); load average (1, 5, 15 min) \(loadAverageBefore) before, \(loadAverageAfter) after.",
            "- Each transfer in its own process (peak RSS from getrusage, the whole process, Foundation included), the "
                + "server in another; \(rounds) rounds, Courier and raw interleaved, order reversed every other round.",
            "- Medians, with the range over the rounds in parentheses. MB = 10^6 bytes.",
            "",
            "| scenario | peak RSS, MB | wall, s | MB/s | client CPU, s |",
            "| --- | --: | --: | --: | --: |",
        ]
        for row in rows {
            lines.append(
                "| \(row.scenario) | \(row.peakResidentMB.text(digits: 1)) | \(row.wallSeconds.text(digits: 3)) | "
                    + "\(format(row.megabytesPerSecond, digits: 0)) | \(row.cpuSeconds.text(digits: 3)) |")
        }
        lines += [
            "",
            "| Courier / raw | wall ratio (median of per-round ratios) | CPU ratio | peak RSS difference, MB |",
            "| --- | --: | --: | --: |",
        ]
        for ratio in ratios {
            let difference = ratio.peakResidentDifferenceMB
            lines.append(
                "| \(ratio.courier) / \(ratio.raw) | \(ratio.wallRatio.text(digits: 3)) | "
                    + "\(ratio.cpuRatio.text(digits: 3)) | \(difference >= 0 ? "+" : "")\(format(difference, digits: 1)) |"
            )
        }
        return lines.joined(separator: "\n")
    }
}

/// Whole seconds since `start`, for progress lines.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private func seconds(since start: ContinuousClock.Instant) -> String {
    format(Double((ContinuousClock.now - start).components.seconds), digits: 0)
}
