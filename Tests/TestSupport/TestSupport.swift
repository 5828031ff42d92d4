// Helpers shared by every test target (the three behaviour builds included:
// nothing here depends on which implementation is under test).
import Foundation
import Synchronization

/// Polls (bounded) until `condition` holds, yielding to other tasks. The bound
/// only stops a broken test from hanging; no test asserts a duration.
public func eventually(_ condition: @Sendable () -> Bool) async -> Bool {
    for _ in 0..<2000 {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 1_000_000)
    }
    return condition()
}

/// Runs `body(i)` on `n` threads at once (released together), waits for all,
/// and releases `body`'s captures before returning (threads may outlive the
/// call briefly; they must not keep test objects alive for leak checks).
public func onThreads(_ n: Int, _ body: @escaping @Sendable (Int) -> Void) {
    final class Box: @unchecked Sendable { var body: (@Sendable (Int) -> Void)? }
    let box = Box()
    box.body = body
    let group = DispatchGroup()
    let start = DispatchSemaphore(value: 0)
    for i in 0..<n {
        group.enter()
        Thread.detachNewThread {
            start.wait()
            box.body!(i)
            group.leave()
        }
    }
    for _ in 0..<n { start.signal() }
    group.wait()
    box.body = nil
}

/// Waits (bounded) until `condition` holds, from synchronous code; for
/// handlers dispatched to queues. The bound only stops a broken test from
/// hanging; no test asserts a duration.
public func eventually(_ condition: () -> Bool) -> Bool {
    for _ in 0..<2000 {
        if condition() { return true }
        usleep(1000)
    }
    return condition()
}
