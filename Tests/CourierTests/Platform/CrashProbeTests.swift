import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Calls that can trap the whole process in corelibs Foundation, each run in a child process (`CourierProbe`) so that
/// a trap fails one test instead of ending the test run. Serialized: the mass-cancellation scenarios keep both cores
/// busy for several seconds. Their delays are seeded: `COURIER_TEST_SEED` repeats a run (the seed is in the output).
@Suite("Crash probes", .serialized)
struct CrashProbeTests {
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("A request timeoutInterval or totalTimeout of 1e300 (or infinity) does not trap")
    func hugeRequestTimeout() async throws {
        try await expectProbe("huge-request-timeout", timeLimit: .seconds(60))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("Session configurations with infinite, NaN or 1e300 timeouts work")
    func sessionConfigurationTimeouts() async throws {
        try await expectProbe("session-config-timeouts", timeLimit: .seconds(60))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("The caller's code on Courier's session and in onProgress may call URLSession synchronously")
    func callersCode() async throws {
        try await expectProbe("callers-code", timeLimit: .seconds(60))
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("5,000 requests cancelled at random with NetworkConfiguration(baseURL:) end in success or cancellation")
    func massCancelDefault() async throws {
        try await MemoryHeavyTests.exclusively {
            try await expectProbe("mass-cancel-default", arguments: massCancelArguments, timeLimit: .seconds(240))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test(
        "1,000 streams opened and ended at random (cancelled, broken off, dropped, read) leave no stream open, no leak")
    func massCancelStreams() async throws {
        let seed = InputEncodingTests.seed(default: 2_026)
        try await MemoryHeavyTests.exclusively {
            try await expectProbe(
                "mass-cancel-streams", arguments: ["--seed", "\(seed)", "--count", "1000"], timeLimit: .seconds(240))
        }
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("5,000 requests cancelled at random with URLSession.shared end in success or cancellation")
    func massCancelShared() async throws {
        try await MemoryHeavyTests.exclusively {
            try await expectProbe("mass-cancel-shared", arguments: massCancelArguments, timeLimit: .seconds(240))
        }
    }

    /// With corelibs' `uploadTask(fromFile:)` this probe trapped in every run (`_EasyHandle._PauseState.setState`, a
    /// `try!` on CURLE_BAD_FUNCTION_ARGUMENT, when its file reader unpauses a cancelled transfer); Courier sends file
    /// bodies from a stream on Linux instead. About 0.6 s; the probe's own deadline (30 s) turns a hang into a failure.
    @available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
    @Test("160 file uploads, cancelled 0-20 ms in or refused at once with a 413, end without a trap or a hang")
    func cancelledUploads() async throws {
        let seed = InputEncodingTests.seed(default: 2_026)
        let arguments = ["--seed", "\(seed)", "--count", "160", "--time-limit", "30"]
        let outcome = try await MemoryHeavyTests.exclusively {
            try await runProbe("cancelled-uploads", arguments: arguments, timeLimit: .seconds(60))
        }
        // Plain Booleans, so that a failed expectation does not print the whole crash report a second time.
        let behaved = outcome.behaved
        let summarized = outcome.output.contains("cancelled-uploads: ok: 160 uploads (seed \(seed)):")
        #expect(behaved, "CourierProbe cancelled-uploads \(outcome.ending)\n\(outcome.excerpt)")
        #expect(!behaved || summarized, "CourierProbe cancelled-uploads printed no summary:\n\(outcome.excerpt)")
    }
}

/// The seed (`COURIER_TEST_SEED`, to repeat a run) and the count of the mass-cancellation probes: 5,000 calls, or
/// 1,000 under the thread sanitizer, where the instrumented probe is several times slower and would starve the timing
/// tests that run beside it (the plain run keeps the 5,000 that made corelibs' shared session crash every time).
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private var massCancelArguments: [String] {
    let seed = InputEncodingTests.seed(default: 2_026)
    return ["--seed", "\(seed)", "--count", isThreadSanitized ? "1000" : "5000"]
}

/// Whether this process runs under the thread sanitizer (its runtime is linked in).
private let isThreadSanitized: Bool = {
    #if canImport(Glibc)
    return dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil  // RTLD_DEFAULT
    #else
    return dlsym(UnsafeMutableRawPointer(bitPattern: -2), "__tsan_init") != nil  // RTLD_DEFAULT on Darwin
    #endif
}()

/// Runs `CourierProbe <scenario>` and records an issue unless it exits with status 0 within `timeLimit`; the
/// probe's output (its one-line result, or the crash report) is part of the issue.
/// - Parameter reachableByAnyUser: Runs a copy of the probe from a folder every user can enter: for a scenario that
///   drops its privileges, which would otherwise lose the way to its own executable when the checkout sits in a folder
///   only its owner may enter (`/root`, mode 0700: Foundation then traps looking up its main bundle).
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func expectProbe(
    _ scenario: String, arguments: [String] = [], timeLimit: Duration, reachableByAnyUser: Bool = false,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let outcome = try await runProbe(
        scenario, arguments: arguments, timeLimit: timeLimit, reachableByAnyUser: reachableByAnyUser)
    let behaved = outcome.behaved
    #expect(
        behaved,
        "CourierProbe \(scenario) \(outcome.ending)\n\(outcome.excerpt)", sourceLocation: sourceLocation)
}

/// How a `CourierProbe` run ended.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct ProbeOutcome: Sendable {
    /// The exit status, or the signal number when `signaled`.
    let status: Int32
    /// Whether the process was ended by a signal (a trap is SIGILL or SIGTRAP).
    let signaled: Bool
    /// Whether the helper killed it for running past the time limit.
    let timedOut: Bool
    /// Standard output and standard error, interleaved.
    let output: String

    var behaved: Bool {
        !signaled && !timedOut && status == 0
    }

    var ending: String {
        if timedOut { return "did not finish in time and was killed" }
        return signaled ? "was killed by signal \(status) (a crash)" : "exited with status \(status)"
    }

    /// The output, without the bulk of a crash report's thread list.
    var excerpt: String {
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count > 40 else { return output }
        return (lines.prefix(30) + ["[… \(lines.count - 40) lines …]"] + lines.suffix(10)).joined(separator: "\n")
    }
}

/// The error thrown when the probe executable cannot be found or started.
struct ProbeUnavailable: Error, CustomStringConvertible {
    let description: String
}

/// The `CourierProbe` executable that `swift build` put next to the test bundle (`COURIER_PROBE` overrides it).
func probeExecutable() throws -> URL {
    if let path = ProcessInfo.processInfo.environment["COURIER_PROBE"] { return URL(fileURLWithPath: path) }
    return try builtExecutable(named: "CourierProbe")
}

/// An executable target of this package (`CourierProbe`, `OutboxCrashChild`) that `swift build` put next to the
/// test bundle; the tests depend on those targets so that `swift test` builds them.
func builtExecutable(named name: String) throws -> URL {
    var candidates: [URL] = []
    // Linux: the test bundle is the executable itself (…/debug/CourierPackageTests.xctest). macOS: a bundle loaded
    // by xctest or swiftpm-testing-helper, inside the same directory.
    candidates += Bundle.allBundles.map(\.bundleURL).filter { $0.pathExtension == "xctest" }
    if let executable = Bundle.main.executableURL { candidates.append(executable) }
    candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]))
    for candidate in candidates {
        var directory = candidate.deletingLastPathComponent()
        // Leave any bundle the path is inside of (…/X.xctest/Contents/MacOS/X).
        while directory.path.contains(".xctest") && directory.path != "/" {
            directory = directory.deletingLastPathComponent()
        }
        let executable = directory.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: executable.path) { return executable }
    }
    throw ProbeUnavailable(description: "\(name) not found next to \(candidates.map(\.path)); run swift build")
}

