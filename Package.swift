// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "CollapsingFutures",
    products: [
        .library(name: "CollapsingFutures", targets: ["CollapsingFutures"]),
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
        // Behaviour of the public API, shared with the Dispatch-lock version.
        .testTarget(
            name: "BehaviourTests",
            dependencies: ["CollapsingFutures"],
            path: "Tests/BehaviourTests"
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
