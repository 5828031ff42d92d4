import CCollapsingFutures
import Dispatch

/// Every handler and continuation the threading rule sends to the main
/// queue, in the order sent.
///
/// Each hop is kept here with a ticket (its number in sending order), and
/// one block is queued on the main queue for it, in the same order (under
/// the same lock). That block runs every hop up to its ticket that has not
/// run yet: normally just its own. So the main queue runs hops in order,
/// each no later than its place among the main queue's other blocks, and
/// `Future.wait()` on the main thread runs them too while it blocks (a
/// blocked main thread drains no queue); a block whose hop it already ran
/// has nothing left to do. Hops run on the main queue's thread only, so
/// one at a time.
///
/// Debug builds also watch for hops that nobody runs: when one has waited
/// a second, they say so on standard error, once per stall (see `_stalled`).
enum _MainQueueHops {
    private struct State {
        var hops: [@Sendable () -> Void] = []
        /// The oldest hop still waiting is `hops[head]`.
        var head = 0
        /// Hops sent and hops run, since the process started.
        var sent = 0
        var ran = 0
        /// The semaphore of the innermost `wait()` blocking the main thread.
        var waiter: DispatchSemaphore?
        /// Debug builds: whether a stall check is scheduled, and whether
        /// this stall (hops waiting since the queue was last empty) was told.
        var watching = false
        var told = false
    }
    private static let state = _Locked(State())

    /// Whether `queue` is the main queue (`DispatchQueue.main` is a new
    /// wrapper at each use on Linux, so identity cannot tell).
    static func isMain(_ queue: DispatchQueue) -> Bool {
        queue.getSpecific(key: _mainQueueKey) == true
    }

    /// Runs `work` on the main queue after what was sent before it.
    static func send(_ work: @escaping @Sendable () -> Void) {
        let (waiter, ticket, watch) = state.withLock { s in
            s.hops.append(work)
            s.sent += 1
            // Queued under the lock: blocks reach the main queue in ticket order.
            let ticket = s.sent
            DispatchQueue.main.async { runThrough(ticket) }
            #if DEBUG
            defer { s.watching = true }
            return (s.waiter, ticket, !s.watching)
            #else
            return (s.waiter, ticket, false)
            #endif
        }
        waiter?.signal()
        if watch { watchForStalls(after: ticket) }
    }

    /// Runs the hops sent up to `ticket` that have not run yet.
    private static func runThrough(_ ticket: Int) {
        while state.withLock({ $0.ran < ticket }) { runOldest() }
    }

    /// Runs the oldest hop still waiting; false if there was none.
    @discardableResult
    static func runOldest() -> Bool {
        let work: (@Sendable () -> Void)? = state.withLock { s in
            guard s.head < s.hops.count else { return nil }
            let w = s.hops[s.head]
            s.head += 1
            s.ran += 1
            if s.head == s.hops.count {
                s.hops.removeAll(keepingCapacity: s.hops.count <= 1024)
                s.head = 0
            } else if s.head >= 1024 && s.head * 2 >= s.hops.count {
                s.hops.removeFirst(s.head)
                s.head = 0
            }
            return w
        }
        guard let work else { return false }
        work()
        return true
    }

    /// Makes `semaphore` the one signalled when a hop is sent (for a
    /// `wait()` on the main thread); returns the one it replaces (an outer
    /// `wait()`'s, restored when the inner one ends).
    static func exchangeWaiter(_ semaphore: DispatchSemaphore?) -> DispatchSemaphore? {
        state.withLock { s in
            defer { s.waiter = semaphore }
            return s.waiter
        }
    }

    /// Debug builds: one second after hop number `sent` was sent, says so if
    /// it has not run yet (once until the queue empties), then looks again
    /// while hops wait.
    private static func watchForStalls(after sent: Int) {
        #if DEBUG
        _ = _Timer.after(.seconds(1)) {
            let (tell, waiting, next) = state.withLock { s -> (Bool, Int, Int?) in
                let waiting = s.hops.count - s.head
                if waiting == 0 {
                    s.watching = false
                    s.told = false
                    return (false, 0, nil)
                }
                let tell = s.ran < sent && !s.told
                if tell { s.told = true }
                return (tell, waiting, s.sent)
            }
            if tell { _stalled(waiting) }
            if let next { watchForStalls(after: next) }
        }
        #endif
    }
}

/// Debug builds: what is said when main-queue hops have waited over a
/// second (a breakpoint here finds who blocks the main thread).
func _stalled(_ waiting: Int) {
    _debugLog("""
        CollapsingFutures: \(waiting) handler(s) or continuation(s) bound for the main queue have waited over \
        a second: is the main thread blocked (a semaphore, sleep, a synchronous wait)? A handler registered \
        on the main thread runs on the main queue. Block with future.wait(), which runs them while it waits, \
        or register them with on: .completingThread (or a queue of your own).
        """)
}

/// Runs `work` on `queue`; on the main queue after every hop sent there
/// before it (`_MainQueueHops`, which `Future.wait()` serves).
func _hop(to queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) {
    if _MainQueueHops.isMain(queue) { _MainQueueHops.send(work) } else { queue.async(execute: work) }
}

/// Marks the main queue, so that code it runs counts as "on the main thread"
/// in the threading rule even where another thread drains it: on Linux an
/// async `main` (or `dispatchMain()`) retires the main thread, and worker
/// threads drain the main queue, so the main actor runs off the main thread
/// (as it does under `swift test`).
let _mainQueueKey: DispatchSpecificKey<Bool> = {
    let key = DispatchSpecificKey<Bool>()
    DispatchQueue.main.setSpecific(key: key, value: true)
    return key
}()

/// Whether the caller is on the main thread or running on the main queue:
/// the threading rule's "main thread". On the main thread this is a cached
/// thread-local read; elsewhere Dispatch is asked too (about 9 ns).
@inline(__always) func _isOnMain() -> Bool {
    cf_is_main_thread() != 0 || DispatchQueue.getSpecific(key: _mainQueueKey) != nil
}
