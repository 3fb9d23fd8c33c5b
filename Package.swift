// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Courier",
    platforms: [.macOS(.v12), .iOS(.v15), .tvOS(.v15), .watchOS(.v8)],
    products: [
        .library(name: "Courier", targets: ["Courier"])
    ],
    targets: [
        // The library: depends on Foundation only.
        .target(name: "Courier"),
        // An in-process HTTP/1.1 server on loopback for tests and benchmarks. Not a product.
        .target(name: "LoopbackHTTPServer"),
        .executableTarget(name: "CourierBenchmarks", dependencies: ["Courier", "LoopbackHTTPServer"]),
        // `swift run CourierExample`: an example SDK driven against an example API served in process. Not a product.
        .executableTarget(name: "CourierExample", dependencies: ["Courier", "LoopbackHTTPServer"]),
        .testTarget(name: "CourierTests", dependencies: ["Courier", "LoopbackHTTPServer"]),
    ],
    swiftLanguageModes: [.v6]
)