/// Runs the probe as a child process, killing it if it runs past `timeLimit`; from a copy in a folder every user can
/// enter when `reachableByAnyUser` (see ``expectProbe(_:arguments:timeLimit:reachableByAnyUser:sourceLocation:)``).
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func runProbe(
    _ scenario: String, arguments: [String] = [], timeLimit: Duration, reachableByAnyUser: Bool = false
) async throws -> ProbeOutcome {
    var executable = try probeExecutable()
    if reachableByAnyUser {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("CourierProbe-copy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let copy = folder.appendingPathComponent(executable.lastPathComponent)
        try FileManager.default.copyItem(at: executable, to: copy)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: copy.path)
        executable = copy
    }
    defer { if reachableByAnyUser { try? FileManager.default.removeItem(at: executable.deletingLastPathComponent()) } }
    let outputURL = FileManager.default.temporaryDirectory
        .appendingPathComponent("CourierProbe-\(scenario)-\(UUID().uuidString).log")
    guard FileManager.default.createFile(atPath: outputURL.path, contents: nil) else {
        throw ProbeUnavailable(description: "cannot create \(outputURL.path)")
    }
    defer { try? FileManager.default.removeItem(at: outputURL) }
    let output = try FileHandle(forWritingTo: outputURL)
    defer { try? output.close() }

    let process = Process()
    process.executableURL = executable
    process.arguments = [scenario] + arguments
    process.standardOutput = output
    process.standardError = output
    process.standardInput = FileHandle.nullDevice
    let killer = ProbeKiller()
    let seconds = Double(timeLimit.components.seconds) + Double(timeLimit.components.attoseconds) / 1e18
    await fewDescriptorsOpen()
    // A file, not a pipe: a chatty crash report can never fill a pipe buffer and block the child.
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        process.terminationHandler = { _ in continuation.resume() }
        do {
            try startChild(process)
        } catch {
            process.terminationHandler = nil
            continuation.resume(throwing: error)
            return
        }
        let pid = process.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
            killer.kill(pid, ifRunning: process)
        }
    }
    let text = (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "<unreadable output>"
    return ProbeOutcome(
        status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
        timedOut: killer.didKill, output: text)
}

/// Kills a probe that ran past its time limit, and remembers that it did.
private final class ProbeKiller: @unchecked Sendable {  // `killed` is guarded by `lock`.
    private let lock = NSLock()
    private var killed = false

    var didKill: Bool {
        lock.withLock { killed }
    }

    func kill(_ pid: Int32, ifRunning process: Process) {
        guard process.isRunning else { return }
        lock.withLock { killed = true }
        #if canImport(Glibc)
        _ = Glibc.kill(pid, SIGKILL)
        #else
        _ = Darwin.kill(pid, SIGKILL)
        #endif
    }
}
