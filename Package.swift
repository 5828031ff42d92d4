// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "CollapsingFutures",
    products: [
        .library(name: "CollapsingFutures", targets: ["CollapsingFutures"]),
        .library(name: "DispatchLockedFutures", targets: ["DispatchLockedFutures"]),
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
        // The baseline: the same API with a lock per token, as the original
        // did with @synchronized (a serial DispatchQueue), and the same
        // sources compiled with Synchronization.Mutex (the strongest lock).
        .target(name: "DispatchLockedFutures", path: "Sources/DispatchLockedFutures"),
        .target(
            name: "MutexLockedFutures",
            path: "Sources/MutexLockedFutures",
            swiftSettings: [.define("MUTEX_LOCK")]
        ),
        // Behaviour of the public API: one set of sources (Tests/BehaviourTests)
        // compiled against each implementation.
        .testTarget(
            name: "BehaviourTests",
            dependencies: ["CollapsingFutures"],
            path: "Tests/BehaviourTests"
        ),
        .testTarget(
            name: "LockedBehaviourTests",
            dependencies: ["DispatchLockedFutures"],
            path: "Tests/LockedBehaviourTests",
            swiftSettings: [.define("LOCKED")]
        ),
        .testTarget(
            name: "MutexBehaviourTests",
            dependencies: ["MutexLockedFutures"],
            path: "Tests/MutexBehaviourTests",
            swiftSettings: [.define("MUTEX_LOCKED")]
        ),
        // Properties of the lock-free core only (list memory under churn).
        .testTarget(
            name: "CoreTests",
            dependencies: ["CollapsingFutures"],
            path: "Tests/CoreTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
