import CCollapsingFutures

extension CancelTokenSource {
    /// A deadline: a source whose token is cancelled once `duration` has
    /// passed, unless `cancel()` came first.
    ///
    /// ```swift
    /// let deadline = CancelTokenSource(cancellingAfter: .seconds(30))
    /// let reply = send(request, deadline.token)
    /// reply.finallyDo { _ in withExtendedLifetime(deadline) {} }  // keeps the deadline until the reply
    /// ```
    ///
    /// - The token is cancelled no earlier than `duration` after this
    ///   initializer is called, and at most about 1 ms plus scheduling
    ///   later (plus, in a burst of deadlines due together, the firing of
    ///   those ahead of it), by the timer's driver thread, whatever
    ///   handlers do: `isCancelled` shows it at once even while every
    ///   handler the library runs is blocked. Its handlers then run where
    ///   they were registered: `on:` a queue there, one registered on the
    ///   main thread on the main queue, and the rest on the library's
    ///   firing pool (a few threads, shared by every timer's handlers: one
    ///   that blocks for long should name a queue). The Threading article
    ///   has the whole contract.
    /// - A zero duration returns a source whose token is already cancelled.
    ///   A duration of 100 years or more never fires: the token is
    ///   cancelled only by `cancel()`.
    /// - `cancel()` before the deadline cancels the token at once, on the
    ///   calling thread, and the deadline goes with it.
    /// - Released before the deadline without `cancel()`, the source's
    ///   deadline goes at once — nothing stays armed, and nothing it holds
    ///   waits for the deadline — and the token becomes immortal,
    ///   discarding its handlers unrun, as for any source. Keep the source
    ///   for as long as the deadline should stand. Released at or after
    ///   its due instant, the token is cancelled, however far behind the
    ///   driver is: passed is the clock's word.
    /// - A negative duration is a programming error (stopped at once, with
    ///   a message, in release builds too).
    ///
    /// Threading: create, cancel and release a deadline source on any
    /// thread. Cost: the token's storage is also its entry on the
    /// library's timing wheel (cf_wheel.h), two objects in all with the
    /// source:
    /// arming is a lock-free push, cancelling one compare-and-swap, and one
    /// driver thread per process sleeps until the earliest deadline, so a
    /// million pending deadlines cost what a thousand do per operation.
    /// Every timer of the library (`delayed`, `withTimeout`, `timeout`,
    /// `retrying`) is such a deadline.
    public convenience init(cancellingAfter duration: Duration) {
        _Delay.check(duration, "duration", of: "CancelTokenSource(cancellingAfter:)")
        if duration == .zero { self.init(_storage: _TokenStorage(terminal: _wCancelled)); return }
        guard let ns = _Delay.nanoseconds(duration) else { self.init(_storage: _TokenStorage(terminal: 0)); return }
        self.init(_storage: _DeadlineStorage(cancellingAfter: ns))
    }
}
