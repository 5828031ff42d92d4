import CCollapsingFutures
import Dispatch

// Every output here follows one rule: it is completed only through an owner
// whose death makes it immortal (a `FutureSource`, or a continuation node
// that immortalizes its output when discarded), and that owner is held only
// by the registrations that can still complete it. When every one of them is
// discarded, the output becomes immortal and what was registered on it is
// freed. Bookkeeping registrations run inline on the completing thread (no
// main-queue hop) and are removed once the output settles either way.

extension Future {
    /// Runs `operation` on `queue` and completes with its outcome.
    public static func dispatch(on queue: DispatchQueue, _ operation: @escaping @Sendable () throws -> Value) -> Future {
        let out = Future()
        _hop(to: queue) { out._trySet(Result { try operation() }) }
        return out
    }

    /// Succeeds with `value` after `delay`, or fails with `CancellationError`
    /// if `unless` is cancelled first (the timer is cancelled and `value`
    /// released at once).
    ///
    /// A zero delay returns a future that already succeeded, even when
    /// `unless` is already cancelled (the delay is checked first, as
    /// `withTimeout` checks a zero timeout). A delay of 100 years or more
    /// never fires: the result is immortal unless `unless` can still cancel
    /// it. A negative delay is a programming error.
    /// Its registrations release what they hold the moment they stop
    /// mattering; their nodes stay linked no longer than
    /// <doc:Threading#What-a-registration-holds-once-it-stops-mattering> bounds.
    /// `clock` measures the delay: `ContinuousClock` by default; a
    /// `SuspendingClock`, or any other clock (a test's, which the test
    /// advances), as for `CancelTokenSource(cancellingAfter:clock:)`.
    public static func delayed(_ value: Value, by delay: Duration, unless: CancelToken = .immortal,
                               clock: some Clock<Duration> = ContinuousClock()) -> Future {
        _delayed(value, by: delay, unless: unless, clock: _TimerClock(clock))
    }

    /// `delayed`, on a clock of erased type (`_TimerClock`).
    static func _delayed(_ value: Value, by delay: Duration, unless: CancelToken, clock: _TimerClock) -> Future {
        _Delay.check(delay, "delay", of: "Future.delayed(_:by:unless:)")
        if delay == .zero { return .succeeded(value) }
        if unless.isCancelled { return .cancelled }
        let source = FutureSource<Value>()
        let out = source.future
        let timer = clock.after(delay) { source.trySetResult(value) }
        unless._whenCancelledInline(untilSettled: out.completionToken) {
            timer?.cancel()
            source.trySetFailedWithCancel()
        }
        return out
    }

    /// Until-style timeout: `operation` gets a token that lasts as long as
    /// its result should: until `until` is cancelled.
    ///
    /// - If the result is not in after `timeout`, that token is cancelled
    ///   first, then this fails with `TimeoutError` (a late result is cleaned
    ///   up through its token).
    /// - If `until` is cancelled first, the token is cancelled and this fails
    ///   with `CancellationError` at once; if it already is, `operation` is
    ///   not run. A zero timeout fails with `TimeoutError` without running it
    ///   (checked first, as the original does).
    /// - If the operation fails, its token is cancelled (nothing stays
    ///   registered on `until`) and the failure is forwarded.
    /// - A delivered success keeps its token live until `until` is
    ///   cancelled, even when the timer fires as it arrives; only that
    ///   token's lifetime stays registered on `until`, not the result.
    /// - A timeout of 100 years or more never fires. If the operation's
    ///   future is immortal and neither the timer nor `until` can fire, the
    ///   result is immortal.
    /// Its registrations release what they hold the moment they stop
    /// mattering; their nodes stay linked no longer than
    /// <doc:Threading#What-a-registration-holds-once-it-stops-mattering> bounds.
    /// `clock` measures the timeout: `ContinuousClock` by default; a
    /// `SuspendingClock`, or any other clock (a test's, which the test
    /// advances), as for `CancelTokenSource(cancellingAfter:clock:)`.
    public static func withTimeout(_ timeout: Duration, until: CancelToken, clock: some Clock<Duration> = ContinuousClock(),
                                   _ operation: @escaping @Sendable (CancelToken) -> Future) -> Future {
        _withTimeout(timeout, until: until, clock: _TimerClock(clock), operation)
    }

