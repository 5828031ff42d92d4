import CCollapsingFutures
import Dispatch

extension Future {
    /// Blocks the calling thread until this future completes: returns the
    /// value or throws the failure.
    ///
    /// - Throws `FutureError.immortal` at once if the future is immortal, and
    ///   the moment it becomes immortal: it never waits for a future that
    ///   can never complete.
    /// - On the main thread (or the thread running the main queue) it runs
    ///   what the library sends to the main queue while it waits, in order:
    ///   handlers and continuations registered on the main thread or `on:
    ///   .main`, and `Future.dispatch(on: .main)` — so these still run, and
    ///   may be what completes this future. Blocks you queue on the main
    ///   queue yourself, and main-actor work (a continuation `on:
    ///   MainActor.shared` is a task), wait until the main thread is free:
    ///   Dispatch offers no public way to run the main queue from a thread
    ///   that waits. So on the main thread, do not wait for a future that
    ///   main-actor work completes (a `Future { … }` created in main-actor
    ///   code, such as a script's top level): debug builds say so on
    ///   standard error after the main thread has blocked here for a second.
    /// - Inside a handler or continuation it may block too, but the
    ///   callbacks queued behind that one on this thread (its later
    ///   siblings, what it started) run only after it returns: if one of
    ///   them is what completes this future, the wait never ends. After a
    ///   second blocked with such callbacks queued, it says so on standard
    ///   error (in release builds too). Prefer a continuation there.
    /// - On a thread of the timers' firing pool (in a handler a timer's
    ///   firing started), it holds one of its few threads: if every pool
    ///   thread blocks so while what would end the wait waits for one, the
    ///   wait never ends. After a second blocked while handlers wait for a
    ///   pool thread, it says so on standard error (in release builds too).
    ///   Register a handler that blocks on a queue of your own (`on:`).
    ///
    /// For command-line tools, tests and threads of your own. In async code
    /// use `get()`, which suspends instead of blocking a thread.
    public func wait() throws -> Value {
        if let r = result { return try r.get() }
        if _word & _wImmortal != 0 { throw _immortal(throwing: "wait()") }
        // Its later siblings: in this thread's drain, and, on the firing
        // pool, the rest of the group this handler belongs to. The pool's
        // other groups this thread took go back for other threads.
        let queuedBehind = cf_drain_waiting_count() + cf_firing_waiting_behind()
        cf_firing_blocking()
        // What settles on this thread while it blocks (the hops run below)
        // drains at once instead of queuing behind the blocked callback.
        let aside = cf_drain_set_aside()
        defer { cf_drain_put_back(aside) }
        let wake = DispatchSemaphore(value: 0)
        let onMain = _isOnMain()
        let outerWaiter = onMain ? _MainQueueHops.exchangeWaiter(wake) : nil
        defer { if onMain { _ = _MainQueueHops.exchangeWaiter(outerWaiter) } }
        completionToken._whenSettledInline { wake.signal() }
        // The semaphore counts every signal (the settle, and each hop sent
        // while this waits), so none is lost between a check and the wait.
        var told = queuedBehind == 0
        var toldPool = cf_firing_on_pool_thread() == 0
        #if DEBUG
        var toldMain = !onMain
        #else
        let toldMain = true
        #endif
        while _word & (_wCancelled | _wImmortal) == 0 {
            if onMain, _MainQueueHops.runOldest() { continue }
            if told && toldMain && toldPool {
                wake.wait()
            } else if wake.wait(timeout: .now() + .seconds(1)) == .timedOut {
                if !toldPool, case let waiting = cf_firing_queued(), waiting > 0 {
                    toldPool = true
                    _debugLog("""
                        CollapsingFutures: Future.wait() has blocked a thread of the timers' firing pool for a second \
                        while \(waiting) group(s) of handlers wait for a pool thread: if one of them completes \(self) \
                        and every pool thread blocks like this one, this wait never ends. Register a continuation \
                        instead, or register the handler that blocks on a queue of your own (on:).
                        """)
                }
                if !told {
                    told = true
                    _debugLog("""
                        CollapsingFutures: Future.wait() has blocked for a second inside a handler or continuation \
                        while \(queuedBehind) callback(s) queued behind it on this thread wait for it to return: if \
                        one of them completes \(self), this wait never ends. Register a continuation (then, thenDo, \
                        finallyDo) instead of blocking in one.
                        """)
                } else if !toldMain {
                    #if DEBUG
                    toldMain = true
                    _debugLog("""
                        CollapsingFutures: Future.wait() has blocked the main thread for a second, waiting for \
                        \(self). Main-actor work (a Future { … } or Task created in main-actor code, such as a \
                        script's top level; a continuation on MainActor.shared) and blocks queued on the main queue \
                        cannot run until it returns: if that future waits for one of them, this wait never ends. \
                        Create that work off the main actor, or await future.get() instead.
                        """)
                    #endif
                }
            }
        }
        if let r = result { return try r.get() }
        throw _immortal(throwing: "wait()")
    }
}
