// swift-tools-version:6.0
import PackageDescription

// Courier's requests in swift-log, swift-metrics and swift-distributed-tracing. A package of its own so that Courier
// itself takes no dependency.
let package = Package(
    name: "CourierObservability",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "CourierObservability", targets: ["CourierObservability"])
    ],
    dependencies: [
        .package(name: "Courier", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.0"),
        // Tests only: W3C `traceparent` formatting and parsing for a test tracer that propagates W3C trace context.
        .package(url: "https://github.com/swift-otel/swift-w3c-trace-context", from: "1.0.0"),
    ],
    targets: [
        .target(
            name: "CourierObservability",
            dependencies: [
                .product(name: "Courier", package: "Courier"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(
            name: "CourierObservabilityTests",
            dependencies: [
                "CourierObservability",
                .product(name: "Courier", package: "Courier"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "W3CTraceContext", package: "swift-w3c-trace-context"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