    /// `withTimeout(_:until:clock:_:)`, on a clock of erased type (`_TimerClock`).
    static func _withTimeout(_ timeout: Duration, until: CancelToken, clock: _TimerClock,
                             _ operation: @escaping @Sendable (CancelToken) -> Future) -> Future {
        if let refused = _refused(timeout, until, of: "Future.withTimeout(_:until:_:)") { return refused }
        let source = FutureSource<Value>()
        let out = source.future
        let lifetime = CancelTokenSource()
        /// Claim the result, cancel the operation's token, then publish: so
        /// whoever sees the result sees the token cancelled, and what the
        /// cancel triggers (the operation failing) cannot publish first.
        /// `endsLifetimeIfLost`: `until` and the operation's failure end the
        /// token whoever claimed the result; the timer only when it claims
        /// it (one that fired as the operation succeeded, its payload
        /// already handed to its queue past `cancel()`, must not end
        /// the lifetime of the success delivered first).
        @Sendable func end(_ r: Result<Value, any Error>, endsLifetimeIfLost: Bool = true) {
            let claimed = out._takeClaim()
            if claimed != nil || endsLifetimeIfLost { lifetime.cancel() }
            claimed?._withUnsafeGuaranteedRef { $0._complete(r) }
        }
        // Until the result settles, `until` fails it (claiming it before it
        // cancels the operation's token, so what that cancel triggers
        // cannot publish first); the registration goes once it settles, so a
        // long-lived `until` keeps no delivered result or its value.
        until._whenCancelledInline(untilSettled: out.completionToken) {
            withExtendedLifetime(source) { end(.failure(CancellationError())) }
        }
        let timer = clock.after(timeout) {
            withExtendedLifetime(source) { end(.failure(TimeoutError(after: timeout)), endsLifetimeIfLost: false) }
        }
        out._cancelOnSettle(timer)
        let result = operation(lifetime.token)
        let arrival = result.completionToken._whenSettledInline {
            // Immortal: it will never produce anything. The timer or
            // `until` still fails the result; with neither able to, nobody
            // holds its source any more and the result is immortal.
            guard result._word & _wCancelled != 0 else { return }
            switch result._result {
            case .success(let v):
                timer?.cancel()
                // A late success (timed out) is cleaned up by its cancelled
                // token. A delivered one lasts until `until`: a registration
                // holding only the lifetime's source, made after the result
                // settled (a cancel of `until` meanwhile either ran the
                // registration above, or is seen here and runs this at once).
                if source.trySetResult(v) {
                    until._whenCancelledInline(unless: lifetime.token) { lifetime.cancel() }
                }
            case .failure(let e):
                timer?.cancel()
                withExtendedLifetime(source) { end(.failure(e)) }
            }
        }
        // Once the result is settled (the timer or `until` first), what the
        // operation's future says no longer matters: the registration goes,
        // rather than stay on a future that ignores its cancelled token.
        out.completionToken._whenSettledInline { arrival.remove() }
        return out
    }

