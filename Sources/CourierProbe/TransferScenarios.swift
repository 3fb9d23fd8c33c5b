import Courier
import Foundation
import LoopbackHTTPServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Issue 21's transfer scenarios: the ones that froze or trapped the whole process before the fixes.

/// Whether `error` is `fileAccessFailed` naming `url`.
private func isFileAccessFailure(_ error: any Error, url: URL) -> Bool {
    guard case NetworkClientError.fileAccessFailed(let failed, _) = error else { return false }
    return failed == url
}

/// The seconds `body` took.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private func seconds(_ body: () async -> Void) async -> Double {
    let start = ContinuousClock.now
    await body()
    let took = ContinuousClock.now - start
    return Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
}

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func specialFileBodies(_ server: LoopbackServer) async -> (Bool, String) {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("CourierProbe-fifo-\(UUID().uuidString)")
    let fifo = folder.appendingPathComponent("pipe")
    let zeroLink = folder.appendingPathComponent("zero-link")
    let fifoLink = folder.appendingPathComponent("pipe-link")
    do {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        guard mkfifo(fifo.path, 0o600) == 0 else { return (false, "mkfifo failed: \(errno)") }
        try FileManager.default.createSymbolicLink(at: zeroLink, withDestinationURL: URL(fileURLWithPath: "/dev/zero"))
        try FileManager.default.createSymbolicLink(at: fifoLink, withDestinationURL: fifo)
    } catch {
        return (false, "could not create the special files: \(error)")
    }
    defer { try? FileManager.default.removeItem(at: folder) }
    let client = NetworkClient(configuration: NetworkConfiguration(baseURL: server.baseURL))
    var failures: [String] = []
    let files = [
        ("/dev/zero", URL(fileURLWithPath: "/dev/zero")), ("a FIFO", fifo), ("a link to /dev/zero", zeroLink),
        ("a link to a FIFO", fifoLink),
    ]
    for (name, url) in files {
        progress("step: FileUpload of \(name)")
        let upload = NetworkRequest<FileUpload, VoidResponse>(
            path: "upload", method: .post, body: FileUpload(url: url), totalTimeout: 3)
        let uploadTook = await seconds {
            do {
                _ = try await client.run(upload)
                failures.append("FileUpload of \(name) succeeded")
            } catch {
                if !isFileAccessFailure(error, url: url) { failures.append("FileUpload of \(name): \(error)") }
            }
        }
        if uploadTook > 1 { failures.append("FileUpload of \(name) took \(uploadTook) s") }

        progress("step: multipart part of \(name)")
        var form = MultipartFormData()
        form.append("caption", name: "text")
        form.append(fileAt: url, name: "file")
        let post = NetworkRequest<MultipartFormData, VoidResponse>(
            path: "form", method: .post, body: form, totalTimeout: 3)
        let formTook = await seconds {
            do {
                _ = try await client.run(post)
                failures.append("multipart part of \(name) succeeded")
            } catch {
                if !isFileAccessFailure(error, url: url) { failures.append("multipart part of \(name): \(error)") }
            }
        }
        if formTook > 1 { failures.append("multipart part of \(name) took \(formTook) s") }
    }
    // Nothing is left blocked: another client's request completes at once.
    progress("step: another client's request")
    let other = NetworkClient(configuration: NetworkConfiguration(baseURL: server.baseURL))
    let otherTook = await seconds {
        do {
            let echo = try await other.run(
                NetworkRequest<VoidRequest, EchoedRequest>(path: "after", method: .get, totalTimeout: 4)
            ).value
            if echo.path != "/after" { failures.append("another client's request: the server saw \(echo.path)") }
        } catch {
            failures.append("another client's request: \(error)")
        }
    }
    if otherTook > 2 { failures.append("another client's request took \(otherTook) s") }
    let summary = failures.isEmpty ? "\(files.count * 2) bodies refused at once" : failures.joined(separator: "; ")
    return (failures.isEmpty, summary)
}

