// Helpers shared by every test target (the three behaviour builds included:
// nothing here depends on which implementation is under test).
import Foundation
import Synchronization

/// How long a test waits for what should happen soon before it fails. Only a
/// broken test waits this long: the bound stops it from hanging, and no test
/// asserts a duration. It is wide because the suites run in parallel on
/// loaded machines, under sanitizers that slow every thread several times.
public let patience: Duration = .seconds(60)

/// `patience` from now, as a deadline for a semaphore's wait.
public func patienceDeadline() -> DispatchTime { .now() + .seconds(Int(patience.components.seconds)) }

/// Polls until `condition` holds or `patience` runs out, yielding to other
/// tasks between polls.
public func eventually(_ condition: @Sendable () -> Bool) async -> Bool {
    let end = ContinuousClock.now + patience
    while !condition() {
        guard ContinuousClock.now < end else { return condition() }
        try? await Task.sleep(nanoseconds: 1_000_000)
    }
    return true
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

/// Polls until `condition` holds or `patience` (or `within`, shorter, for
/// a test that holds what other tests need meanwhile) runs out, from
/// synchronous code; for handlers dispatched to queues.
/// The first polls come 20 µs apart, growing to 1 ms: what another thread
/// is about to do is seen within microseconds, and a long wait costs little.
public func eventually(within: Duration = patience, _ condition: () -> Bool) -> Bool {
    let end = ContinuousClock.now + within
    var pause: UInt32 = 20
    while !condition() {
        guard ContinuousClock.now < end else { return condition() }
        usleep(pause)
        pause = min(pause * 2, 1000)
    }
    return true
}

/// Runs `body` on a thread of its own and awaits it without blocking the
/// caller's: for a test that blocks while Tasks it starts must run. Swift's
/// cooperative pool has one thread per core, and tests run on it in
/// parallel: two that block on a 2-core machine leave those Tasks no
/// thread.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { c in
        Thread.detachNewThread { c.resume(with: Result { try body() }) }
    }
}
