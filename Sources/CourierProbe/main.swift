import Foundation

// CourierProbe: runs one scenario that may crash the whole process (a trap in corelibs Foundation), against a
// loopback server it starts itself, prints a one-line result on standard output and exits 0 only if the scenario
// behaved. The tests run it as a child process (`CrashProbeTests`), so that a trap fails one test instead of
// killing the test run. Progress goes to standard error, unbuffered, so a crash shows the step it happened in.
//
// Usage: CourierProbe <scenario> [--seed N] [--count N] [--time-limit SECONDS] [--directory PATH]
// Exit status: 0 behaved, 1 misbehaved, 2 usage, 3 did not finish within the time limit; a crash is a signal.

if #available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *) {
    probeMain(Array(CommandLine.arguments.dropFirst()))
} else {
    FileHandle.standardError.write(Data("CourierProbe needs macOS 13 or later.\n".utf8))
    exit(2)
}