    /// Unless-style timeout: `operation` gets a token that is cancelled when
    /// the timeout or `unless` comes first; then this waits for the operation
    /// to confirm and forwards what it says.
    ///
    /// - A late success is delivered, never dropped (it may hold a resource).
    /// - A `CancellationError` from the operation becomes `TimeoutError`
    ///   unless `unless` was cancelled (then it stays `CancellationError`),
    ///   as in the original: even if the timer's own work has not run yet.
    ///   With a timeout that never fires it stays as it is. Other failures
    ///   are forwarded as they are.
    /// - If the operation's future is or becomes immortal, the timeout or
    ///   `unless` fails this at once; with neither able to fire, this is
    ///   immortal too.
    /// - An already-cancelled `unless` fails with `CancellationError` and a
    ///   zero timeout with `TimeoutError`, without running `operation`.
    /// - The operation's token is cancelled, if at all, before its answer is
    ///   delivered: after that neither the timer (even one that fired as it
    ///   answered) nor `unless` cancels it.
    /// Its registrations release what they hold the moment they stop
    /// mattering; their nodes stay linked no longer than
    /// <doc:Threading#What-a-registration-holds-once-it-stops-mattering> bounds.
    /// `clock` measures the timeout: `ContinuousClock` by default; a
    /// `SuspendingClock`, or any other clock (a test's, which the test
    /// advances), as for `CancelTokenSource(cancellingAfter:clock:)`.
    @inlinable
    public static func withTimeout(_ timeout: Duration, unless: CancelToken = .immortal,
                                   clock: some Clock<Duration> = ContinuousClock(),
                                   _ operation: @escaping @Sendable (CancelToken) -> Future) -> Future {
        _withTimeout(timeout, unless: unless, clock: _TimerClock(clock), operation) {
            _UnlessTimeout(timeout: timeout, unless: unless, output: Future())
        }
    }

    /// `withTimeout(_:unless:clock:_:)`, on a clock of erased type
    /// (`_TimerClock`), with its node made by the caller's specialized
    /// code (`_UnlessTimeout`).
    @usableFromInline
    static func _withTimeout(_ timeout: Duration, unless: CancelToken, clock: _TimerClock,
                             _ operation: @escaping @Sendable (CancelToken) -> Future,
                             _ makeTiming: () -> _UnlessTimeout<Value>) -> Future {
        if let refused = _refused(timeout, unless, of: "Future.withTimeout(_:unless:_:)") { return refused }
        let timing = makeTiming()
        timing.timer = clock.after(timeout) { timing.timerFired() }
        // No registration on the output: it settles only through the
        // node, and each of its paths that does not fire the timer cancels it.
        unless._whenCancelledInline(untilSettled: timing.output.completionToken) {
            timing.unlessCancelled()
        }
        timing.start(operation(timing.token))
        return timing.output
    }

    /// Succeeds with every value, in order, once all succeed; fails as soon
    /// as one fails, with that failure; fails with `CancellationError` if
    /// `unless` is cancelled first. An input that has already failed when
    /// this is called fails it wherever it stands in `futures`. Otherwise,
    /// if an input is immortal, so is the result — once `unless` can no
    /// longer fail it (until then, cancelling `unless` fails it with
    /// `CancellationError`), as for a continuation of an immortal future.
    /// Registrations still waiting on the other inputs are removed as soon
    /// as the result settles or an input is immortal. O(n).
    @inlinable
    public static func all(_ futures: some Sequence<Future>, unless: CancelToken = .immortal) -> Future<[Value]> {
        _all(Array(futures), unless: unless)._followingUnless(unless)
    }

    /// `all`'s gathered output, before `_followingUnless` (for the variadic
    /// `all`, which removes its own registrations when this settles).
    @inlinable
    static func _all(_ inputs: [Future], unless: CancelToken) -> Future<[Value]> {
        _gather(inputs, unless: unless) { out in
            // An input that has already failed decides the result wherever
            // it stands in the sequence: an immortal input before it, which
            // makes the output immortal at once, must not hide it (the
            // outcome must not depend on the inputs' order).
            for f in inputs where _isFailure(f._word) {
                out._trySet(.failure(f._root._storedError))
                return []
            }
            let slots = _Slots<Value>(inputs.count)
            var registrations: [CancelRegistration] = []
            registrations.reserveCapacity(inputs.count)
            for (i, f) in inputs.enumerated() {
                registrations.append(_ContinuationNode._make(output: out) {
                    if let v = f._value(passingFailureTo: out), slots.fill(i, v) { out._trySet(.success(slots.values())) }
                }._register(on: f, .library))
            }
            return registrations
        }
    }

