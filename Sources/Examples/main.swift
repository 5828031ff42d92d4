// swift run Examples <name>
// names: address-book, pipeline, retry, retry-failures, race, controller, view-model, and the
// main-thread ones: main-queue, blocked-main, client-wait, client-semaphore;
// nio-bridge (built with the package's NIO trait); deadline-hop (with the GRPC trait);
// wait-in-handler, wait-for-main-actor (warn after a second, give up after two), wait-on-timer-pool
// (warns after a second, gives up after three);
// `misuse <backoff-nan|negative-delay|force-get-pending|retry-negative-delay>` dies
// with the library's message; none: all but the main-thread ones.
import ExampleKit
import Foundation

let names = Array(CommandLine.arguments.dropFirst())
// Synchronous, on the real main thread (no top-level await in this file, so
// this code runs on the main thread before anything else):
// - main-queue: a handler registered here runs on the main queue;
// - blocked-main: the main thread blocks (a synchronous command-line main),
//   and the library's bookkeeping still completes;
// - client-wait: 200 requests whose retries run on the main queue, waited
//   for with wait(), which runs them;
// - client-semaphore: the same with a semaphore of the user's own: nothing
//   runs the retries, and debug builds say so on standard error;
// - wait-in-handler: a handler waiting for what its later sibling does;
// - wait-for-main-actor: the main thread waiting for main-actor work;
// - wait-on-timer-pool: handlers a timer started, each waiting, so that
//   the firing pool's threads all block.
let onTheMainThread: KeyValuePairs<String, () -> [String]> = [
    "main-queue": mainQueueExample,
    "blocked-main": blockedMainExample,
    "client-wait": clientWaitExample,
    "client-semaphore": { clientSemaphoreExample(seconds: 3) },
    "wait-in-handler": { waitInHandlerExample(seconds: 2) },
    "wait-for-main-actor": { waitForMainActorExample(seconds: 2) },
    "wait-on-timer-pool": { waitOnTimerPoolExample(seconds: 3) },
]
if names.count == 1, let example = onTheMainThread.first(where: { $0.key == names[0] }) {
    print("== \(example.key)")
    for line in example.value() { print(line) }
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
#if GRPC
// deadline-hop runs this executable three times, in the roles grpc-b,
// grpc-a and grpc-client (which the cross-process tests run too).
if names == ["deadline-hop"] {
    print("== deadline-hop")
    do {
        for line in try deadlineHopExample(executable: Bundle.main.executableURL!) { print(line) }
    } catch {
        print("failed: \(error)")
        exit(1)
    }
    exit(0)
}
if names.first?.hasPrefix("grpc-") == true {
    Task {
        do {
            guard try await runHopRole(names) else {
                print("unknown role: \(names.joined(separator: " "))")
                exit(2)
            }
            exit(0)
        } catch {
            print("failed: \(error)")
            exit(1)
        }
    }
    dispatchMain()
}
#endif
if names.count == 2 && names[0] == "misuse" { misuseExample(names[1]) }
let chosen = names.isEmpty ? Example.allCases : names.compactMap { Example(rawValue: $0) }
guard chosen.count == max(names.count, 1) || names.isEmpty else {
    print("unknown example; choose from: " + (Example.allCases.map(\.rawValue) + onTheMainThread.map(\.key)).joined(separator: ", "))
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
