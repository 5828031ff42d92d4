// swift run Examples <name>
// names: address-book, pipeline, retry, retry-failures, race, controller, view-model, and the
// main-thread ones: main-queue, blocked-main, client-wait, client-semaphore;
// nio-bridge (built with the package's NIO trait);
// wait-in-handler (warns after a second, gives up after two);
// `misuse <backoff-nan|negative-delay|force-get-pending|retry-negative-delay>` dies
// with the library's message; none: all but the main-thread ones.
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
if names == ["blocked-main"] {
    // The main thread blocks (a synchronous command-line main): nothing
    // drains the main queue while the library's bookkeeping completes.
    print("== blocked-main")
    for line in blockedMainExample() { print(line) }
    exit(0)
}
if names == ["client-wait"] {
    // 200 requests whose retries run on the main queue; the main thread
    // waits with wait(), which runs them.
    print("== client-wait")
    for line in clientWaitExample() { print(line) }
    exit(0)
}
if names == ["client-semaphore"] {
    // The same with a semaphore of the user's own: nothing runs the
    // retries, and debug builds say so on standard error.
    print("== client-semaphore")
    for line in clientSemaphoreExample(seconds: 3) { print(line) }
    exit(0)
}
if names == ["wait-in-handler"] {
    print("== wait-in-handler")
    for line in waitInHandlerExample(seconds: 2) { print(line) }
    exit(0)
}
#if NIO
if names == ["nio-bridge"] {
    Task {
        print("== nio-bridge")
        for line in await nioBridgeExample() { print(line) }
        exit(0)
    }
    dispatchMain()
}
#endif
if names.count == 2 && names[0] == "misuse" { misuseExample(names[1]) }
let chosen = names.isEmpty ? Example.allCases : names.compactMap { Example(rawValue: $0) }
guard chosen.count == max(names.count, 1) || names.isEmpty else {
    print("unknown example; choose from: " + (Example.allCases.map(\.rawValue) + ["main-queue", "blocked-main", "client-wait", "client-semaphore", "wait-in-handler"]).joined(separator: ", "))
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