    /// Completes with the same futures once every one has completed (either
    /// way); fails with `CancellationError` if `unless` is cancelled first.
    /// Immortal if an input is, once `unless` can no longer fail it (as
    /// `all`).
    @inlinable
    public static func allSettled(_ futures: some Sequence<Future>, unless: CancelToken = .immortal) -> Future<[Future]> {
        _settled(Array(futures), unless: unless) { $0 }
    }

    /// Every input's outcome, in order, once every one has completed (either
    /// way): `allSettled` with the outcomes read out. Fails with
    /// `CancellationError` if `unless` is cancelled first; immortal if an
    /// input is, once `unless` can no longer fail it (as `allSettled`).
    @inlinable
    public static func allSettledResults(_ futures: some Sequence<Future>,
                                         unless: CancelToken = .immortal) -> Future<[Result<Value, any Error>]> {
        _settled(Array(futures), unless: unless) { $0.map(\._result) }
    }

    /// What `allSettled` and `allSettledResults` share: `settled(inputs)`
    /// once the last input completes.
    @inlinable
    static func _settled<E>(_ inputs: [Future], unless: CancelToken,
                            _ settled: @escaping @Sendable ([Future]) -> [E]) -> Future<[E]> {
        _gather(inputs, unless: unless) { out in
            let remaining = _Countdown(inputs.count)
            return inputs.map { f in
                _ContinuationNode._make(output: out) {
                    if remaining.tick() { out._trySet(.success(settled(inputs))) }
                }._register(on: f, .library)
            }
        }._followingUnless(unless)
    }

    /// What both `withTimeout` forms check before anything runs: the
    /// timeout's value (a misuse stops with a message naming `function`),
    /// then a zero timeout (`TimeoutError`, checked first, as the original
    /// does), then an already-cancelled token (`CancellationError`).
    static func _refused(_ timeout: Duration, _ token: CancelToken, of function: String) -> Future? {
        _Delay.check(timeout, "timeout", of: function)
        if timeout == .zero { return .failed(TimeoutError(after: .zero)) }
        if token.isCancelled { return .cancelled }
        return nil
    }

    /// Cancels `timer` (releasing its payload) as soon as this future
    /// settles any way: a result ended by `until`/`unless`, or by an
    /// operation's failure, must not keep the timer's payload (the source,
    /// the operation's token) alive until a deadline that may be hours
    /// away.
    func _cancelOnSettle(_ timer: _Timer?) {
        guard let timer else { return }
        completionToken._whenSettledInline { timer.cancel() }
    }

    /// What `all` and `allSettled` share: an empty input succeeds at once,
    /// a cancelled `unless` fails at once; otherwise `register` registers
    /// one continuation per input on the new output, and those registrations
    /// go as soon as the output settles (`_removeOnSettle`), which an
    /// immortal input does at once (the caller returns it through
    /// `_followingUnless`).
    @usableFromInline
    static func _gather<E>(_ inputs: [Future], unless: CancelToken,
                           _ register: (Future<[E]>) -> [CancelRegistration]) -> Future<[E]> {
        if inputs.isEmpty { return .succeeded([]) }
        if unless.isCancelled { return .cancelled }
        let out = Future<[E]>()
        out._removeOnSettle(register(out), unless: unless)
        return out
    }

    /// What `all` and `allSettled` return for their gathered output, which
    /// an immortal input makes immortal at once (its registrations on the
    /// other inputs go with it): with an `unless` token that can still fail
    /// it, the same outcome through `unless(_:)`, which follows `unless` as
    /// a continuation of an immortal future does — it fails with
    /// `CancellationError` if `unless` is cancelled, and is immortal once it
    /// cannot be.
    /// (Already completed — no input, or `unless` already cancelled — it is
    /// returned as it is.)
    @usableFromInline
    func _followingUnless(_ unless: CancelToken) -> Future {
        unless._owner == nil || _word & _wCancelled != 0 ? self : self.unless(unless)
    }

