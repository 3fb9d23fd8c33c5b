import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What one chunk of requests cost: wall time and the CPU time of the whole process.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct Sample: Sendable {
    /// Seconds on the monotonic clock.
    let wallSeconds: Double
    /// User plus system CPU seconds of the process (every thread, the in-process server's too).
    let cpuSeconds: Double
}

/// `getrusage(RUSAGE_SELF)`: this process's resource usage so far, or `nil` if the call fails.
func processUsage() -> rusage? {
    var usage = rusage()
    #if canImport(Glibc)
    let who = __rusage_who_t(RUSAGE_SELF.rawValue)
    #else
    let who = RUSAGE_SELF
    #endif
    return getrusage(who, &usage) == 0 ? usage : nil
}

/// The user plus system CPU time the process has used so far, in seconds (`getrusage(RUSAGE_SELF)`).
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func processCPUSeconds() -> Double {
    guard let usage = processUsage() else { return 0 }
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Runs `body` once and returns its wall and CPU time.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func measure(_ body: () async throws -> Void) async rethrows -> Sample {
    let cpuStart = processCPUSeconds()
    let start = ContinuousClock.now
    try await body()
    let elapsed = ContinuousClock.now - start
    let cpu = processCPUSeconds() - cpuStart
    let wall = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Sample(wallSeconds: wall, cpuSeconds: cpu)
}

/// Runs requests `firstIndex ..< firstIndex + count` with `concurrency` child tasks; worker `w` runs the indices
/// `w`, `w + concurrency`, `w + 2 * concurrency`, and so on, one after the other. Throws the first failure.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func runChunk(
    count: Int, concurrency: Int, firstIndex: Int, operation: @escaping @Sendable (Int) async throws -> Void
) async throws {
    let workers = max(1, min(concurrency, count))
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<workers {
            group.addTask {
                var offset = worker
                while offset < count {
                    try await operation(firstIndex + offset)
                    offset += workers
                }
            }
        }
        try await group.waitForAll()
    }
}

/// The median of `values`; the mean of the middle two when the count is even, `nan` when empty.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
