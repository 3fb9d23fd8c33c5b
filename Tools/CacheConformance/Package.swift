// swift-tools-version:6.0
// The Swift half of the HTTP cache conformance harness (see README.md): not part of Courier's package build.
import PackageDescription

let package = Package(
    name: "CacheConformance",
    platforms: [.macOS(.v13)],
    dependencies: [.package(name: "Courier", path: "../..")],
    targets: [
        .executableTarget(name: "CacheConformanceDriver", dependencies: [.product(name: "Courier", package: "Courier")])
    ],
    swiftLanguageModes: [.v6]
)
