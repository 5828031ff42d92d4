import CCollapsingFutures
import Dispatch
import Synchronization

/// The failure of `Future.race` when every operation failed: each failure,
/// in the order of the operations.
public struct RaceFailure: Error, Sendable {
    /// Every operation's failure, in the order of the operations.
    public let failures: [any Error]
}

/// A one-shot Dispatch timer whose payload is released the moment it is
/// cancelled (not when the deadline passes).
final class _Timer: @unchecked Sendable {  // DispatchSourceTimer is thread-safe
    private let source: any DispatchSourceTimer
    private let action: _Locked<(@Sendable () -> Void)?>

    init(after delay: Duration, _ action: @escaping @Sendable () -> Void) {
        self.action = _Locked(action)
        // A private serial queue (overcommitting): timers fire on time even
        // while the global pool is saturated by blocking work.
        source = DispatchSource.makeTimerSource(queue: _timerQueue)
        let (s, atto) = delay.components
        let ns = max(0, s * 1_000_000_000 + atto / 1_000_000_000)
        source.schedule(deadline: .now() + .nanoseconds(Int(clamping: ns)), leeway: .nanoseconds(0))
        // The handler keeps the timer alive until it fires or is cancelled
        // (a cycle that both of those break).
        source.setEventHandler { self.fire() }
        source.activate()
    }

    private func fire() {
        let a = action.withLock { a -> (@Sendable () -> Void)? in defer { a = nil }; return a }
        source.setEventHandler(handler: nil)
        source.cancel()
        a?()
    }

    /// Stops the timer; the payload is released before this returns.
    func cancel() {
        action.withLock { $0 = nil }
        source.setEventHandler(handler: nil)
        source.cancel()
    }
}

/// Where timers fire and complete their futures.
let _timerQueue = DispatchQueue(label: "CollapsingFutures.timers")

extension Future {
    /// Runs `operation` on `queue` and completes with its outcome.
    public static func dispatch(on queue: DispatchQueue, _ operation: @escaping @Sendable () throws -> Value) -> Future {
        let out = Future()
        queue.async { out._trySet(Result { try operation() }) }
        return out
    }

    /// Succeeds with `value` after `delay`, or fails with `CancellationError`
    /// if `unless` is cancelled first (the timer is cancelled and `value`
    /// released at once).
    public static func delayed(_ value: Value, by delay: Duration, unless: CancelToken = .immortal) -> Future {
        if unless.isCancelled { return .cancelled }
        let out = Future()
        let timer = _Timer(after: delay) { out._trySet(.success(value)) }
        unless._whenCancelledInline(unless: out.completionToken) {
            timer.cancel()
            out._trySet(.failure(CancellationError()))
        }
        return out
    }

    /// Until-style timeout: `operation` gets a token that lasts as long as
    /// its result should (cancelled when `until` is). If the result is not
    /// in after `timeout`, that token is cancelled and this fails with
    /// `TimeoutError`.
    public static func withTimeout(_ timeout: Duration, until: CancelToken = .immortal,
                                   _ operation: @escaping @Sendable (CancelToken) -> Future) -> Future {
        // The source lives as long as `until` can still cancel it (its
        // handler holds it), so the result's token outlives this call.
        let lifetime = CancelTokenSource()
        until._whenCancelledInline(unless: lifetime.token) { lifetime.cancel() }
        return _timed(timeout, token: lifetime.token, cancelOnTimeout: lifetime, cancelWhen: .immortal, operation)
    }

    /// Unless-style timeout: `operation` gets a token that is cancelled when
    /// the timeout (this fails with `TimeoutError`) or `unless` (this fails
    /// with `CancellationError`) comes first.
    public static func withTimeout(_ timeout: Duration, unless: CancelToken = .immortal,
                                   _ operation: @escaping @Sendable (CancelToken) -> Future) -> Future {
        let attempt = CancelTokenSource()
        return _timed(timeout, token: attempt.token, cancelOnTimeout: attempt, cancelWhen: unless, operation)
    }

