import Foundation

// CourierBenchmarks: raw URLSession against Courier, in one process, in interleaved rounds. See `Options.usage`.
//
// The top level is deliberately synchronous. An `async` top level parks the main thread in `dispatch_main()`, whose
// `sigsuspend` on a read-only signal mask kills valgrind (3.19) at once, and `--profile` exists to run under
// callgrind. So the work runs in a task on the global executor (see `startAndWait`) and this thread just waits.

let options: Options
do {
    options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    printError("\(error)")
    exit(2)
}
// The benchmark (like the tests) uses Duration and ContinuousClock; the library itself supports macOS 12.
if #available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *) {
    startAndWait(options)
} else {
    printError("CourierBenchmarks needs macOS 13 or later.")
    exit(2)
}