/// The process's virtual memory size in bytes (`VmSize` in `/proc/self/status`), or `nil` where there is none.
private func virtualMemorySize() -> UInt64? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmSize:") }),
        let kilobytes = UInt64(line.split(separator: " ").dropFirst().first ?? "")
    else { return nil }
    return kilobytes * 1024
}

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func declaredLengths() async -> (Bool, String) {
    let hugeLength = 60_000_000_000
    let manyLength = 100 << 20
    let server: LoopbackServer
    do {
        server = try LoopbackServer { request in
            if request.path == "/huge" { return .stream(status: 200, length: 1_000, declaredLength: hugeLength) }
            return .stream(status: 200, length: manyLength, holdAfter: 1_000)
        }
    } catch {
        return (false, "could not start the loopback server: \(error)")
    }
    defer { server.stop() }
    let sessionConfiguration = URLSessionConfiguration.ephemeral
    sessionConfiguration.httpMaximumConnectionsPerHost = 40
    let client = NetworkClient(
        configuration: NetworkConfiguration(sessionConfiguration: sessionConfiguration, baseURL: server.baseURL))

    progress("step: a 60 GB Content-Length under a 64 GB maximumResponseSize, then a close")
    let huge = NetworkRequest<VoidRequest, Data>(path: "huge", method: .get, maximumResponseSize: 64 << 30)
    do {
        _ = try await client.run(huge)
        return (false, "the 60 GB response succeeded")
    } catch NetworkClientError.transportFailed {
        // The connection closed 1,000 bytes in: a transport failure, not a trap.
    } catch {
        return (false, "the 60 GB response: \(error)")
    }

    #if canImport(Glibc)
    // Under the thread sanitizer the process reserves terabytes of shadow memory up front (VmSize is then unreadable
    // or enormous), and an address-space limit would only starve the sanitizer: that step needs a plain build, which
    // the plain `swift test` run is.
    guard let used = virtualMemorySize(), used < 1 << 40 else {
        progress("step skipped: the address space is a sanitizer's, so there is no RLIMIT_AS step")
        return (true, "a 60 GB Content-Length did not trap; the address-space step runs without a sanitizer")
    }
    let headroom: UInt64 = 5 << 29  // 2.5 GiB: 40 reservations of 100 MiB need 3.9.
    var limit = rlimit(rlim_cur: rlim_t(used + headroom), rlim_max: rlim_t(used + headroom))
    guard setrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &limit) == 0 else {
        return (false, "setrlimit(RLIMIT_AS) failed: \(errno)")
    }
    progress("step: 40 responses declaring 100 MiB each, address space limited to \(used + headroom) bytes")
    let started = Started(expected: 40)
    let calls = (0..<40).map { index in
        Task { () -> String? in
            let request = NetworkRequest<VoidRequest, Data>(
                path: "many/\(index)", method: .get,
                onProgress: { progress in if progress.bytesReceived > 0 { started.arrived(index) } })
            do {
                _ = try await client.run(request)
                return "response \(index) succeeded"
            } catch is CancellationError {
                return nil
            } catch {
                return "response \(index): \(error)"
            }
        }
    }
    await started.all()
    for call in calls { call.cancel() }
    var failures: [String] = []
    for call in calls { if let failure = await call.value { failures.append(failure) } }
    if !failures.isEmpty { return (false, failures.joined(separator: "; ")) }
    return (true, "60 GB declared: transportFailed; 40 x 100 MiB declared at once: all received, then cancelled")
    #else
    return (true, "60 GB declared: transportFailed (no address-space limit here)")
    #endif
}

/// Waits until `expected` distinct calls have received body bytes.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
private final class Started: Sendable {
    private let state = Locked<(seen: Set<Int>, waiter: CheckedContinuation<Void, Never>?)>(([], nil))
    private let expected: Int

    init(expected: Int) {
        self.expected = expected
    }

    func arrived(_ index: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.seen.insert(index)
            guard state.seen.count == expected else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func all() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if state.seen.count >= expected { return true }
                state.waiter = continuation
                return false
            }
            if done { continuation.resume() }
        }
    }
}

@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
func readOnlyDownloadFolder(_ server: LoopbackServer) async -> (Bool, String) {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
        "CourierProbe-read-only-\(UUID().uuidString)")
    do {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    } catch {
        return (false, "could not create the folder: \(error)")
    }
    defer {
        _ = chmod(folder.path, 0o755)
        try? FileManager.default.removeItem(at: folder)
    }
    guard chmod(folder.path, 0o555) == 0 else { return (false, "chmod failed: \(errno)") }
    if getuid() == 0 {
        // Root writes anywhere: drop to `nobody` (for this process only) to meet the refusal a user meets.
        guard setgid(65_534) == 0, setuid(65_534) == 0 else { return (false, "could not become nobody: \(errno)") }
    }
    let destination = folder.appendingPathComponent("file.bin")
    let client = NetworkClient(configuration: NetworkConfiguration(baseURL: server.baseURL))
    progress("step: a download into a folder that cannot be written to")
    do {
        _ = try await client.run(
            NetworkRequest<VoidRequest, DownloadedFile>(path: "file", method: .get, downloadDestination: destination))
        return (false, "the download succeeded")
    } catch NetworkClientError.fileAccessFailed(_, let reason) {
        guard reason.contains("EACCES") else { return (false, "the reason does not name EACCES: \(reason)") }
        return (true, "fileAccessFailed: \(reason)")
    } catch {
        return (false, "\(error)")
    }
}
