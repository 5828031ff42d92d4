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
    /// source: arming is a lock-free push, cancelling one
    /// compare-and-swap, and the wheel's driver thread sleeps until the
    /// earliest deadline, so a million pending deadlines cost what a
    /// thousand do per operation.
    /// Every timer of the library (`delayed`, `withTimeout`, `timeout`,
    /// `retrying`) is such a deadline. What its token cancels releases
    /// what it holds at once; the nodes stay linked no longer than
    /// <doc:Threading#What-a-registration-holds-once-it-stops-mattering> bounds.
    public convenience init(cancellingAfter duration: Duration) {
        _Delay.check(duration, "duration", of: "CancelTokenSource(cancellingAfter:)")
        self.init(_storage: Self._wheelStorage(after: duration, suspending: false))
    }

    /// `init(cancellingAfter:)` on `clock`: the token is cancelled once
    /// `duration` has passed on it.
    ///
    /// A `ContinuousClock` (the default everywhere) or a `SuspendingClock`
    /// deadline is an entry on the library's wheel for that clock, read
    /// from the clock's own OS clock (Linux: `CLOCK_BOOTTIME` and
    /// `CLOCK_MONOTONIC`), with the cost and the threading above. On any
    /// other clock (a test's clock that the test advances) the deadline
    /// waits through the clock's own `sleep(until:)` in a task on a thread
    /// of the library's own, which cancels the token when the sleep ends,
    /// never earlier; `cancel()` and releasing the source cancel that task
    /// at once, so nothing waits for the deadline. Passed is that clock's
    /// word: released at or after its deadline on `clock`, the token is
    /// cancelled.
    public convenience init<C: Clock<Duration>>(cancellingAfter duration: Duration, clock: C) {
        self.init(cancellingAfter: duration, clock: clock, of: "CancelTokenSource(cancellingAfter:clock:)")
    }

    /// A deadline at an instant of `clock`: the token is cancelled once
    /// `clock` reaches `deadline` (at once, already cancelled, when it has).
    /// As `init(cancellingAfter:clock:)` otherwise; an instant 100 years
    /// away or more never comes.
    public convenience init<C: Clock<Duration>>(cancellingAt deadline: C.Instant, clock: C) {
        self.init(cancellingAfter: max(clock.now.duration(to: deadline), .zero), clock: clock,
                  of: "CancelTokenSource(cancellingAt:clock:)")
    }

    /// Both forms: a wheel's deadline is the token's storage itself; on
    /// another clock the storage carries the deadline on the continuous
    /// clock, taken now, and a sleeping timer cancels it.
    private convenience init<C: Clock<Duration>>(cancellingAfter duration: Duration, clock: C, of function: String) {
        _Delay.check(duration, "duration", of: function)
        if C.self == ContinuousClock.self || C.self == SuspendingClock.self || duration == .zero
            || _Delay.nanoseconds(duration) == nil {
            self.init(_storage: Self._wheelStorage(after: duration, suspending: C.self == SuspendingClock.self))
            return
        }
        let storage = _DeadlinedTokenStorage(deadline: .now.advanced(by: duration))
        self.init(_storage: storage, timer: _TimerClock(clock).after(duration) { storage.settle(_wCancelled) })
    }

    /// A deadline source's storage on a wheel: cancelled already for a zero
    /// duration, a plain one for "never" (100 years or more), else the
    /// wheel's entry.
    @inline(__always)
    private static func _wheelStorage(after duration: Duration, suspending: Bool) -> _TokenStorage {
        if duration == .zero { return _TokenStorage(terminal: _wCancelled) }
        guard let ns = _Delay.nanoseconds(duration) else { return _TokenStorage(terminal: 0) }
        return suspending ? _SuspendingDeadlineStorage(cancellingAfter: ns) : _DeadlineStorage(cancellingAfter: ns)
    }
}
