// Helpers shared by every test target (the three behaviour builds included:
// nothing here depends on which implementation is under test).
import Foundation
import Synchronization

/// Counts events (handler runs, deinits) across threads.
public final class Counter: Sendable {
    private let n = Atomic<Int>(0)
    public init() {}
    public func increment() { n.add(1, ordering: .sequentiallyConsistent) }
    public var value: Int { n.load(ordering: .sequentiallyConsistent) }
}

/// An object whose deinit is counted: leak tests capture these.
public final class Tracked: Sendable {
    public let deinits: Counter
    public init(_ d: Counter) { deinits = d }
    deinit { deinits.increment() }
    public func touch() {}
}

public struct Boom: Error, Equatable {
    public var code: Int
    public init(code: Int = 0) { self.code = code }
}

/// Polls (bounded) until `condition` holds, yielding to other tasks. The bound
/// only stops a broken test from hanging; no test asserts a duration.
public func eventually(_ condition: @Sendable () -> Bool) async -> Bool {
    for _ in 0..<2000 {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 1_000_000)
    }
    return condition()
}

/// Thread-safe ordered log (NSLock: ThreadSanitizer sees pthread mutexes,
/// not Synchronization.Mutex's futex).
public final class Log<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    public init() {}
    public func append(_ x: T) { lock.withLock { items.append(x) } }
    public var all: [T] { lock.withLock { items } }
}

public struct TestError: Error, Equatable {
    public var code = 1
    public init(code: Int = 1) { self.code = code }
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

/// Whether the main actor executes on the process's main thread here.
public func mainActorRunsOnMainThread() -> Bool {
    let sem = DispatchSemaphore(value: 0)
    final class Flag: @unchecked Sendable { var v = false }
    let flag = Flag()
    Task { @MainActor in flag.v = Thread.isMainThread; sem.signal() }
    return sem.wait(timeout: .now() + 2) == .success && flag.v
}
