// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "CollapsingFutures",
    // Linux is built and tested in CI. Of Apple's platforms only macOS can
    // supply libatomic_ops (Homebrew, found through pkg-config), from the
    // version the code needs (Synchronization's Atomic, typed-throws
    // AsyncSequence, Duration); it is not built in CI.
    platforms: [.macOS(.v15)],
    products: [
        // DispatchLockedFutures and MutexLockedFutures are benchmark and test
        // baselines with the same type names: not shipped. An adopter of
        // CollapsingFutures alone resolves none of the packages below (they
        // serve only the other products and targets).
        .library(name: "CollapsingFutures", targets: ["CollapsingFutures"]),
        // A clock that tests advance (ManualClock): depends on the library alone.
        .library(name: "CollapsingFuturesTesting", targets: ["CollapsingFuturesTesting"]),
        // Bridges to swift-nio's EventLoopFuture (NIOCore only).
        .library(name: "CollapsingFuturesNIO", targets: ["CollapsingFuturesNIO"]),
        // Deadlines across gRPC calls (grpc-swift-2's GRPCCore only).
        .library(name: "CollapsingFuturesGRPC", targets: ["CollapsingFuturesGRPC"]),
    ],
    traits: [
        .trait(name: "NIO", description: "The CollapsingFuturesNIO product's bridges to swift-nio."),
        .trait(name: "GRPC", description: "The CollapsingFuturesGRPC product's bridges to grpc-swift-2."),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/OpenCombine/OpenCombine.git", from: "0.14.0"),
        // Tests only: swift-clocks' TestClock drives the timed APIs too.
        .package(url: "https://github.com/pointfreeco/swift-clocks", from: "1.1.1"),
        .package(url: "https://github.com/grpc/grpc-swift-2.git", from: "2.4.3"),
        // Examples and tests only (with the GRPC trait): the HTTP/2 transport.
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport.git", from: "2.9.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CAtomicOps",
            path: "CSources/CAtomicOps",
            pkgConfig: "atomic_ops",
            providers: [.apt(["libatomic-ops-dev"]), .brew(["libatomic_ops"])]
        ),
        .target(
            name: "CCollapsingFutures",
            dependencies: ["CAtomicOps"],
            path: "CSources/CCollapsingFutures"
        ),
        .target(
            name: "CollapsingFutures",
            dependencies: ["CCollapsingFutures"],
            path: "Sources/CollapsingFutures"
        ),
        .target(name: "CollapsingFuturesTesting", dependencies: ["CollapsingFutures"], path: "Sources/CollapsingFuturesTesting"),
        .target(
            name: "CollapsingFuturesNIO",
            dependencies: ["CollapsingFutures", .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["NIO"]))],
            path: "Sources/CollapsingFuturesNIO"
        ),
        .target(
            name: "CollapsingFuturesGRPC",
            dependencies: ["CollapsingFutures", .product(name: "GRPCCore", package: "grpc-swift-2", condition: .when(traits: ["GRPC"]))],
            path: "Sources/CollapsingFuturesGRPC"
        ),
        // The baseline: the same API with a lock per token, as the original
        // did with @synchronized (a serial DispatchQueue), and the same
        // sources compiled with Synchronization.Mutex (the strongest lock).
        // Folders whose files are symlinks (one source, several targets):
        // Sources/MutexLockedFutures -> Sources/DispatchLockedFutures;
        // Benchmarks/BenchBodiesDL and -MX -> Benchmarks/BenchBodiesLF;
        // Tests/LockedBehaviourTests and -MutexBehaviourTests -> Tests/BehaviourTests.
        // Two compilation flags, one meaning each, wherever a shared source
        // is compiled for a baseline: DISPATCH_LOCK (the DispatchQueue-lock
        // version) and MUTEX_LOCK (the Mutex version); neither set means the
        // lock-free library. The baselines do not link the lock-free core.
        .target(name: "DispatchLockedFutures", path: "Sources/DispatchLockedFutures",
                swiftSettings: [.define("DISPATCH_LOCK")]),
        .target(name: "MutexLockedFutures", path: "Sources/MutexLockedFutures",
                swiftSettings: [.define("MUTEX_LOCK")]),
        // Examples: `swift run Examples <name>`; their output is checked by ExamplesTests.
        // With the GRPC trait, `deadline-hop` and the roles of the
        // cross-process gRPC tests (ExamplesTests launches them).
        .target(name: "ExampleKit", dependencies: [
            "CollapsingFutures", "CollapsingFuturesNIO", "CollapsingFuturesGRPC",
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "GRPCCore", package: "grpc-swift-2", condition: .when(traits: ["GRPC"])),
            .product(name: "GRPCNIOTransportHTTP2Posix", package: "grpc-swift-nio-transport", condition: .when(traits: ["GRPC"])),
        ], path: "Sources/ExampleKit"),
        .executableTarget(name: "Examples", dependencies: ["ExampleKit"], path: "Sources/Examples"),
        // The fuzz harness, all under Tests/Fuzz: the operation-program
        // interpreter and its checks (FuzzKit), the libFuzzer driver (`fuzz`,
        // built by `make fuzz`), the corpus, and its replay in `swift test`.
        .target(name: "FuzzKit", dependencies: ["CollapsingFutures", "CollapsingFuturesTesting", "TestSupport"],
                path: "Tests/Fuzz/FuzzKit"),
        .executableTarget(name: "fuzz", dependencies: ["FuzzKit"], path: "Tests/Fuzz/Driver"),
        // `swift run -c release benchmarks`: the driver, the scenario bodies
        // (one source compiled per implementation) and C support (the malloc
        // interposer and the C floor).
        .executableTarget(
            name: "benchmarks",
            dependencies: [
                "BenchKit", "BenchBodiesLF", "BenchBodiesDL", "BenchBodiesMX", "BenchBodiesOC", "CBenchSupport",
                "CollapsingFutures", "CCollapsingFutures",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // `make bench-grpc` (the GRPC trait): the bridge's cost on a call.
                "CollapsingFuturesGRPC",
                .product(name: "GRPCCore", package: "grpc-swift-2", condition: .when(traits: ["GRPC"])),
                .product(name: "GRPCNIOTransportHTTP2Posix", package: "grpc-swift-nio-transport", condition: .when(traits: ["GRPC"])),
            ],
            path: "Benchmarks/benchmarks"
        ),
        .target(name: "BenchKit", path: "Benchmarks/BenchKit"),
        .target(name: "BenchBodiesLF", dependencies: ["BenchKit", "CollapsingFutures"], path: "Benchmarks/BenchBodiesLF"),
        .target(name: "BenchBodiesDL", dependencies: ["BenchKit", "DispatchLockedFutures"], path: "Benchmarks/BenchBodiesDL",
                swiftSettings: [.define("DISPATCH_LOCK")]),
        .target(name: "BenchBodiesMX", dependencies: ["BenchKit", "MutexLockedFutures"], path: "Benchmarks/BenchBodiesMX",
                swiftSettings: [.define("MUTEX_LOCK")]),
        .target(name: "BenchBodiesOC", dependencies: ["BenchKit", .product(name: "OpenCombine", package: "OpenCombine")],
                path: "Benchmarks/BenchBodiesOC"),
        .target(name: "CBenchSupport", dependencies: ["CCollapsingFutures"], path: "Benchmarks/CBenchSupport"),
        // Behaviour of the public API: one set of sources (Tests/BehaviourTests)
        // compiled against each implementation.
        .testTarget(
            name: "BehaviourTests",
            dependencies: ["CollapsingFutures", "TestSupport"],
            path: "Tests/BehaviourTests"
        ),
        .testTarget(
            name: "LockedBehaviourTests",
            dependencies: ["DispatchLockedFutures", "TestSupport"],
            path: "Tests/LockedBehaviourTests",
            swiftSettings: [.define("DISPATCH_LOCK")]
        ),
        .testTarget(
            name: "MutexBehaviourTests",
            dependencies: ["MutexLockedFutures", "TestSupport"],
            path: "Tests/MutexBehaviourTests",
            swiftSettings: [.define("MUTEX_LOCK")]
        ),
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        // Swift concurrency and lifetimes (lock-free module only).
        .testTarget(
            name: "ConcurrencyTests",
            dependencies: ["CollapsingFutures", "TestSupport"],
            path: "Tests/ConcurrencyTests"
        ),
        // Constructors and combinators (lock-free module only).
        .testTarget(
            name: "CombinatorTests",
            dependencies: ["CollapsingFutures", "CollapsingFuturesTesting", "TestSupport",
                           .product(name: "Clocks", package: "swift-clocks")],
            path: "Tests/CombinatorTests"
        ),
        .testTarget(name: "ExamplesTests", dependencies: [
            "ExampleKit", "CollapsingFutures", "CollapsingFuturesNIO", "CollapsingFuturesTesting",
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            // The Combine name clash and its way out, tested (DocSamplesCombine.swift).
            .product(name: "OpenCombine", package: "OpenCombine"),
            "CollapsingFuturesGRPC",
            .product(name: "GRPCCore", package: "grpc-swift-2", condition: .when(traits: ["GRPC"])),
        ], path: "Tests/ExamplesTests"),
        // The NIO bridges, on a real MultiThreadedEventLoopGroup.
        .testTarget(
            name: "NIOBridgeTests",
            dependencies: [
                "CollapsingFuturesNIO", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Tests/NIOBridgeTests"
        ),
        // The gRPC bridges in one process (the cross-process tests are
        // ExamplesTests' GRPCHopTests: they launch the Examples roles).
        .testTarget(
            name: "GRPCBridgeTests",
            dependencies: [
                "CollapsingFuturesGRPC", "TestSupport",
                .product(name: "GRPCCore", package: "grpc-swift-2", condition: .when(traits: ["GRPC"])),
            ],
            path: "Tests/GRPCBridgeTests"
        ),
        // Replays every committed fuzz corpus file through the interpreter.
        .testTarget(
            name: "FuzzReplayTests",
            dependencies: ["FuzzKit", "TestSupport"],
            path: "Tests/Fuzz/ReplayTests"
        ),
        // Properties of the lock-free core only (list memory under churn).
        .testTarget(
            name: "CoreTests",
            dependencies: ["CollapsingFutures", "TestSupport"],
            path: "Tests/CoreTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
