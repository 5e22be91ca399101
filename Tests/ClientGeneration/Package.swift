// swift-tools-version: 6.1
import PackageDescription

/// Only a way to build swift-openapi-generator's command for `make client` and
/// `make client-check`: HereaboutsKit's generated code is committed, so neither the
/// generator nor its dependencies reach an app that adds HereaboutsKit.
let package = Package(
    name: "ClientGeneration",
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-generator.git", exact: "1.14.3"),
    ]
)
