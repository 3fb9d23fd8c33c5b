// swift-tools-version:5.9
// A MicroClient-era SDK, compiled in Swift 5 mode exactly as such SDKs are written, with only the import changed.
// .ci/run builds and tests it against the Courier checkout (linked beside it as ../Courier): it must compile with no errors.
import PackageDescription

let package = Package(
    name: "SeedEraSDK",
    platforms: [.macOS(.v12), .iOS(.v15)],
    dependencies: [.package(path: "../Courier")],
    targets: [
        .target(name: "SeedEraSDK", dependencies: [.product(name: "Courier", package: "Courier")]),
        // XCTest in Swift 5 mode, with Courier's StubNetworkClient: `swift test` in .ci/run.
        .testTarget(
            name: "SeedEraSDKTests",
            dependencies: ["SeedEraSDK", .product(name: "Courier", package: "Courier")]
        ),
    ]
)
