/// One client under test: what it runs, how many requests per chunk and with how many concurrent workers.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct Contender: Sendable {
    /// The name shown in the table, e.g. `raw URLSession` or `Courier`.
    let client: String
    /// The number of child tasks sending requests at the same time.
    let concurrency: Int
    /// The number of requests in one chunk (one side of one round).
    let requestsPerChunk: Int
    /// Sends request number `index` and decodes its response; throws on any failure.
    let operation: @Sendable (Int) async throws -> Void
}

/// Contenders measured against each other in interleaved rounds; the first is the baseline of the ratios.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct Comparison: Sendable {
    /// The name shown in the table, e.g. `small GET`.
    let scenario: String
    /// The baseline first, then the clients compared with it.
    let contenders: [Contender]
}

/// The measured rounds of one contender, plus its per-round ratios to the baseline.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct ContenderResult: Sendable {
    let scenario: String
    let contender: Contender
    /// One sample per measured round (the warm-up round is left out).
    let samples: [Sample]
    /// This contender's wall time over the baseline's, per measured round; empty for the baseline itself.
    let wallRatios: [Double]
    /// This contender's CPU time over the baseline's, per measured round; empty for the baseline itself.
    let cpuRatios: [Double]
}

/// Runs `comparison` for `rounds` rounds. Each round runs one chunk of every contender, one after the other; the
/// starting contender rotates from round to round, so no one always runs first. Round 0 is a warm-up and discarded.
/// - Parameter nextIndex: The first request index to use; advanced past every index used, so that request indices
///   (and so the URLs that carry them) are unique over the whole run.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func run(_ comparison: Comparison, rounds: Int, nextIndex: inout Int) async throws -> [ContenderResult] {
    let contenders = comparison.contenders
    var samples = Array(repeating: [Sample](), count: contenders.count)
    for round in 0..<rounds {
        var roundSamples = Array(repeating: Sample(wallSeconds: 0, cpuSeconds: 0), count: contenders.count)
        for step in 0..<contenders.count {
            let position = (round + step) % contenders.count
            let contender = contenders[position]
            let firstIndex = nextIndex
            nextIndex += contender.requestsPerChunk
            roundSamples[position] = try await measure {
                try await runChunk(
                    count: contender.requestsPerChunk, concurrency: contender.concurrency, firstIndex: firstIndex,
                    operation: contender.operation)
            }
        }
        if round > 0 {
            for position in contenders.indices { samples[position].append(roundSamples[position]) }
        }
    }
    return contenders.indices.map { position in
        let isBaseline = position == 0
        let pairs = zip(samples[position], samples[0])
        return ContenderResult(
            scenario: comparison.scenario, contender: contenders[position], samples: samples[position],
            wallRatios: isBaseline ? [] : pairs.map { $0.wallSeconds / $1.wallSeconds },
            cpuRatios: isBaseline ? [] : pairs.map { $0.cpuSeconds / $1.cpuSeconds })
    }
}
