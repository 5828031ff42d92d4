// swift run Examples <name>
// names: address-book, pipeline, retry, race, controller, main-queue; none: all but main-queue.
import ExampleKit
import Foundation

let names = Array(CommandLine.arguments.dropFirst())
if names == ["main-queue"] {
    // Synchronous, on the real main thread (no top-level await in this file,
    // so this code runs on the main thread before anything else).
    print("== main-queue")
    for line in mainQueueExample() { print(line) }
    exit(0)
}
let chosen = names.isEmpty ? Example.allCases : names.compactMap { Example(rawValue: $0) }
guard chosen.count == max(names.count, 1) || names.isEmpty else {
    print("unknown example; choose from: " + (Example.allCases.map(\.rawValue) + ["main-queue"]).joined(separator: ", "))
    exit(2)
}
Task {
    for e in chosen {
        print("== \(e.rawValue)")
        for line in await e.run() { print(line) }
    }
    exit(0)
}
dispatchMain()
