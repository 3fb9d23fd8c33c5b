// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Courier",
    platforms: [.macOS(.v12), .iOS(.v15), .tvOS(.v15), .watchOS(.v8)],
    products: [
        .library(name: "Courier", targets: ["Courier"]),
        // Test support for the packages under Integrations/ (their loopback tests), like swift-nio's NIOTestUtils:
        // not part of Courier's API, and no promise of stability is made for it.
        .library(name: "LoopbackHTTPServer", targets: ["LoopbackHTTPServer"]),
    ],
    targets: [
        // The library: depends on Foundation only.
        .target(name: "Courier"),
        // An in-process HTTP/1.1 server on loopback for tests and benchmarks; a product only as test support for
        // Integrations/ (see above).
        .target(name: "LoopbackHTTPServer"),
        .executableTarget(name: "CourierBenchmarks", dependencies: ["Courier", "LoopbackHTTPServer"]),
        // `swift run CourierExample`: an example SDK driven against an example API served in process. Not a product.
        .executableTarget(name: "CourierExample", dependencies: ["Courier", "LoopbackHTTPServer"]),
        // Runs one scenario that may crash the process, for CrashProbeTests to run as a child process. Not a
        // product; a dependency of the tests so that `swift test` builds it next to the test bundle.
        .executableTarget(name: "CourierProbe", dependencies: ["Courier", "LoopbackHTTPServer"]),
        // The process the outbox crash test kills and restarts. Not a product.
        .executableTarget(name: "OutboxCrashChild", dependencies: ["Courier"]),
        .testTarget(
            name: "CourierTests", dependencies: ["Courier", "LoopbackHTTPServer", "CourierProbe", "OutboxCrashChild"]),
    ],
    swiftLanguageModes: [.v6]
)
