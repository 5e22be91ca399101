// swift-tools-version: 6.1
import PackageDescription

/// One set of settings for every target: Swift 6 language mode (the tools version's
/// default) with strict concurrency, and `any` spelled out for existentials.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "Hereabouts",
    // HereaboutsKit's platforms: the package's for every target. The services and the
    // edge are built for Linux; on Apple platforms only HereaboutsKit is supported.
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        // What apps add: HTTP(S) to the edge only, no ZeroMQ, no system library, no unsafe flags.
        .library(name: "HereaboutsKit", targets: ["HereaboutsKit"]),
        .executable(name: "auth-service", targets: ["AuthServiceMain"]),
        .executable(name: "catalogue-service", targets: ["CatalogueServiceMain"]),
        .executable(name: "geo-service", targets: ["GeoServiceMain"]),
        .executable(name: "favourites-service", targets: ["FavouritesServiceMain"]),
        .executable(name: "chat-service", targets: ["ChatServiceMain"]),
        .executable(name: "here", targets: ["Here"]),
        .executable(name: "edge-service", targets: ["EdgeServiceMain"]),
        .executable(name: "hereabouts-bench", targets: ["Benchmarks"]),
        .executable(name: "hereabouts-fuzz", targets: ["HereaboutsFuzz"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        // Without its default trait ConfigurationSupport, which builds swift-configuration (~20k lines)
        // for `ConfigReader` initialisers the edge does not use; FullFoundation, the other default, stays.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: ["FullFoundation"]),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession.git", from: "1.4.0"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
    ],
    targets: [
        // MARK: Transport
        // zmq.h is in /usr/include and the module map links zmq: no pkg-config, whose flags
        // for Debian's libzmq (krb5's -isystem, from its private requirements) SwiftPM
        // refuses with a warning on every build. `make deps` installs libzmq3-dev.
        .systemLibrary(
            name: "CZeroMQ",
            path: "Shared/CZeroMQ"
        ),
        // NaCl's box for the edge's CurveZMQ (`ZMTP`): the same libsodium that libzmq seals with.
        .systemLibrary(
            name: "CSodium",
            path: "Shared/CSodium"
        ),
        .systemLibrary(
            name: "CZlib",
            path: "Shared/CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        .target(
            name: "ZeroMQ",
            dependencies: ["CZeroMQ"],
            path: "Shared/ZeroMQ",
            swiftSettings: swiftSettings
        ),

        // MARK: Protocol (no IO)
        .target(
            name: "Wire",
            path: "Shared/Wire",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Contracts",
            dependencies: ["Wire"],
            path: "Shared/Contracts",
            swiftSettings: swiftSettings
        ),
        // Mail as it leaves: MIME messages, and their delivery over SMTP or into files.
        .target(
            name: "Mail",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Shared/Mail",
            swiftSettings: swiftSettings
        ),
        // Notifications as they leave: APNs (HTTP/2, token auth) and Web Push (RFC 8030,
        // 8291, 8292): HTTP/2 frame by frame on swift-nio-http2, HTTP/1.1 on NIOHTTP1 for a
        // Web Push service that refuses HTTP/2.
        .target(
            name: "Push",
            dependencies: [
                "Wire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Shared/Push",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Imaging",
            dependencies: ["Wire"],
            path: "Shared/Imaging",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "OpeningHours",
            dependencies: ["Wire"],
            path: "Shared/OpeningHours",
            exclude: ["Holidays"],
            swiftSettings: swiftSettings
        ),

        // MARK: Runtime
        .target(
            name: "ServiceClient",
            dependencies: ["ZeroMQ", "Wire", "Contracts", .product(name: "Crypto", package: "swift-crypto")],
            path: "Shared/ServiceClient",
            swiftSettings: swiftSettings
        ),
        // ZMTP 3.1 written by NIO: the services' ROUTER (`ZMTPServer`) and the edge's requests to it from its event loops.
        .target(
            name: "ZMTP",
            dependencies: [
                "ServiceClient", "ZeroMQ", "Contracts", "Wire", "CSodium",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Shared/ZMTP",
            swiftSettings: swiftSettings
        ),
        // What every client of the stack does alike (here, the edge): joins, completions, how errors surface.
        .target(
            name: "StackClient",
            dependencies: ["Contracts", "Wire"],
            path: "Shared/StackClient",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ServiceCore",
            dependencies: [
                "ZeroMQ", "Wire", "Contracts", "ServiceClient",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            path: "Shared/ServiceCore",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ServiceKit",
            dependencies: [
                "ZeroMQ", "ZMTP", "Wire", "Contracts", "ServiceClient", "ServiceCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            path: "Shared/ServiceKit",
            swiftSettings: swiftSettings
        ),
        // Child processes by posix_spawn: `here up`'s services, the tests' and benchmarks' children.
        .target(
            name: "Spawn",
            path: "Shared/Spawn",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ServiceKitTesting",
            dependencies: ["ServiceKit", "ServiceClient", "ZeroMQ", "Wire", "Contracts", "Mail", "Spawn",
                           .product(name: "Crypto", package: "swift-crypto")],
            path: "Shared/ServiceKitTesting",
            // Run by SMTPTestServer and PushTestServer from where they lie.
            exclude: ["smtp_server.py", "push_server.py"],
            swiftSettings: swiftSettings
        ),

        // MARK: Services
        .target(
            name: "Auth",
            dependencies: [
                "ServiceKit", "Contracts", "Wire", "Imaging", "Mail", "CSodium",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            path: "Services/Auth/Library",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "AuthServiceMain",
            dependencies: [
                "Auth", "ServiceKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Services/Auth/Executable",
            swiftSettings: swiftSettings
        ),

        .target(
            name: "Catalogue",
            dependencies: [
                "ServiceKit", "Contracts", "Wire", "OpeningHours", "Imaging",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Services/Catalogue/Library",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "CatalogueServiceMain",
            dependencies: [
                "Catalogue", "ServiceKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Services/Catalogue/Executable",
            swiftSettings: swiftSettings
        ),

        .target(
            name: "Geo",
            dependencies: [
                "ServiceKit", "ServiceClient", "Contracts", "Wire", "OpeningHours", "CZlib",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Services/Geo/Library",
            // GeoNames places and countries, gzipped, read at start (see Services/Geo/Gazetteer).
            resources: [.copy("Resources/gazetteer.tsv.gz"), .copy("Resources/gazetteer-names.tsv.gz")],
            // The index's state is class properties, read under its read lock and written
            // under its write lock; in release builds their run-time exclusivity checks
            // (a call per property read, several per hit: ~2.5% of a search) guard nothing
            // the lock does not. Debug builds, which the tests run, keep them.
            swiftSettings: swiftSettings + [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
                                            .unsafeFlags(["-O"], .when(configuration: .debug))]
        ),
        .executableTarget(
            name: "GeoServiceMain",
            dependencies: [
                "Geo", "ServiceKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Services/Geo/Executable",
            swiftSettings: swiftSettings
        ),

        .target(
            name: "Favourites",
            dependencies: [
                "ServiceKit", "Contracts", "Wire",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Services/Favourites/Library",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "FavouritesServiceMain",
            dependencies: [
                "Favourites", "ServiceKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Services/Favourites/Executable",
            swiftSettings: swiftSettings
        ),

        .target(
            name: "Chat",
            dependencies: [
                "ServiceKit", "ServiceClient", "Contracts", "Wire", "Push",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Services/Chat/Library",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "ChatServiceMain",
            dependencies: [
                "Chat", "ServiceKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Services/Chat/Executable",
            swiftSettings: swiftSettings
        ),

        // MARK: Gateway
        .target(
            name: "Gateway",
            dependencies: ["ServiceClient", "StackClient", "Contracts", "Wire", "ZeroMQ", "Mail", "Spawn"],
            path: "Services/Gateway/Library",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "Here",
            dependencies: [
                "Gateway", "ServiceClient", "StackClient", "Contracts", "Wire", "ZeroMQ", "OpeningHours",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Services/Gateway/Executable",
            swiftSettings: swiftSettings
        ),

        // MARK: Edge (HTTP and WebSocket in front, a client of the five services behind)
        .target(
            name: "Edge",
            dependencies: [
                "ServiceClient", "StackClient", "ServiceCore", "Contracts", "Wire", "ZeroMQ", "ZMTP", "Imaging",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Services/Edge/Library",
            resources: [.copy("Resources/openapi.yaml"), .copy("Resources/Console")],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "EdgeServiceMain",
            dependencies: [
                "Edge", "ServiceCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Services/Edge/Executable",
            swiftSettings: swiftSettings
        ),

        // MARK: Tests
        .testTarget(
            name: "ZMTPTests",
            dependencies: [
                "TestThreads", "ZMTP", "ServiceClient", "ZeroMQ", "Wire", "Contracts",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ZeroMQTests",
            dependencies: ["TestThreads", "ZeroMQ"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "WireTests",
            dependencies: ["Wire", "Contracts"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ContractsTests",
            dependencies: ["Contracts", "Wire"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "OpeningHoursTests",
            dependencies: ["OpeningHours"],
            // Read by path from the source tree (#filePath), as the reference's tools write them.
            exclude: ["Reference"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ImagingTests",
            dependencies: ["Imaging", "ServiceKitTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ServiceKitTests",
            dependencies: [
                "TestThreads", "ServiceKit", "ServiceKitTesting", "Spawn", "ServiceClient", "ZeroMQ", "Wire", "Contracts",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AuthTests",
            dependencies: [
                "TestThreads", "Auth", "ServiceKit", "ServiceKitTesting", "ServiceClient", "ZeroMQ", "Wire",
                "Contracts",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                // BoringSSL's scrypt: the implementation the password hashes were made with before.
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CatalogueTests",
            dependencies: [
                "TestThreads", "Catalogue", "Auth", "ServiceKit", "ServiceKitTesting", "ServiceClient", "ZeroMQ", "Wire", "Contracts",
                "OpeningHours", "Imaging", "StackFixtures", "Mail",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Auth and catalogue started in-process, for the services that follow them.
        .target(
            name: "StackFixtures",
            dependencies: ["Auth", "Catalogue", "ServiceKit", "ServiceKitTesting", "ServiceClient", "Wire", "Contracts"],
            path: "Tests/StackFixtures",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "GeoTests",
            dependencies: [
                "TestThreads", "Geo", "Catalogue", "Auth", "ServiceKit", "ServiceKitTesting", "ServiceClient", "ZeroMQ", "Wire", "Contracts",
                "OpeningHours", "StackFixtures",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FavouritesTests",
            dependencies: [
                "TestThreads", "Favourites", "StackFixtures", "ServiceKit", "ServiceKitTesting", "ServiceClient", "Wire", "Contracts",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ChatTests",
            dependencies: [
                "TestThreads", "Chat", "StackFixtures", "ServiceKit", "ServiceKitTesting", "ServiceClient", "Wire", "Contracts", "ZeroMQ",
                "Push",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "MailTests",
            dependencies: ["TestThreads", "Mail", "ServiceKitTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "GatewayTests",
            dependencies: ["TestThreads", "Gateway", "StackClient", "Contracts", "Wire"],
            swiftSettings: swiftSettings
        ),
        // Tests that block run on threads of their own (`.ownThread`), not on Swift's cooperative threads.
        .target(
            name: "TestThreads",
            path: "Tests/TestThreads",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TestThreadsTests",
            dependencies: ["TestThreads"],
            swiftSettings: swiftSettings
        ),
        // The stack as apps meet it over HTTP and WebSocket: `here up` with the edge, and clients of it.
        .target(
            name: "EdgeFixtures",
            dependencies: [
                "ServiceKit", "ServiceKitTesting", "Contracts", "Wire",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Tests/EdgeFixtures",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "EdgeTests",
            dependencies: [
                "TestThreads", "Edge", "Contracts", "Wire", "Geo", "Favourites", "Chat", "StackFixtures", "ServiceKitTesting", "ServiceClient",
                "EdgeFixtures", "Mail",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SystemTests",
            dependencies: ["TestThreads", "ServiceClient", "ServiceKitTesting", "EdgeFixtures", "ServiceKit", "StackClient", "Contracts", "Wire", "ZeroMQ",
                           "Imaging", "Gateway", "Spawn",
                           .product(name: "GRDB", package: "GRDB.swift"),
                           .product(name: "HummingbirdWSClient", package: "hummingbird-websocket")],
            swiftSettings: swiftSettings
        ),
        // MARK: HereaboutsKit (the Swift package apps use; Docs/CLIENT.md)
        // Generated/ is swift-openapi-generator's output for Docs/openapi.yaml (`make client`,
        // checked by `make client-check`); the rest is the hand-made layer apps meet.
        .target(
            name: "HereaboutsKit",
            dependencies: [
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // Live events: URLSessionWebSocketTask on Apple platforms; FoundationNetworking's
                // is not usable on Linux (Debian's libcurl has no WebSocket), so swift-websocket's client.
                .product(name: "WSClient", package: "swift-websocket", condition: .when(platforms: [.linux])),
                .product(name: "NIOWebSocket", package: "swift-nio", condition: .when(platforms: [.linux])),
                .product(name: "Logging", package: "swift-log", condition: .when(platforms: [.linux])),
            ],
            path: "Shared/HereaboutsKit",
            swiftSettings: swiftSettings
        ),
        // An app's code against HereaboutsKit: every Swift block of Docs/CLIENT.md, which
        // `make client-snippets` writes into Snippets/, compiled with warnings as errors.
        // A target of this package rather than a package of its own, so `make test` builds
        // swift-nio and the Kit's other dependencies once; it sees only HereaboutsKit's
        // public API all the same, and Tests/KitConsumer/closure.py checks what a package
        // adding HereaboutsKit by URL would refuse. Not part of any product.
        .executableTarget(
            name: "KitConsumer",
            dependencies: ["HereaboutsKit"],
            path: "Tests/KitConsumer/Sources/KitConsumer",
            swiftSettings: [.unsafeFlags(["-warnings-as-errors"])]
        ),
        .testTarget(
            name: "HereaboutsKitTests",
            dependencies: ["TestThreads", "HereaboutsKit", "EdgeFixtures", "ServiceKitTesting", "Contracts"],
            swiftSettings: swiftSettings
        ),
        // MARK: Fuzzing (`make fuzz` builds HereaboutsFuzz with libFuzzer; `make test` replays the corpus)
        .target(
            name: "RequestFuzzing",
            dependencies: ["Auth", "Catalogue", "Geo", "Favourites", "Chat", "ServiceKit", "ServiceKitTesting", "Wire"],
            path: "Tests/Fuzzing/Harness",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "ImageFuzzing",
            dependencies: ["Imaging"],
            path: "Tests/Fuzzing/Images",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CLibFuzzer",
            path: "Tests/Fuzzing/CLibFuzzer"
        ),
        .executableTarget(
            name: "HereaboutsFuzz",
            dependencies: ["RequestFuzzing", "ImageFuzzing", "CLibFuzzer"],
            path: "Tests/Fuzzing/Driver",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FuzzCorpusTests",
            dependencies: ["TestThreads", "RequestFuzzing", "ImageFuzzing", "ServiceKitTesting", "Wire"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "Benchmarks",
            dependencies: [
                "ZeroMQ", "Wire", "Contracts", "ServiceClient", "ServiceKit", "ServiceKitTesting", "EdgeFixtures", "Auth", "Catalogue", "Geo",
                "OpeningHours", "Spawn",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/Benchmarks",
            swiftSettings: swiftSettings
        ),
    ]
)

// MARK: What `make run` builds
// `make release`, and so `make run`, sets HEREABOUTS_BUILD=stack: the package is then the stack's seven
// executables and the targets they reach, nothing else. A plain `swift build` builds every target of the
// package, and a seventh of a release build's compiler time went to ones the stack never starts:
// HereaboutsKit with the OpenAPI runtime, the benchmarks, the fuzzers and the test support. Without them a
// clean release build took 7 % less time on two cores (Docs/BENCHMARKS.md, the developer's loop). The
// targets kept are declared the same either way, so either build reuses what the other compiled.
if Context.environment["HEREABOUTS_BUILD"] == "stack" {
    let stack: Set<String> = [
        "auth-service", "catalogue-service", "geo-service", "favourites-service", "chat-service", "edge-service", "here",
    ]
    package.products.removeAll { !stack.contains($0.name) }
    let targets = Dictionary(uniqueKeysWithValues: package.targets.map { ($0.name, $0) })
    var reached = Set<String>()
    var packagesUsed = Set<String>()
    var toVisit = package.products.flatMap { ($0 as? Product.Executable)?.targets ?? [] }
    while let name = toVisit.popLast() {
        guard reached.insert(name).inserted, let target = targets[name] else { continue }
        for dependency in target.dependencies {
            switch dependency {
            case .targetItem(let name, _), .byNameItem(let name, _): toVisit.append(name)
            case .productItem(let product, let package, _, _): packagesUsed.insert((package ?? product).lowercased())
            @unknown default: break
            }
        }
    }
    package.targets.removeAll { !reached.contains($0.name) }
    // A package no kept target uses would be warned about on every build.
    package.dependencies.removeAll { dependency in
        guard case .sourceControl(_, let location, _) = dependency.kind else { return false }
        let identity = "\(location)".split(separator: "/").last.map { $0.lowercased() } ?? ""
        return !packagesUsed.contains(identity.hasSuffix(".git") ? String(identity.dropLast(4)) : identity)
    }
}