    private static func _timed(_ timeout: Duration, token: CancelToken, cancelOnTimeout source: CancelTokenSource,
                               cancelWhen unless: CancelToken,
                               _ operation: @escaping @Sendable (CancelToken) -> Future) -> Future {
        if unless.isCancelled { source.cancel(); return .cancelled }
        let out = Future()
        let timer = _Timer(after: timeout) {
            if out._trySet(.failure(TimeoutError())) { source.cancel() }
        }
        unless._whenCancelledInline(unless: out.completionToken) {
            if out._trySet(.failure(CancellationError())) { source.cancel() }
        }
        out.completionToken.whenCancelled { timer.cancel() }
        let result = operation(token)
        // Keep the source alive until the outcome is known.
        result.finallyDo(unless: out.completionToken) { r in
            withExtendedLifetime(source) { _ = out._trySet(r._result!) }
        }
        return out
    }

    /// Succeeds with every value, in order, once all succeed; fails as soon
    /// as one fails, with that failure; fails with `CancellationError` if
    /// `unless` is cancelled first; immortal if an input is. Registrations
    /// still waiting are removed as soon as the result is known. O(n).
    public static func all(_ futures: some Sequence<Future>, unless: CancelToken = .immortal) -> Future<[Value]> {
        let inputs = Array(futures)
        if inputs.isEmpty { return .succeeded([]) }
        let out = Future<[Value]>()
        let slots = _Slots<Value>(inputs.count)
        var registrations: [CancelRegistration] = []
        registrations.reserveCapacity(inputs.count)
        for (i, f) in inputs.enumerated() {
            registrations.append(_chain(f, nil, .immortal, output: out) { _ in
                switch f._result! {
                case .failure(let e): out._trySet(.failure(e))
                case .success(let v):
                    if slots.fill(i, v) { out._trySet(.success(slots.values())) }
                }
            })
        }
        out._removeOnCompletion(registrations, unless: unless)
        return out
    }

    /// Completes with the same futures once every one has completed (either
    /// way); fails with `CancellationError` if `unless` is cancelled first.
    public static func allSettled(_ futures: some Sequence<Future>, unless: CancelToken = .immortal) -> Future<[Future]> {
        let inputs = Array(futures)
        if inputs.isEmpty { return .succeeded([]) }
        let out = Future<[Future]>()
        let remaining = _Countdown(inputs.count)
        let registrations = inputs.map { f in
            _chain(f, nil, .immortal, output: out) { _ in
                if remaining.tick() { out._trySet(.success(inputs)) }
            }
        }
        out._removeOnCompletion(registrations, unless: unless)
        return out
    }

    /// Fails this future with `CancellationError` when `unless` is cancelled
    /// first, and removes `registrations` (one per input, O(n) once) as soon
    /// as it completes either way: nothing stays on inputs still pending.
    func _removeOnCompletion(_ registrations: [CancelRegistration], unless: CancelToken) {
        unless._whenCancelledInline(unless: completionToken) { self._trySet(.failure(CancellationError())) }
        _ = completionToken._add(_HandlerNode { for r in registrations { r.remove() } }, unless: .immortal)
    }

    /// The first success of `operations`, each run with its own token.
    ///
    /// When one succeeds, the others' tokens are cancelled (losers stop; a
    /// late winner's result is cleaned up through its token). If every one
    /// fails, this fails with `RaceFailure` holding every failure. `until`
    /// cancels every operation's token.
    public static func race(_ operations: [@Sendable (CancelToken) -> Future], until: CancelToken = .immortal) -> Future {
        if operations.isEmpty { return .failed(RaceFailure(failures: [])) }
        let out = Future()
        let sources = operations.map { _ in CancelTokenSource(until: until) }
        let failures = _Slots<any Error>(operations.count)
        let won = _Once()
        for (i, op) in operations.enumerated() {
            let f = op(sources[i].token)
            f.finallyDo { r in
                switch r._result! {
                case .success(let v):
                    // Losers are cancelled before the result is published, so
                    // whoever sees the winner also sees them cancelled.
                    if won.claim() {
                        for (j, s) in sources.enumerated() where j != i { s.cancel() }
                        out._trySet(.success(v))
                    } else {
                        sources[i].cancel()   // a late winner: its result's lifetime ends now
                    }
                case .failure(let e):
                    if failures.fill(i, e) { out._trySet(.failure(RaceFailure(failures: failures.values()))) }
                }
            }
        }
        return out
    }

