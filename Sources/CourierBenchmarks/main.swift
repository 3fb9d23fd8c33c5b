import Foundation

// CourierBenchmarks: raw URLSession against Courier, in one process, in interleaved rounds. See `Options.usage`.

let options: Options
do {
    options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    printError("\(error)")
    exit(2)
}

do {
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
        try await runProfile(client, count: count, target: target)
        target.shutDown()
    case .benchmark:
        try await runBenchmark(options)
    }
} catch {
    printError("error: \(error)")
    exit(1)
}
