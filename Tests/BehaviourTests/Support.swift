// Shared by the behaviour suites of the three implementations (the lock-free
// CollapsingFutures, DispatchLockedFutures and MutexLockedFutures): the same
// test sources are compiled into three test targets, one per module,
// selected by DISPATCH_LOCK / MUTEX_LOCK.
#if DISPATCH_LOCK
import DispatchLockedFutures
#elseif MUTEX_LOCK
import MutexLockedFutures
#else
import CollapsingFutures
#endif
import Synchronization
import Foundation

/// Counts events (handler runs, deinits) across threads.
final class Counter: Sendable {
    private let n = Atomic<Int>(0)
    init() {}
    func increment() { n.add(1, ordering: .sequentiallyConsistent) }
    var value: Int { n.load(ordering: .sequentiallyConsistent) }
}

/// An object whose deinit is counted: leak tests capture these.
final class Tracked: Sendable {
    let deinits: Counter
    init(_ deinits: Counter) { self.deinits = deinits }
    deinit { deinits.increment() }
    func touch() {}
}

/// A consumer that stores a token or future and registers handlers capturing
/// itself: the seed cycle `self -> token -> handler -> self`.
final class Consumer: @unchecked Sendable {
    let deinits: Counter
    var token: CancelToken?
    var future: Future<Int>?
    let ran = Counter()
    init(_ deinits: Counter) { self.deinits = deinits }
    deinit { deinits.increment() }
}

/// Thread-safe ordered log (NSLock: ThreadSanitizer sees pthread mutexes,
/// not Synchronization.Mutex's futex).
final class Log<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    init() {}
    func append(_ x: T) { lock.withLock { items.append(x) } }
    var all: [T] { lock.withLock { items } }
}

struct TestError: Error, Equatable { var code = 1 }

/// Runs `body(i)` on `n` threads at once (released together), waits for all,
/// and releases `body`'s captures before returning (threads may outlive the
/// call briefly; they must not keep test objects alive for leak checks).
func onThreads(_ n: Int, _ body: @escaping @Sendable (Int) -> Void) {
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

/// Waits (bounded) until `condition` holds; for handlers dispatched to queues.
func eventually(_ condition: () -> Bool) -> Bool {
    for _ in 0..<2000 {
        if condition() { return true }
        usleep(1000)
    }
    return condition()
}

/// Whether the main actor executes on the process's main thread here.
func mainActorRunsOnMainThread() -> Bool {
    let sem = DispatchSemaphore(value: 0)
    final class Flag: @unchecked Sendable { var v = false }
    let flag = Flag()
    Task { @MainActor in flag.v = Thread.isMainThread; sem.signal() }
    return sem.wait(timeout: .now() + 2) == .success && flag.v
}
