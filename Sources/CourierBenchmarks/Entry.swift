import Foundation

/// Runs the mode `options` asks for in a task on the global executor, blocks the calling thread, and exits the
/// process with the mode's status when the task is done: 0 on success, 1 on any error.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func startAndWait(_ options: Options) -> Never {
    // Created in a nonisolated function, so the task does not inherit the main actor that this thread blocks.
    Task {
        let status: Int32
        do {
            try await run(options)
            status = 0
        } catch {
            printError("error: \(error)")
            status = 1
        }
        exit(status)
    }
    while true { DispatchSemaphore(value: 0).wait() }
}

/// Runs one mode of the command line.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private func run(_ options: Options) async throws {
    switch options.mode {
    case .help:
        print(Options.usage)
    case .writeFixtures(let directory):
        for path in try FixtureFiles.write(to: directory) { print(path) }
    case .serve:
        let server = try Target.startServer()
        // Unbuffered, so that a script reading the URL from a pipe sees it at once.
        FileHandle.standardOutput.write(Data((server.baseURL.absoluteString + "\n").utf8))
        while true { try await Task.sleep(for: .seconds(3_600)) }
    case .profile(let client, let count):
        let target = try Target(externalBaseURL: options.baseURL)
        defer { target.shutDown() }
        try await runProfile(client, count: count, waiters: options.waiters, target: target)
    case .benchmark:
        try await runBenchmark(options)
    case .memory(let scenario):
        try await runMemory(scenario)
    case .checkInstructions(let baseline, let update, let count):
        try await InstructionCheck.run(baselinePath: baseline, update: update, count: count)
    case .outbox:
        try await runOutboxBenchmark(rounds: options.rounds ?? (options.quick ? 1 : 5))
    case .cache:
        try await runCacheBenchmark(
            rounds: options.rounds ?? (options.quick ? 3 : 7), quick: options.quick, baseURL: options.baseURL)
    case .serveTransfers:
        let server = try TransferServer.start()
        FileHandle.standardOutput.write(Data((server.baseURL.absoluteString + "\n").utf8))
        try await TransferServer.serveUntilStandardInputCloses()
    case .transfer(let scenario):
        try await runTransfer(
            scenario, size: options.size ?? TransferDriver.defaultSize, baseURL: options.baseURL, json: options.json)
    case .streams:
        try await StreamBenchmark.runEvents(
            count: options.count ?? (options.quick ? 100_000 : 1_000_000),
            rounds: options.rounds ?? (options.quick ? 3 : 5))
    case .streamMemory:
        try await StreamBenchmark.runMemory(size: options.size ?? 1 << 30)
    case .transfers:
        try await TransferDriver.run(
            size: options.size ?? TransferDriver.defaultSize, rounds: options.rounds ?? TransferDriver.defaultRounds,
            json: options.json)
    }
}
