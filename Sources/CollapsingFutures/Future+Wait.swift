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
    ///   the handlers and continuations bound for the main queue while it
    ///   waits, in order, so what was registered on the main thread still
    ///   runs — and may be what completes this future. (Main-actor work,
    ///   such as a continuation `on: MainActor.shared`, is a task: it waits
    ///   for the main actor, which a blocked main thread does not serve.)
    /// - Inside a handler or continuation, while callbacks queued behind it
    ///   on this thread wait for it to return (its later siblings, or what
    ///   it started), it stops with a message instead of blocking: one of
    ///   them may be what completes this future, and none can run while it
    ///   waits. Register a continuation instead.
    ///
    /// For command-line tools, tests and threads of your own. In async code
    /// use `get()`, which suspends instead of blocking a thread.
    public func wait() throws -> Value {
        if let r = result { return try r.get() }
        if _word & _wImmortal != 0 { throw _immortal(throwing: "wait()") }
        if cf_drain_has_waiting() != 0 {
            fatalError("""
                Future.wait() inside a handler or continuation while callbacks queued behind it on this thread \
                wait for it to return: if one of them completes \(self), the wait never ends. Register a \
                continuation (then, thenDo, finallyDo) instead of blocking in one.
                """)
        }
        let wake = DispatchSemaphore(value: 0)
        let onMain = _isOnMain()
        let outerWaiter = onMain ? _MainQueueHops.exchangeWaiter(wake) : nil
        completionToken._whenSettledInline { wake.signal() }
        // The semaphore counts every signal (the settle, and each hop sent
        // while this waits), so none is lost between a check and the wait.
        while _word & (_wCancelled | _wImmortal) == 0 {
            if onMain, _MainQueueHops.runOldest() { continue }
            wake.wait()
        }
        if onMain { _ = _MainQueueHops.exchangeWaiter(outerWaiter) }
        if let r = result { return try r.get() }
        throw _immortal(throwing: "wait()")
    }
}
