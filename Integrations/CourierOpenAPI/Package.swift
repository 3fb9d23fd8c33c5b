// swift-tools-version:6.0
import PackageDescription

// Courier under swift-openapi-generator clients: a `ClientTransport` that runs each operation through any
// `NetworkClientProtocol`. A package of its own so that Courier itself takes no dependency.
let package = Package(
    name: "CourierOpenAPI",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "CourierOpenAPI", targets: ["CourierOpenAPI"])
    ],
    dependencies: [
        .package(name: "Courier", path: "../.."),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        .target(
            name: "CourierOpenAPI",
            dependencies: [
                .product(name: "Courier", package: "Courier"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // The generated client in Tests/CourierOpenAPITests/Generated was made once from openapi.yaml with
        // swift-openapi-generator 1.14.3 (see the README) and is checked in: CI does not run the generator.
        .testTarget(
            name: "CourierOpenAPITests",
            dependencies: [
                "CourierOpenAPI",
                .product(name: "Courier", package: "Courier"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // Test support of the root package: an in-process HTTP/1.1 server on loopback.
                .product(name: "LoopbackHTTPServer", package: "Courier"),
            ],
            exclude: ["openapi.yaml", "openapi-generator-config.yaml"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
