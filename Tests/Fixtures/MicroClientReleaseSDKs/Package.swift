// swift-tools-version:6.0
// SDKs of every MicroClient release line, each in the language mode of its era, with only the import changed.
// .ci/run builds and tests them against the Courier checkout (linked beside this package as ../Courier):
// - OldLineSDK: MicroClient 0.0.1–0.0.8 (`parameters:`, scheme and hostname), Swift 5 mode.
// - QueryItems015SDK: MicroClient 0.0.13–0.0.15 (non-optional `queryItems` in tests, `init(configuration:)`
//   doubles), Swift 5 mode.
// - NewLineSDK: MicroClient 0.0.16–0.0.28 (interceptors, retry strategy, logger, URLSessionProtocol double), Swift 6.
import PackageDescription

let swift5: [SwiftSetting] = [.swiftLanguageMode(.v5)]
let swift6: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "MicroClientReleaseSDKs",
    platforms: [.macOS(.v12), .iOS(.v15)],
    dependencies: [.package(path: "../Courier")],
    targets: [
        .target(name: "OldLineSDK", dependencies: ["Courier"], swiftSettings: swift5),
        .testTarget(name: "OldLineSDKTests", dependencies: ["OldLineSDK", "Courier"], swiftSettings: swift5),
        .target(name: "QueryItems015SDK", dependencies: ["Courier"], swiftSettings: swift5),
        .testTarget(
            name: "QueryItems015SDKTests", dependencies: ["QueryItems015SDK", "Courier"], swiftSettings: swift5),
        .target(name: "NewLineSDK", dependencies: ["Courier"], swiftSettings: swift6),
        .testTarget(name: "NewLineSDKTests", dependencies: ["NewLineSDK", "Courier"], swiftSettings: swift6),
    ]
)
