import Foundation

/// Writes `message` and a newline to standard error: progress and notes, kept out of the table or the JSON.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// Runs every scenario and prints the results: the table (or, with `--json`, the JSON array) on standard output.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func runBenchmark(_ options: Options) async throws {
    let rounds = options.effectiveRounds
    let plan = options.quick ? Plan.quick(rounds: rounds) : Plan.full(rounds: rounds)
    let machine = Machine.current()
    let target = try Target(externalBaseURL: options.baseURL)
    defer { target.shutDown() }
    let clients = Clients(target: target)
    let availability = try await probe(clients)

    let header = [
        "# Courier benchmark",
        "",
        "- Machine: \(machine.summary)",
        "- Server: \(target.description)",
        "- Rounds: \(rounds) per scenario, sides interleaved in rotating order; the first round is a discarded "
            + "warm-up, so every number is a median over \(rounds - 1) rounds.",
        "- Payloads: small object \(Fixtures.small.count) B, POST body \(PostBody.sample.encodedCount) B, "
            + "large array \(Fixtures.large.count) B (\(Fixtures.largeCount) items).",
        "- One ephemeral URLSession without a URLCache (default httpMaximumConnectionsPerHost): raw URLSession uses it, "
            + "and Courier runs on it (on Linux, on a session derived from its configuration).",
        "",
    ]
    if options.json {
        printError(header.joined(separator: "\n"))
    }

    let startedAt = ContinuousClock.now
    var rows: [ResultRow] = []
    var nextIndex = 0
    let planned = comparisons(clients, plan: plan, availability: availability)
    for (number, comparison) in planned.enumerated() {
        let started = ContinuousClock.now
        let results = try await run(comparison, rounds: plan.rounds, nextIndex: &nextIndex)
        let baseline = results.first?.contender.client
        rows += results.enumerated().map { position, result in
            ResultRow(result, baseline: position == 0 ? nil : baseline)
        }
        let concurrency = comparison.contenders.first?.concurrency ?? 0
        printError(
            "[\(number + 1)/\(planned.count)] \(comparison.scenario), concurrency \(concurrency): "
                + "\(seconds(since: started)) s")
        // The server keeps a log of recent requests; keep it short between scenarios.
        target.server?.resetStatistics()
    }
    if availability.slow {
        let started = ContinuousClock.now
        rows += ResultRow.fanOut(try await runFanOut(target: target, plan: plan))
        printError("[fan-out] \(plan.fanOutCalls) identical GETs: \(seconds(since: started)) s")
    }
    printError("total: \(seconds(since: startedAt)) s")

    let notes = footnotes(rows: rows, availability: availability, inProcessServer: target.server != nil)
    if options.json {
        print(try jsonArray(rows))
        printError(notes.joined(separator: "\n"))
    } else {
        print((header + [markdownTable(rows), ""] + notes).joined(separator: "\n"))
    }
}

/// The notes printed under the table.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private func footnotes(rows: [ResultRow], availability: Availability, inProcessServer inProcess: Bool) -> [String] {
    var notes = [
        "Notes:",
        "- wall ratio, CPU ratio: this row's time over the scenario's first row (the baseline) in the same round, "
            + "median over the rounds; below 1 is faster or cheaper than the baseline.",
        "- CPU ms/req is also CPU seconds per 1,000 requests: getrusage(RUSAGE_SELF), user + system, around each "
            + "chunk.",
    ]
    if inProcess {
        notes.append(
            "- The in-process server's threads count in that CPU time (and share the cores). To measure the client "
                + "alone, serve the fixtures with nginx: `--write-fixtures DIR`, then `--base-url`.")
    }
    if let fanOut = rows.last(where: { $0.requestsSent != nil }), let sent = fanOut.requestsSent {
        let received = fanOut.requestsReceivedByServer.map { ", the server received at most \($0)" } ?? ""
        notes.append(
            "- Fan-out: \(fanOut.requestsPerChunk) identical concurrent GETs of \(EndpointPath.slow) through "
                + ".deduplicated() sent at most \(sent) request(s) per round\(received); its wall ratio compares "
                + "the whole fan-out with one single request, its CPU ratio the fan-out's total CPU with the single "
                + "request's, and its req/s counts calls, not requests sent.")
    }
    notes += availability.notes.map { "- \($0)" }
    return notes
}

/// Whole seconds and tenths since `start`, e.g. `12.3`.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private func seconds(since start: ContinuousClock.Instant) -> String {
    let elapsed = ContinuousClock.now - start
    return format(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, digits: 1)
}

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
extension PostBody {
    /// The size of this value as JSON with a plain `JSONEncoder`.
    var encodedCount: Int {
        (try? JSONEncoder().encode(self).count) ?? 0
    }
}
