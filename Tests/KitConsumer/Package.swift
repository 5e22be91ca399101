// swift-tools-version:6.0
// An app's package that depends on HereaboutsKit by path, the way an app adds it:
// `make client-snippets` builds it, with every Swift block of Docs/CLIENT.md in it.
import Foundation
import PackageDescription

// SwiftPM names a path dependency after its directory, which is wherever this
// repository was cloned to.
let root = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().deletingLastPathComponent()

let package = Package(
    name: "KitConsumer",
    platforms: [.macOS(.v13), .iOS(.v16)],
    dependencies: [.package(path: root.path)],
    targets: [
        .executableTarget(
            name: "KitConsumer",
            dependencies: [.product(name: "HereaboutsKit", package: root.lastPathComponent.lowercased())],
            swiftSettings: [.swiftLanguageMode(.v6), .unsafeFlags(["-warnings-as-errors"])]
        ),
    ]
)