    /// Fails this future with `CancellationError` when `unless` is cancelled
    /// first, and removes `registrations` (one per input, O(n) once) as soon
    /// as it settles either way (completed or immortal): nothing stays on
    /// inputs still pending.
    func _removeOnSettle(_ registrations: [CancelRegistration], unless: CancelToken) {
        unless._whenCancelledInline(untilSettled: completionToken) {
            self._failCancelled()
        }
        completionToken._removeWhenSettled(registrations)
    }

    /// The first success of `operations`, each run with its own token.
    ///
    /// - When one succeeds, the others' tokens are cancelled first (losers
    ///   stop; a late winner's result is cleaned up through its token), then
    ///   the result is published. The winner's token lasts until `until`.
    /// - If every one fails, each token is cancelled and this fails with
    ///   `RaceFailure` holding every failure, in the order of the operations.
    /// - Cancelling `until` — before, during or after the race — cancels
    ///   every operation's token, the winner's included; during the race the
    ///   result fails with `CancellationError`. If it already is, no
    ///   operation runs.
    /// - If no operation can win any more (the rest are immortal), the result
    ///   is immortal, unless `until` can still cancel it.
    public static func race(_ operations: [@Sendable (CancelToken) -> Future], until: CancelToken = .immortal) -> Future {
        if operations.isEmpty { return .failed(RaceFailure(failures: [])) }
        if until.isCancelled { return .cancelled }
        let race = _Race<Value>(operations.count, until: until)
        until._whenCancelledInline(untilSettled: race.source.future.completionToken) {
            race.untilCancelled()
        }
        // One arrival per operation, removed once the result settles: an
        // operation that ignores its token (or a race of existing futures)
        // must not keep the race alive on its still-pending future.
        var arrivals: [CancelRegistration] = []
        arrivals.reserveCapacity(operations.count)
        for (i, op) in operations.enumerated() {
            let f = op(race.tokens[i].token)
            arrivals.append(f.completionToken._whenSettledInline { race.arrived(i, f) })
        }
        race.source.future.completionToken._removeWhenSettled(arrivals)
        return race.source.future
    }

    /// Retries `operation` with growing timeouts (the original's blog-post
    /// loop): try `i` gets `baseTimeout * backoff^i` (until-style, so try
    /// `i`'s token is cancelled before try `i + 1` starts); only a
    /// `TimeoutError` is retried; the first success or other failure ends it.
    /// When every try times out, this fails with the last try's
    /// `TimeoutError` (its `duration` is that try's timeout); `maxTries` of 0
    /// fails with `TimeoutError()`. Cancelling `until` stops it
    /// at once (`CancellationError`) and cancels the try in flight. Timeouts
    /// that grow past 100 years never fire. Negative `maxTries` or
    /// `baseTimeout`, and a `backoff` that is negative, infinite or NaN, are
    /// programming errors (stopped at once, with a message).
    /// Its registrations release what they hold the moment they stop
    /// mattering; their nodes stay linked no longer than
    /// <doc:Threading#What-a-registration-holds-once-it-stops-mattering> bounds.
    /// `clock` measures the timeouts: `ContinuousClock` by default; a
    /// `SuspendingClock`, or any other clock (a test's, which the test
    /// advances), as for `CancelTokenSource(cancellingAfter:clock:)`.
    public static func retrying(upTo maxTries: Int, baseTimeout: Duration, backoff: Double = 2,
                                until: CancelToken = .immortal, clock: some Clock<Duration> = ContinuousClock(),
                                _ operation: @escaping @Sendable (CancelToken) -> Future) -> Future {
        _retrying(upTo: maxTries, baseTimeout: baseTimeout, backoff: backoff, until: until, clock: _TimerClock(clock), operation)
    }

