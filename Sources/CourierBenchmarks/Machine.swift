import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the numbers were measured on.
@available(macOS 13.0, iOS 16.0, tvOS 16.0, watchOS 9.0, *)
struct Machine: Sendable {
    /// Active processor count (what `nproc` prints).
    let cores: Int
    /// The hardware name (what `uname -m` prints).
    let architecture: String
    /// The first line of `swift --version`, or the compiler that built this binary if that fails.
    let swiftVersion: String

    /// Reads the machine; runs `swift --version` once (a fraction of a second).
    static func current() -> Machine {
        Machine(
            cores: ProcessInfo.processInfo.activeProcessorCount, architecture: unameMachine(),
            swiftVersion: swiftVersionLine() ?? compiledWith)
    }

    /// One line for the report header.
    var summary: String {
        "\(architecture), \(cores) cores (nproc), \(swiftVersion)"
    }

    private static func unameMachine() -> String {
        var names = utsname()
        guard uname(&names) == 0 else { return "unknown" }
        return withUnsafeBytes(of: &names.machine) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    private static func swiftVersionLine() -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "--version"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return nil
        }
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        let line = String(decoding: output, as: UTF8.self).split(separator: "\n").first { $0.contains("Swift") }
        return line.map { $0.trimmingCharacters(in: .whitespaces) }
    }

    private static var compiledWith: String {
        #if compiler(>=6.3)
        "built with Swift 6.3 or later"
        #elseif compiler(>=6.2)
        "built with Swift 6.2"
        #elseif compiler(>=6.1)
        "built with Swift 6.1"
        #else
        "built with Swift 6.0"
        #endif
    }
}
