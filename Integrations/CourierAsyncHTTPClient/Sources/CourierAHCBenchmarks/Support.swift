import Foundation
import NIOCore
import NIOHTTP1

struct Memo: Codable, Sendable {
    let id: Int
    let text: String
}

let body = Array(#"{"id":1,"text":"a small JSON answer"}"#.utf8)

/// Answers every request with `body`, keeping connections alive.
final class Answer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        let headers = HTTPHeaders([("Content-Type", "application/json"), ("Content-Length", String(body.count))])
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

/// The CPU time of the whole process (the server's thread included), from `getrusage`.
func processCPUSeconds() -> Double {
    var usage = rusage()
    #if os(Linux)
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
}

/// The CPU time of one thread, by its CPU-time clock.
func threadCPUSeconds(_ clock: clockid_t) -> Double {
    var time = timespec()
    clock_gettime(clock, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

struct Sample {
    /// Seconds of wall time, of the process's CPU time, and of the process's CPU time less the server thread's.
    var wall, cpu, clientCPU: Double
}

/// Runs `requests` calls of `call` from `concurrency` tasks.
func measure(
    requests: Int, concurrency: Int, serverClock: clockid_t, _ call: @escaping @Sendable () async throws -> Void
) async throws -> Sample {
    let cpu = processCPUSeconds()
    let serverCPU = threadCPUSeconds(serverClock)
    let start = DispatchTime.now().uptimeNanoseconds
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<concurrency {
            let share = requests / concurrency + (worker < requests % concurrency ? 1 : 0)
            group.addTask { for _ in 0..<share { try await call() } }
        }
        try await group.waitForAll()
    }
    let wall = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    let used = processCPUSeconds() - cpu
    return Sample(wall: wall, cpu: used, clientCPU: used - (threadCPUSeconds(serverClock) - serverCPU))
}

/// The median, the minimum and the maximum, as `1.023 (0.998–1.051)` with `digits` decimals.
func summary(_ values: [Double], digits: Int = 3) -> String {
    let sorted = values.sorted()
    let median =
        sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    let format = "%.\(digits)f"
    return String(format: format, median) + " (" + String(format: format, sorted.first!) + "–"
        + String(format: format, sorted.last!) + ")"
}

/// The bundle libcurl reads, and so the only trust store of `URLSession` on Linux (for the whole process).
let systemBundle = "/etc/ssl/certs/ca-certificates.crt"

/// Lets Courier over URLSession trust the benchmark's CA, which corelibs reads only from `systemBundle`: appends the
/// CA to `path`, but only when `path` is a copy of the bundle bind-mounted over `systemBundle` in this process's own
/// mount namespace (`unshare --mount`, see the README), so that the system's file is never written and nothing
/// outlives the process. Returns why not when it is not.
func trustForURLSession(pem: String, through path: String) -> String? {
    #if os(Linux)
    let mountInfo = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
    let mounted = mountInfo.split(separator: "\n").contains { line in
        line.split(separator: " ").dropFirst(4).first.map(String.init) == systemBundle
    }
    guard mounted else { return "nothing is mounted at \(systemBundle) in this process's mount namespace" }
    var copy = stat()
    var system = stat()
    guard stat(path, &copy) == 0, stat(systemBundle, &system) == 0,
        copy.st_dev == system.st_dev, copy.st_ino == system.st_ino
    else { return "\(path) is not the file mounted at \(systemBundle)" }
    guard
        URL(fileURLWithPath: path).resolvingSymlinksInPath().path
            != URL(fileURLWithPath: systemBundle).resolvingSymlinksInPath().path
    else { return "\(path) is the system's bundle itself" }
    guard let file = FileHandle(forWritingAtPath: path) else { return "\(path) cannot be written" }
    defer { try? file.close() }
    do {
        try file.seekToEnd()
        try file.write(contentsOf: Data(("\n" + pem).utf8))
    } catch {
        return "\(path) cannot be written: \(error)"
    }
    return nil
    #else
    return "corelibs URLSession (Linux) only"
    #endif
}
