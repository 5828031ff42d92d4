import CCollapsingFutures
import Dispatch

// What users of PromiseKit, swift-nio and Combine reach for, on top of the
// original's API: pass-through cleanup, combining futures of different
// types, racing existing futures, an instance timeout, continuations on the
// main actor and async continuations.

extension Future {
    /// The same outcome, after `f` has run with this (completed) future: a
    /// cleanup that keeps the value (NIO's `always`, PromiseKit's `ensure`).
    ///
    /// Unlike `finally`, the result's type and outcome are this future's. If
    /// `unless` is cancelled first, `f` never runs and the result fails with
    /// `CancellationError`. Threading as `then`.
    @inlinable
    public func always(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                       _ f: @escaping @Sendable (Future<Value>) -> Void) -> Future<Value> {
        let out = Future<Value>()
        _ContinuationNode._make(output: out) {
            f(self)
            out._trySet(self._result)
        }._register(on: self, .user(queue: queue), unless: unless)
        return out
    }

    /// Both values once both succeed; fails as soon as either fails (one
    /// already failed wins over an immortal one, in either order); immortal
    /// if either is, once `unless` can no longer fail it (as `all`).
    public func and<U>(_ other: Future<U>, unless: CancelToken = .immortal) -> Future<(Value, U)> {
        Future.all(self, other, unless: unless)
    }

    /// Every value, as a tuple of their own types, once all succeed; fails as
    /// soon as one fails, with that failure; fails with `CancellationError`
    /// if `unless` is cancelled first; immortal if an input is and none has
    /// already failed, once `unless` can no longer fail it (as
    /// `all(_:unless:)`).
    ///
    ///     let (user, avatar, feed) = try await Future.all(user, avatar, feed).get()
    public static func all<each V: Sendable>(_ first: Future, _ rest: repeat Future<each V>,
                                             unless: CancelToken = .immortal) -> Future<(Value, repeat each V)> {
        if unless.isCancelled { return .cancelled }
        var erased: [Future<any Sendable>] = []
        var registrations: [CancelRegistration] = []
        func erase<T>(_ f: Future<T>) {
            let (e, r) = f._mapRegistered { $0 as any Sendable }
            erased.append(e)
            registrations.append(r)
        }
        erase(first)
        repeat erase(each rest)
        let all = Future<any Sendable>._all(erased, unless: unless)
        // `all` removes its registrations on the erased copies when it
        // settles; these go with them, so nothing stays on an input still
        // pending (one failed, one is immortal, or `unless` fired).
        all.completionToken._removeWhenSettled(registrations)
        return all._followingUnless(unless)._map { values in
            var i = 0
            func next<T>(_: T.Type) -> T {
                i += 1
                return values[i] as! T
            }
            return (values[0] as! Value, repeat next((each V).self))
        }
    }

    /// The first of `futures` to succeed; if every one fails, `RaceFailure`
    /// with each failure in order. (`race(_:until:)` races operations that
    /// get a token to stop losers; existing futures cannot be stopped.)
    /// Immortal once no input can succeed any more and not all have failed.
    public static func race(_ first: Future, _ rest: Future...) -> Future {
        race(([first] + rest).map { f in { @Sendable _ in f } })
    }

    /// The same outcome, or `TimeoutError` if this has not completed after
    /// `duration` (this future is untouched: it may still complete later),
    /// or `CancellationError` if `unless` is cancelled first. As soon as the
    /// result is known the timer goes, and the registration on this future
    /// releases what it holds; its node stays linked on this future until
    /// the list's next cleaning pass, which keeps at most half the live
    /// registrations plus 16 removed ones, and none once this completes
    /// (<doc:Threading#What-a-registration-holds-once-it-stops-mattering>).
    /// A duration of 100 years or more never fires.
    /// `clock` measures the duration: `ContinuousClock` by default; a
    /// `SuspendingClock`, or any other clock (a test's, which the test
    /// advances), as for `CancelTokenSource(cancellingAfter:clock:)`.
    @inlinable
    public func timeout(_ duration: Duration, unless: CancelToken = .immortal,
                        clock: some Clock<Duration> = ContinuousClock()) -> Future<Value> {
        _timeout(duration, unless: unless, clock: _TimerClock(clock)) {
            _FutureTimeout(input: self, output: Future(), duration: duration)
        }
    }

    /// `timeout(_:unless:clock:)`, on a clock of erased type (`_TimerClock`),
    /// with its node made by the caller's specialized code (`_FutureTimeout`).
    /// A completed future is its own result: it arms no timer.
    @usableFromInline
    func _timeout(_ duration: Duration, unless: CancelToken, clock: _TimerClock,
                  _ makeTiming: () -> _FutureTimeout<Value>) -> Future<Value> {
        _Delay.check(duration, "duration", of: "Future.timeout(_:unless:)")
        if _word & _wCancelled != 0 { return self }
        if duration == .zero { return .failed(TimeoutError(after: .zero)) }
        if unless.isCancelled { return .cancelled }
        let timing = makeTiming()
        timing.timer = clock.after(duration) { timing.timerFired() }
        // This future's own completion token never cancels it first (as for
        // continuations): as `unless` it must not beat the result.
        let unless = _unless(unless, forContinuationOn: self)
        unless._whenCancelledInline(untilSettled: timing.output.completionToken) {
            timing.unlessCancelled()
        }
        timing.start()
        return timing.output
    }

