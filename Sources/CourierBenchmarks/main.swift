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
startAndWait(options)
