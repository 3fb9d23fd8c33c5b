import Foundation

/// One line of the results: one client in one scenario, summarised over the measured rounds.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct ResultRow: Codable, Sendable {
    let scenario: String
    let client: String
    let concurrency: Int
    let requestsPerChunk: Int
    let measuredRounds: Int
    /// The median wall time of one chunk.
    let medianWallSeconds: Double
    /// `requestsPerChunk / medianWallSeconds`.
    let requestsPerSecond: Double
    /// The median CPU time of a chunk per request, in ms: the same number as CPU seconds per 1,000 requests.
    let cpuMillisecondsPerRequest: Double
    /// The client the ratios compare with; `nil` on the baseline's own row.
    let baseline: String?
    /// The median of the per-round ratios of wall time, this client over the baseline.
    let wallRatio: Double?
    /// The smallest and largest per-round wall ratio: how much the rounds disagree.
    let wallRatioMin: Double?
    let wallRatioMax: Double?
    /// The median of the per-round ratios of CPU time, this client over the baseline.
    let cpuRatio: Double?
    /// Fan-out only: the most requests that left the client in one fan-out (counted under the dedup layer).
    let requestsSent: Int?
    /// Fan-out only, in-process server: the most requests the server received in one fan-out.
    let requestsReceivedByServer: Int?

    /// The row of a contender of a ``Comparison``.
    init(_ result: ContenderResult, baseline: String?) {
        self.init(
            scenario: result.scenario, client: result.contender.client, concurrency: result.contender.concurrency,
            requestsPerChunk: result.contender.requestsPerChunk, samples: result.samples, baseline: baseline,
            wallRatios: result.wallRatios, cpuRatios: result.cpuRatios)
    }

    private init(
        scenario: String, client: String, concurrency: Int, requestsPerChunk: Int, samples: [Sample],
        baseline: String?, wallRatios: [Double], cpuRatios: [Double], requestsSent: Int? = nil,
        requestsReceivedByServer: Int? = nil
    ) {
        self.scenario = scenario
        self.client = client
        self.concurrency = concurrency
        self.requestsPerChunk = requestsPerChunk
        measuredRounds = samples.count
        medianWallSeconds = median(samples.map(\.wallSeconds))
        requestsPerSecond = Double(requestsPerChunk) / medianWallSeconds
        cpuMillisecondsPerRequest = median(samples.map(\.cpuSeconds)) / Double(requestsPerChunk) * 1_000
        self.baseline = baseline
        wallRatio = wallRatios.isEmpty ? nil : median(wallRatios)
        wallRatioMin = wallRatios.min()
        wallRatioMax = wallRatios.max()
        cpuRatio = cpuRatios.isEmpty ? nil : median(cpuRatios)
        self.requestsSent = requestsSent
        self.requestsReceivedByServer = requestsReceivedByServer
    }

    /// The two rows of the fan-out: the single request (the baseline) and the deduplicated fan-out.
    static func fanOut(_ result: FanOutResult) -> [ResultRow] {
        let scenario = "dedup fan-out, 50 ms endpoint"
        let single = "single Courier GET"
        let pairs = zip(result.fanOut, result.single)
        return [
            ResultRow(
                scenario: scenario, client: single, concurrency: 1, requestsPerChunk: 1, samples: result.single,
                baseline: nil, wallRatios: [], cpuRatios: []),
            ResultRow(
                scenario: scenario, client: "\(result.calls) × Courier .deduplicated()", concurrency: result.calls,
                requestsPerChunk: result.calls, samples: result.fanOut, baseline: single,
                wallRatios: pairs.map { $0.wallSeconds / $1.wallSeconds },
                cpuRatios: pairs.map { $0.cpuSeconds / $1.cpuSeconds }, requestsSent: result.sent.max(),
                requestsReceivedByServer: result.received?.max()),
        ]
    }
}

/// Renders rows as a Markdown table with aligned columns.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func markdownTable(_ rows: [ResultRow]) -> String {
    let header = [
        "scenario", "client", "concurrency", "req/chunk", "wall s/chunk", "req/s", "wall ratio", "CPU ms/req",
        "CPU ratio",
    ]
    let rightAligned = Set(2..<header.count)
    let cells: [[String]] = rows.map { row in
        [
            row.scenario, row.client, String(row.concurrency), String(row.requestsPerChunk),
            format(row.medianWallSeconds, digits: 4), format(row.requestsPerSecond, digits: 0),
            row.wallRatio.map { format($0, digits: 3) } ?? "1 (base)", format(row.cpuMillisecondsPerRequest, digits: 3),
            row.cpuRatio.map { format($0, digits: 3) } ?? "1 (base)",
        ]
    }
    let widths = header.indices.map { column in
        ([header[column]] + cells.map { $0[column] }).map(\.count).max() ?? 0
    }
    func line(_ values: [String]) -> String {
        let padded = values.enumerated().map { column, value in
            let padding = String(repeating: " ", count: widths[column] - value.count)
            return rightAligned.contains(column) ? padding + value : value + padding
        }
        return "| " + padded.joined(separator: " | ") + " |"
    }
    let rule = widths.indices.map { column in
        "-" + String(repeating: "-", count: widths[column]) + (rightAligned.contains(column) ? ":" : "-")
    }
    return ([line(header), "|" + rule.joined(separator: "|") + "|"] + cells.map(line)).joined(separator: "\n")
}

/// Renders rows as a pretty-printed JSON array.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func jsonArray(_ rows: [ResultRow]) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    encoder.nonConformingFloatEncodingStrategy = .convertToString(
        positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
    return String(decoding: try encoder.encode(rows), as: UTF8.self)
}

/// `value` with `digits` decimals.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func format(_ value: Double, digits: Int) -> String {
    String(format: "%.\(digits)f", value)
}