    /// `then` for the library's own use: runs inline on the completing thread.
    func _map<U>(_ f: @escaping @Sendable (Value) -> U) -> Future<U> { _mapRegistered(f).0 }

    /// `_map`, with its registration on this future, for a caller that
    /// removes it once the result no longer matters.
    func _mapRegistered<U>(_ f: @escaping @Sendable (Value) -> U) -> (Future<U>, CancelRegistration) {
        let out = Future<U>()
        // (Not `_value(passingFailureTo:)`: unspecialized, as here, that
        // generic call looks up `out`'s metadata on every run.)
        let registration = _ContinuationNode._make(output: out) {
            switch self._result {
            case .success(let v): out._trySet(.success(f(v)))
            case .failure(let e): out._trySet(.failure(e))
            }
        }._register(on: self, .library)
        return (out, registration)
    }
}

// MARK: continuations on the main actor
//
// The same steps as the queue forms, under another run policy
// (`_RunPolicy.mainActor`): each runs after a hop with a `Task` on the main
// actor, where `unless` is checked again, as after the main-queue hop of
// `on: .main` (`_NodeRef._runAfterHop`): cancelling it after the completion but
// before the main actor runs still stops `f`.

extension Future {
    /// Runs `f` on the main actor with the value if this succeeds (never if
    /// `unless` is cancelled first): UI code without `assumeIsolated`.
    ///
    ///     loadTitle().thenDo(on: MainActor.shared) { self.title = $0 }
    public func thenDo(on _: MainActor, unless: CancelToken = .immortal,
                       _ f: @escaping @MainActor @Sendable (Value) -> Void) {
        _thenDoNode { v in MainActor.assumeIsolated { f(v) } }._register(on: self, .mainActor, unless: unless)
    }

    /// Runs `f` on the main actor with the error if this fails.
    public func catchDo(on _: MainActor, unless: CancelToken = .immortal,
                        _ f: @escaping @MainActor @Sendable (any Error) -> Void) {
        _catchDoNode { e in MainActor.assumeIsolated { f(e) } }._register(on: self, .mainActor, unless: unless)
    }

    /// Runs `f` on the main actor with this future once it completes.
    public func finallyDo(on _: MainActor, unless: CancelToken = .immortal,
                          _ f: @escaping @MainActor @Sendable (Future<Value>) -> Void) {
        _finallyDoNode { future in MainActor.assumeIsolated { f(future) } }._register(on: self, .mainActor, unless: unless)
    }

    /// When this succeeds, its value mapped by `f` on the main actor.
    public func then<U>(on _: MainActor, unless: CancelToken = .immortal,
                        _ f: @escaping @MainActor @Sendable (Value) throws -> U) -> Future<U> {
        _then({ v in try MainActor.assumeIsolated { try f(v) } }, .mainActor, unless: unless)
    }

    /// When this succeeds, the future `f` returns on the main actor, collapsed
    /// (a `Future<U>`, never a `Future<Future<U>>`).
    public func then<U>(on _: MainActor, unless: CancelToken = .immortal,
                        _ f: @escaping @MainActor @Sendable (Value) throws -> Future<U>) -> Future<U> {
        _flatThen({ v in try MainActor.assumeIsolated { try f(v) } }, .mainActor, unless: unless)
    }
}

// MARK: async continuations

extension Future {
    /// When this succeeds, the value `f` computes asynchronously, in a Task
    /// bound to `unless` (cancelling it cancels the Task and fails the
    /// result with `CancellationError`); failures pass through.
    ///
    ///     let profile = userID.then { id async throws in try await api.profile(id) }
    ///
    /// Like `Task.init`, `f` inherits the caller's actor: written in a
    /// `@MainActor` type it runs on the main actor. (It starts from the
    /// completing thread and hops there, so two async continuations of one
    /// future start in no particular order.)
    public func then<U>(unless: CancelToken = .immortal,
                        @_inheritActorContext _ f: @escaping @Sendable @isolated(any) (Value) async throws -> U) -> Future<U> {
        // This future's own completion token never cancels it first (as for
        // the other continuations), so it must not cancel the Task either.
        let unless = _unless(unless, forContinuationOn: self)
        return then(on: .completingThread, unless: unless) { v in Future<U>(until: unless) { try await f(v) } }
    }

    /// When this succeeds, the future `f` returns asynchronously, collapsed
    /// (a `Future<U>`, never a `Future<Future<U>>`); as `then(unless:_:)`
    /// otherwise.
    public func then<U>(unless: CancelToken = .immortal,
                        @_inheritActorContext _ f: @escaping @Sendable @isolated(any) (Value) async throws -> Future<U>) -> Future<U> {
        let unless = _unless(unless, forContinuationOn: self)
        return then(on: .completingThread, unless: unless) { v in
            Future<Future<U>>(until: unless) { try await f(v) }.then(on: .completingThread) { $0 }
        }
    }
}