    /// `retrying(upTo:baseTimeout:…)`, on a clock of erased type (`_TimerClock`).
    static func _retrying(upTo maxTries: Int, baseTimeout: Duration, backoff: Double, until: CancelToken,
                          clock: _TimerClock, _ operation: @escaping @Sendable (CancelToken) -> Future) -> Future {
        _Delay.checkRetries(maxTries, baseTimeout, "baseTimeout", backoff: backoff,
                            of: "Future.retrying(upTo:baseTimeout:backoff:until:_:)")
        // Only a timeout is retried. A zero timeout fails without running
        // the operation and stays zero once scaled: every try left would
        // too, so `retrying(upTo: .max, baseTimeout: .zero)` (or a backoff
        // of 0) ends at once instead of counting them. The last try's
        // timeout is the result: it says how long that try had.
        return _retryLoop(upTo: maxTries, first: baseTimeout, backoff: backoff, until: until, clock: clock,
                          stepIsAWait: false, noTries: .timedOut, operation) { tried, i, timeout in
            guard i + 1 < maxTries, timeout != .zero, let e = tried._completedFailure else { return false }
            return e is TimeoutError
        }
    }

    /// Retries failures: runs `operation`; when its future fails with an
    /// error for which `shouldRetry` is true (by default any error but
    /// `CancellationError`), waits `delay` (then `delay * backoff`,
    /// `delay * backoff^2`, …) and runs it again, at most `maxTries` runs in
    /// all. Fails with the last try's error; the first success ends it.
    ///
    /// - `until` is until-style, as in `retrying(upTo:baseTimeout:)`: each
    ///   try gets a token that cancelling `until` cancels, and a failed try's
    ///   token is cancelled before the next try starts. Cancelling `until`
    ///   cancels the running try's token or the wait, and this fails with
    ///   `CancellationError` at once. A delivered success's token lasts until
    ///   `until`.
    /// - A try whose future is immortal ends the retries: the result is
    ///   immortal once `until` can no longer fail it.
    /// - A zero delay retries at once, in a loop: a million tries that fail
    ///   synchronously use constant stack.
    /// - A wait that grows to 100 years or more would never end: the failure
    ///   before it is the result.
    /// - `maxTries` of 0 runs nothing and fails with `CancellationError`.
    ///   Negative `maxTries` or `delay`, and a `backoff` that is negative,
    ///   infinite or NaN, are programming errors (stopped at once, with a
    ///   message).
    /// Its registrations release what they hold the moment they stop
    /// mattering; their nodes stay linked no longer than
    /// <doc:Threading#What-a-registration-holds-once-it-stops-mattering> bounds.
    /// `clock` measures the waits: `ContinuousClock` by default; a
    /// `SuspendingClock`, or any other clock (a test's, which the test
    /// advances), as for `CancelTokenSource(cancellingAfter:clock:)`.
    public static func retrying(upTo maxTries: Int, delay: Duration, backoff: Double = 2,
                                until: CancelToken = .immortal,
                                shouldRetry: @escaping @Sendable (any Error) -> Bool = { !($0 is CancellationError) },
                                clock: some Clock<Duration> = ContinuousClock(),
                                _ operation: @escaping @Sendable (CancelToken) -> Future) -> Future {
        _retrying(upTo: maxTries, delay: delay, backoff: backoff, until: until, shouldRetry: shouldRetry,
                  clock: _TimerClock(clock), operation)
    }

    /// `retrying(upTo:delay:…)`, on a clock of erased type (`_TimerClock`).
    static func _retrying(upTo maxTries: Int, delay: Duration, backoff: Double, until: CancelToken,
                          shouldRetry: @escaping @Sendable (any Error) -> Bool, clock: _TimerClock,
                          _ operation: @escaping @Sendable (CancelToken) -> Future) -> Future {
        _Delay.checkRetries(maxTries, delay, "delay", backoff: backoff,
                            of: "Future.retrying(upTo:delay:backoff:until:shouldRetry:_:)")
        // A try is retried when it failed with an error to retry, it is
        // not the last, and the wait before the next would end.
        return _retryLoop(upTo: maxTries, first: delay, backoff: backoff, until: until, clock: clock,
                          stepIsAWait: true, noTries: .cancelled, operation) { tried, i, wait in
            guard i + 1 < maxTries, _Delay.nanoseconds(wait) != nil, let e = tried._completedFailure else { return false }
            return shouldRetry(e)
        }
    }

