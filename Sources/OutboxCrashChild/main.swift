// The child process of the outbox crash test (Tests/CourierTests/Outbox/OutboxCrashTests.swift). Not a product.
//
// OutboxCrashChild <directory> <server base URL> <ack file> <handled file> <entries> <workers> <seed> <trace file>
//
// Opens an Outbox on <directory> and enqueues <entries> POSTs with bodies of pseudo-random size up to 64 KB,
// from <workers> concurrent callers, each with its own ordering key. Entry `j` of worker `w` carries the
// idempotency key `w-j`. Each acknowledged enqueue appends "w-j" to <ack file>; each handled result appends
// "w-j" to <handled file>. A restarted child resumes each worker after its last acknowledged entry. It exits 0
// once every entry is acknowledged and the outbox is drained. The parent kills it with SIGKILL at random moments.
//
// <trace file> tells the parent what was in flight at each kill: "S" when a run starts, "E w-j" before an enqueue
// and "A w-j" after it returned, "T w-j" before each send attempt (from the rewrite hook), "D w-j" once the entry
// is finished on disk (the `.handled` event, after its completion record is flushed).
import Courier
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Appends lines to a file with `write(2)` on an `O_APPEND` descriptor: a line written survives a SIGKILL.
final class LineLog: Sendable {
    private let fd: Int32

    init(_ path: String) {
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        precondition(fd >= 0, "cannot open \(path)")
    }

    func append(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}

/// SplitMix64, for body sizes that do not depend on the run.
func mix(_ value: UInt64) -> UInt64 {
    var z = value &+ 0x9E37_79B9_7F4A_7C15
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
}

let arguments = CommandLine.arguments
guard arguments.count == 9, let entries = Int(arguments[5]), let workers = Int(arguments[6]),
    let seed = UInt64(arguments[7]), let baseURL = URL(string: arguments[2])
else {
    FileHandle.standardError.write(Data("usage: OutboxCrashChild dir url ack handled entries workers seed\n".utf8))
    exit(2)
}
let directory = URL(fileURLWithPath: arguments[1])
let acks = LineLog(arguments[3])
let handled = LineLog(arguments[4])
let trace = LineLog(arguments[8])
trace.append("S")
let acknowledged = Set(
    (try? String(contentsOfFile: arguments[3], encoding: .utf8))?.split(separator: "\n").map(String.init) ?? [])

let session = URLSessionConfiguration.ephemeral
session.timeoutIntervalForRequest = 10
let configuration = NetworkConfiguration(sessionConfiguration: session, baseURL: baseURL)
/// The credential, added at send time: the outbox stores none.
struct CrashTestToken: NetworkRequestInterceptor {
    func intercept(_ request: URLRequest) async throws -> URLRequest {
        var request = request
        request.setValue("Bearer crash-test-token", forHTTPHeaderField: "Authorization")
        return request
    }
}
configuration.interceptors = [CrashTestToken()]
let policy = RetryPolicy(baseDelay: 0.01, maxDelay: 0.05)
let outbox = try Outbox(
    directory: directory, client: NetworkClient(configuration: configuration), rules: Outbox.Rules(configuration),
    retryPolicy: policy,
    limits: Outbox.Limits(maximumBytes: 512 * 1024 * 1024), paused: true
) { request in
    trace.append("T \(request.entry.idempotencyKey)")
    return request
}
let events = outbox.events()
Task {
    for await event in events {
        if case .handled(let entry) = event { trace.append("D \(entry.idempotencyKey)") }
    }
}
outbox.onResult(kind: "crash", as: VoidResponse.self) { entry, result in
    _ = try result.get()
    handled.append(entry.idempotencyKey)
}
outbox.resume()

let perWorker = entries / workers
await withTaskGroup(of: Void.self) { group in
    for worker in 0..<workers {
        group.addTask {
            for index in 0..<perWorker where !acknowledged.contains("\(worker)-\(index)") {
                let key = "\(worker)-\(index)"
                let size = Int(mix(seed &+ UInt64(worker * perWorker + index)) % (64 * 1024 + 1))
                var body = Data(key.utf8)
                body.append(Data(repeating: UInt8(truncatingIfNeeded: index), count: max(0, size - body.count)))
                let request = NetworkRequest<Data, VoidResponse>(
                    path: "/write/\(worker)", method: .post, body: body,
                    additionalHeaders: [Outbox.idempotencyHeader: key])
                trace.append("E \(key)")
                while true {
                    do {
                        try await outbox.enqueue(request, kind: "crash", orderingKey: "worker-\(worker)")
                        break
                    } catch {
                        FileHandle.standardError.write(Data("enqueue \(key): \(error)\n".utf8))
                        try? await Task.sleep(nanoseconds: 10_000_000)
                    }
                }
                acks.append(key)
                trace.append("A \(key)")
            }
        }
    }
}
while outbox.pendingCount > 0 { try await Task.sleep(nanoseconds: 5_000_000) }
await outbox.close()
exit(0)
