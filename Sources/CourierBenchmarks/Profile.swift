import Foundation

/// The `--profile` loop: warm-up requests, then `count` small GETs one after the other through one client.
///
/// Run it under `valgrind --tool=callgrind` for two counts (e.g. 0 and 2000): the difference of the instruction
/// totals divided by the difference of the counts is the steady-state cost of one request. The warm-up makes the
/// connection and the lazy one-time setup part of the fixed cost.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func runProfile(_ client: Options.ProfileClient, count: Int, waiters: Int, target: Target) async throws {
    let clients = Clients(target: target)
    let operation: @Sendable (Int) async throws -> Void =
        switch client {
        case .raw: { [raw = clients.raw] in try await raw.small($0) }
        case .rawNoAccept: { [raw = clients.raw] in try await raw.smallWithoutHeaders($0) }
        case .courier: { [courier = clients.courier] in try await courier.small($0) }
        case .dedup: { [deduplicated = clients.deduplicated] in try await deduplicated.small($0) }
        case .sequential: { [sequential = clients.sequential] in try await sequential.small($0) }
        case .rawOwnSession: { [raw = clients.rawOwnSession] in try await raw.small($0) }
        case .courierOwnSession: { [courier = clients.courierOwnSession] in try await courier.small($0) }
        case .courierBearer: { [courier = clients.courierBearer] in try await courier.small($0) }
        case .rawBearer: { [raw = clients.rawBearer] in try await raw.small($0) }
        case .rawEvent: { [raw = clients.raw] in try await raw.event($0) }
        case .courierEvent: { [courier = clients.courier] in try await courier.event($0) }
        case .courierCacheHit: { [cached = clients.courierCached] _ in try await cached.cached() }
        case .dedupWaiters:
            { [deduplicated = clients.deduplicated] index in
                // `waiters` identical calls at once: the first runs it, the others wait for its outcome.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<waiters { group.addTask { try await deduplicated.slower(index) } }
                    try await group.waitForAll()
                }
            }
        case .resilient: { [resilient = clients.resilient] in try await resilient.small($0) }
        case .resilientNoDedup: { [resilient = clients.resilientNoDedup] in try await resilient.small($0) }
        case .double: { [double = clients.double] in try await double.small($0) }
        case .dedupDouble: { [deduplicated = clients.dedupDouble] in try await deduplicated.small($0) }
        case .resilientDouble: { [resilient = clients.resilientDouble] in try await resilient.small($0) }
        }
    // A round of dedup-waiters waits a second for the server: one warms up as well as twenty.
    let warmUp = client == .dedupWaiters ? 1 : 20
    try await runChunk(count: warmUp, concurrency: 1, firstIndex: 0, operation: operation)
    let switchesBefore = contextSwitches()
    let sample = try await measure {
        try await runChunk(count: count, concurrency: 1, firstIndex: warmUp, operation: operation)
    }
    let switches = contextSwitches()
    let perRequest = count > 0 ? format(sample.cpuSeconds / Double(count) * 1_000, digits: 3) : "-"
    if count > 0 {
        // Every thread of the process: the client's, corelibs' work queue's, the cooperative pool's.
        printError(
            "profile \(client.rawValue): context switches per request: "
                + "\(format(Double(switches.voluntary - switchesBefore.voluntary) / Double(count), digits: 2)) voluntary, "
                + "\(format(Double(switches.involuntary - switchesBefore.involuntary) / Double(count), digits: 2)) "
                + "involuntary")
    }
    if client == .resilient || client == .resilientNoDedup {
        printError("profile \(client.rawValue): \(clients.logBytes.lines) log lines, \(clients.logBytes.bytes) bytes")
    }
    printError(
        "profile \(client.rawValue): \(count) requests in \(format(sample.wallSeconds, digits: 3)) s, "
            + "\(perRequest) CPU ms/request")
}

/// The context switches of every thread of this process so far (`getrusage(RUSAGE_SELF)`): voluntary (a thread
/// waited: a lock, a condition, an empty queue) and involuntary (it was preempted).
func contextSwitches() -> (voluntary: Int, involuntary: Int) {
    guard let usage = processUsage() else { return (0, 0) }
    return (Int(usage.ru_nvcsw), Int(usage.ru_nivcsw))
}
