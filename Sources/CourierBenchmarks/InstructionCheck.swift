import Foundation

/// `--check-instructions BASELINE`: the cost of one small GET through each client, counted by callgrind, as a
/// ratio to raw URLSession doing the same work, compared with a baseline file. Instruction counts are the stable
/// measure on noisy machines; wall time never fails a check.
///
/// Each client runs in a child process under `valgrind --tool=callgrind` (`--profile`), against the loopback server
/// running in this process, so that the server's instructions are not counted. The per-request cost is the slope
/// between a run of 0 requests (raw, or the test double for the rows over it) and a run of `count` requests.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
enum InstructionCheck {
    /// How far a ratio may rise above its baseline before the check fails: 2%.
    static let tolerance = 0.02

    /// Each checked client and the raw client it is compared with (the same session configuration).
    static let comparisons: [(client: Options.ProfileClient, against: Options.ProfileClient)] = [
        (.courier, .raw),
        (.courierOwnSession, .rawOwnSession),
        (.sequential, .raw),
        (.dedup, .raw),
        // Like for like: the authenticator's header costs corelibs the same in raw URLSession.
        (.resilient, .rawBearer),
        // A stream's opening and reading against raw URLSession reading the same response whole.
        (.courierEvent, .rawEvent),
        // A fresh ResponseCache hit (no network) against raw URLSession's small GET.
        (.courierCacheHit, .raw),
        // The decorators' own cost, over a test double that answers at once: no network, no corelibs thread, so the
        // count moves by a few hundred instructions between runs, not thousands: the 2% guard sees a decorator's change.
        (.dedupDouble, .double),
        (.resilientDouble, .double),
    ]

    /// Whether `client` runs over the test double (the double, or a row compared with it): its fixed cost (setup,
    /// warm-up) is the double's at 0 requests. Read from ``comparisons``, so that a new row over the double cannot be
    /// measured against raw's fixed cost by forgetting a second list.
    private static func overDouble(_ client: Options.ProfileClient) -> Bool {
        client == .double || comparisons.contains { $0.client == client && $0.against == .double }
    }

    /// Runs per measurement; the lowest count is kept. Thread scheduling adds instructions (more wake-ups, more
    /// polling) but never removes any, and the same binary measured twice differed by up to 1.4%: the minimum of two
    /// runs keeps a 2% threshold from failing on noise.
    static let runs = 2

    static func run(baselinePath: String, update: Bool, count: Int) async throws {
        let server = try Target.startServer()
        defer { server.stop() }
        let url = server.baseURL.absoluteString
        // Two valgrind children at a time (callgrind counts instructions, which the other core's load does not
        // change): half the wall time of the check.
        let clients = Set(comparisons.flatMap { [$0.client, $0.against] }).sorted(by: { $0.rawValue < $1.rawValue })
        let jobs = [(Options.ProfileClient.raw, 0), (.double, 0)] + clients.map { ($0, count) }
        let totals = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            var next = 0
            var totals: [Int: Int] = [:]
            func addJob() {
                guard next < jobs.count * runs else { return }
                let index = next
                next += 1
                let (client, requests) = jobs[index / runs]
                group.addTask { (index / runs, try callgrind(client, count: requests, url: url)) }
            }
            addJob()
            addJob()
            while let (job, total) = try await group.next() {
                totals[job] = min(totals[job] ?? .max, total)
                addJob()
            }
            return totals
        }
        var cost: [Options.ProfileClient: Double] = [:]
        for (index, client) in clients.enumerated() {
            let fixed = totals[overDouble(client) ? 1 : 0] ?? 0
            cost[client] = Double((totals[index + 2] ?? 0) - fixed) / Double(count)
        }
        var ratios: [String: Double] = [:]
        print("| client | instructions / request | compared with | ratio |")
        print("| --- | --: | --- | --: |")
        for (client, raw) in comparisons {
            guard let own = cost[client], let base = cost[raw] else { continue }
            let ratio = own / base
            ratios[client.rawValue] = ratio
            print(
                "| \(client.rawValue) | \(format(own / 1_000, digits: 1))k | \(raw.rawValue), "
                    + "\(format(base / 1_000, digits: 1))k | \(format(ratio, digits: 3)) |")
        }
        let baselineURL = URL(fileURLWithPath: baselinePath)
        if update {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(ratios).write(to: baselineURL)
            print("baseline written to \(baselinePath)")
            return
        }
        let baseline = try JSONDecoder().decode([String: Double].self, from: Data(contentsOf: baselineURL))
        var regressions: [String] = []
        for (name, ratio) in ratios.sorted(by: { $0.key < $1.key }) {
            guard let expected = baseline[name] else { continue }
            let limit = expected * (1 + tolerance)
            let verdict = ratio > limit ? "REGRESSION" : "ok"
            print(
                "\(name): \(format(ratio, digits: 3)) against a baseline of \(format(expected, digits: 3)) "
                    + "(limit \(format(limit, digits: 3))): \(verdict)")
            if ratio > limit { regressions.append(name) }
        }
        guard regressions.isEmpty else {
            throw BenchmarkError.badResponse(
                "instructions per request rose more than 2% for \(regressions.joined(separator: ", "))")
        }
    }

    /// The instructions callgrind counts for `--profile client --count count` in a child process.
    private static func callgrind(_ client: Options.ProfileClient, count: Int, url: String) throws -> Int {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let executable = Bundle.main.executablePath ?? CommandLine.arguments[0]
        process.arguments = [
            "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", executable, "--profile",
            client.rawValue, "--count", String(count), "--base-url", url,
        ]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let line = output.split(separator: "\n").first(where: { $0.contains("Collected :") }),
            let total = Int(line.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "")
        else {
            throw BenchmarkError.badResponse("callgrind run of \(client.rawValue) failed:\n\(output.suffix(2_000))")
        }
        return total
    }
}