    /// The attempt loop of both `retrying` forms. Each try runs `operation`
    /// through an until-style `withTimeout`, so a try's token is cancelled
    /// by `until`, or when the try fails, before the next starts. Try `i`
    /// has the step `first * backoff^i`: its timeout, or (`stepIsAWait`)
    /// the wait after it, cancelled by `until`; the timeout is then one
    /// that never fires. `retries(tried, i, step)` says whether a completed
    /// try `i` is followed by the next; if not, its outcome is the result.
    /// `maxTries` of 0 gives `noTries`.
    ///
    /// What completes at once (a try that fails synchronously, a zero wait)
    /// is followed in this loop, not by recursion: a million such tries use
    /// constant stack. What is pending continues through a continuation,
    /// which the drain runs without nesting.
    static func _retryLoop(upTo maxTries: Int, first: Duration, backoff: Double, until: CancelToken,
                           clock: _TimerClock, stepIsAWait: Bool, noTries: Future,
                           _ operation: @escaping @Sendable (CancelToken) -> Future,
                           retries: @escaping @Sendable (_ tried: Future, _ i: Int, _ step: Duration) -> Bool) -> Future {
        if maxTries == 0 { return noTries.unless(until) }
        /// Tries from `first` on.
        @Sendable func attempt(_ first: Int, _ firstStep: Duration) -> Future {
            var i = first, step = firstStep
            while true {
                if until.isCancelled { return .cancelled }
                let tried = _withTimeout(stepIsAWait ? .seconds(_Delay.neverSeconds) : step, until: until,
                                         clock: clock, operation)
                guard tried.result != nil else {
                    let out = Future()
                    let this = i, thisStep = step
                    _ContinuationNode._make(output: out) {
                        out._trySetFuture(retries(tried, this, thisStep) ? next(this + 1, after: thisStep) : tried)
                    }._register(on: tried, .libraryCallingUser, unless: until)
                    return out
                }
                guard retries(tried, i, step) else { return tried }
                if stepIsAWait && step != .zero { return next(i + 1, after: step) }
                i += 1
                step = _Delay.scaled(step, by: backoff)
            }
        }
        /// Try `i` once the wait `step` (of the try before) has ended.
        @Sendable func next(_ i: Int, after step: Duration) -> Future {
            guard stepIsAWait else { return attempt(i, _Delay.scaled(step, by: backoff)) }
            let pause = Future<Void>._delayed((), by: step, unless: until, clock: clock)
            let out = Future()
            _ContinuationNode._make(output: out) {
                guard pause._completedFailure == nil else { out._failCancelled(); return }
                out._trySetFuture(attempt(i, _Delay.scaled(step, by: backoff)))
            }._register(on: pause, .libraryCallingUser, unless: until)
            return out
        }
        return attempt(0, first).unless(until)
    }
}

extension Sequence {
    /// The same outcomes, ordered by completion: the i-th result completes
    /// like the i-th input to complete.
    ///
    /// If `unless` is cancelled first, the results not yet completed fail
    /// with `CancellationError` (O(n) once, and the registrations on the
    /// inputs are removed). Results that no input can fill any more (an
    /// input is immortal) become immortal once the rest have completed,
    /// unless `unless` can still cancel them.
    public func orderedByCompletion<V>(unless: CancelToken = .immortal) -> [Future<V>] where Element == Future<V> {
        let inputs = Array(self)
        if inputs.isEmpty { return [] }
        let outs = inputs.map { _ in Future<V>() }
        let ordered = _Ordered(outs)
        if unless.isCancelled {
            ordered.cancelRest()
            return outs
        }
        let registrations = inputs.map { f in
            _ContinuationNode._make(output: nil) { ordered.fill(f._result) }._register(on: f, .library)
        }
        let last = outs[outs.count - 1].completionToken
        unless._whenCancelledInline(untilSettled: last) { ordered.cancelRest() }
        last._removeWhenSettled(registrations)
        return outs
    }
}