    /// Retries `operation` with growing timeouts (the original's blog-post
    /// loop): try `i` gets `baseTimeout * backoff^i` (until-style); only a
    /// `TimeoutError` is retried; the first success or other failure ends it.
    /// `maxTries` of 0 fails with `TimeoutError`. Cancelling `until` stops it
    /// at once (`CancellationError`) and cancels the try in flight.
    public static func retrying(upTo maxTries: Int, baseTimeout: Duration, backoff: Double = 2,
                                until: CancelToken = .immortal,
                                _ operation: @escaping @Sendable (CancelToken) -> Future) -> Future {
        @Sendable func attempt(_ i: Int, _ timeout: Duration) -> Future {
            if i >= maxTries { return .timedOut }
            if until.isCancelled { return .cancelled }
            return withTimeout(timeout, until: until, operation).catch(unless: until) { (e: any Error) throws -> Future in
                guard e is TimeoutError else { throw e }
                return attempt(i + 1, timeout * backoff)
            }
        }
        return attempt(0, baseTimeout).unless(until)
    }
}

extension Sequence {
    /// The same outcomes, ordered by completion: the i-th result completes
    /// like the i-th input to complete. If `unless` is cancelled first, the
    /// results not yet completed fail with `CancellationError`.
    public func orderedByCompletion<V>(unless: CancelToken = .immortal) -> [Future<V>] where Element == Future<V> {
        let inputs = Array(self)
        let outs = inputs.map { _ in Future<V>() }
        let shared = _Shared(outs)
        let stop = CancelToken.any(unless, outs.last?.completionToken ?? .immortal)
        for f in inputs {
            _chain(f, nil, stop, output: nil) { ok in
                guard ok else {
                    for o in shared.outs { o._trySet(.failure(CancellationError())) }
                    return
                }
                let i = shared.next.add(1, ordering: .relaxed).oldValue
                shared.outs[i]._trySet(f._result!)
            }
            // An immortal input never fills its slot: the slot it would have
            // taken stays pending (as the input would).
        }
        return outs
    }
}

final class _Shared<V: Sendable>: Sendable {
    let outs: [Future<V>]
    let next = Atomic<Int>(0)
    init(_ outs: [Future<V>]) { self.outs = outs }
}

/// A flag claimed once, by exactly one caller.
final class _Once: Sendable {
    private let flag = Atomic<Bool>(false)
    func claim() -> Bool { !flag.exchange(true, ordering: .acquiringAndReleasing) }
}

/// Fixed slots filled once each from any thread; the filler of the last
/// slot reads them all. O(n), no lock.
final class _Slots<T>: @unchecked Sendable {
    private let buffer: UnsafeMutableBufferPointer<T?>
    private let remaining: _Countdown
    init(_ n: Int) {
        buffer = .allocate(capacity: n)
        buffer.initialize(repeating: nil)
        remaining = _Countdown(n)
    }
    deinit {
        _ = buffer.deinitialize()
        buffer.deallocate()
    }
    /// Fills slot `i`; true for the call that filled the last slot (its
    /// acquire-release countdown makes every other slot's write visible).
    func fill(_ i: Int, _ v: T) -> Bool {
        buffer[i] = v
        return remaining.tick()
    }
    func values() -> [T] { buffer.map { $0! } }
}
