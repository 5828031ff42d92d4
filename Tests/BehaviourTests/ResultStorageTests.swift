// Results of every size and kind survive set, then, flattening and the
// already-completed paths, and are destroyed exactly once (the lock-free
// Future stores a value inline in two words, boxes larger or over-aligned
// ones, and keeps failures apart: each of those paths is exercised here,
// against all three implementations).
#if DISPATCH_LOCK
import DispatchLockedFutures
#elseif MUTEX_LOCK
import MutexLockedFutures
#else
import CollapsingFutures
#endif
import Testing
import TestSupport

/// 64 bytes: boxed.
private struct Wide: Sendable, Equatable { var a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8 }
/// 16-byte aligned: boxed whatever its size.
private struct OverAligned: Sendable, Equatable { var v: SIMD4<Float> = [1, 2, 3, 4] }
/// A reference alone: inline, not trivially destroyed.
private struct SmallCarrier: Sendable { let t: Tracked }
/// A reference and two more words: boxed, not trivially destroyed.
private struct WideCarrier: Sendable { let t: Tracked; var pad = (1, 2) }
private struct TrackedError: Error { let t: Tracked }

@Suite struct ResultStorage {
    /// The two ways a pending source's outcome is copied: a `then` output and
    /// a future flattening into it.
    func pendingCopies<V: Sendable>(of s: FutureSource<V>) -> (mapped: Future<V>, flattened: Future<V>) {
        let mapped = s.future.then { $0 }
        let flat = FutureSource<V>()
        flat.trySetResult(s.future)
        return (mapped, flat.future)
    }

    /// Every way a value reaches a future, read back every way.
    func roundTrips<V: Sendable & Equatable>(_ v: V) {
        #expect(Future.succeeded(v).result.map { try? $0.get() } == v)
        let s = FutureSource<V>()
        let (mapped, flatPending) = pendingCopies(of: s)
        s.trySetResult(v)
        #expect(s.future.forceGetResult() == v)
        #expect(mapped.forceGetResult() == v)
        #expect(flatPending.forceGetResult() == v)
        let flatDone = FutureSource<V>()
        flatDone.trySetResult(s.future)
        #expect(flatDone.future.forceGetResult() == v)
        #expect(s.future.state == .succeeded && flatDone.future.state == .succeeded)
    }

    @Test func valuesOfEverySizeAndAlignmentRoundTrip() {
        roundTrips(42)
        roundTrips(UInt8(7))
        roundTrips(Int?.some(9))
        roundTrips(Int?.none)
        roundTrips("a string too long to be stored in the string's own sixteen bytes")
        roundTrips("short")
        roundTrips([1, 2, 3])
        roundTrips(Wide())
        roundTrips(OverAligned())
        let s = FutureSource<Void>()
        s.trySetResult(())
        #expect(s.future.hasResult)
    }

    /// The payload is alive while any future holds it and destroyed once when
    /// the last one goes, through every path that copies it.
    func destroyedOnce<P: Sendable>(_ make: (Tracked) -> P) {
        let deinits = Counter()
        do {
            let s = FutureSource<P>()
            let (mapped, flatPending) = pendingCopies(of: s)
            s.trySetResult(make(Tracked(deinits)))
            let flatDone = FutureSource<P>()
            flatDone.trySetResult(mapped)
            #expect(flatPending.hasResult && flatDone.future.hasResult)
            #expect(deinits.value == 0)
        }
        #expect(deinits.value == 1)
    }

    @Test func inlineAndBoxedValuesAreDestroyedExactlyOnce() {
        destroyedOnce { SmallCarrier(t: $0) }
        destroyedOnce { WideCarrier(t: $0) }
        destroyedOnce { $0 }
        destroyedOnce { [$0, $0] }
    }

    @Test func failuresAreKeptAndDestroyedExactlyOnce() {
        let deinits = Counter()
        do {
            let s = FutureSource<Wide>()
            let (mapped, flat) = pendingCopies(of: s)
            s.trySetFailure(TrackedError(t: Tracked(deinits)))
            #expect(s.future.hasFailed && mapped.hasFailed && flat.hasFailed)
            #expect(flat.forceGetFailure() is TrackedError)
            #expect(deinits.value == 0)
        }
        #expect(deinits.value == 1)
    }

    /// A failure takes the words a value would (the lock-free Future): kept
    /// and destroyed once whatever the value type, failed at once, by a
    /// source, copied by a flattening future and a `then`, and through a
    /// link (a collapsing `catch` returning another step's pending output).
    @Test func failuresOfEveryValueKindAreDestroyedExactlyOnce() {
        func check<V: Sendable>(_: V.Type) {
            let deinits = Counter()
            do {
                let failed = Future<V>.failed(TrackedError(t: Tracked(deinits)))
                let s = FutureSource<V>(), inner = FutureSource<V>()
                let (mapped, flat) = pendingCopies(of: s)
                let returned = Log<Future<V>>()
                let root = s.future.catch { (_: any Error) -> Future<V> in
                    let linked = inner.future.then { $0 }
                    returned.append(linked)
                    return linked
                }
                s.trySetFailure(TrackedError(t: Tracked(deinits)))
                inner.trySetFailure(TrackedError(t: Tracked(deinits)))
                for f in [failed, s.future, mapped, flat, root] + returned.all {
                    #expect(f.state == .failed && f.forceGetFailure() is TrackedError)
                }
                #expect(deinits.value == 0)
            }
            #expect(deinits.value == 3)
        }
        check(Int.self)
        check(String.self)
        check(Wide.self)
        check(OverAligned.self)
        check(Void.self)
    }

    /// Any number of threads may read a completed future at once, directly
    /// and by copying it (a future set to it, a `then`). Under TSan this is
    /// the check: reads that took a modifying access to the stored value
    /// were reported as a race.
    @Test func concurrentReadersOfACompletedFutureAgree() {
        let deinits = Counter()
        do {
            let s = FutureSource<SmallCarrier>(), n = FutureSource<String>()
            let carrier = SmallCarrier(t: Tracked(deinits))
            s.trySetResult(carrier)
            n.trySetResult("forty-two")
            let agreed = Counter()
            onThreads(3) { _ in
                var ok = true
                for _ in 0..<1000 {
                    ok = ok && s.future.forceGetResult().t === carrier.t && n.future.forceGetResult() == "forty-two"
                    let copy = FutureSource<String>()
                    copy.trySetResult(n.future)
                    ok = ok && copy.future.forceGetResult() == "forty-two"
                    ok = ok && n.future.then { $0.count }.forceGetResult() == 9
                }
                if ok { agreed.increment() }
            }
            #expect(agreed.value == 3)
        }
        #expect(deinits.value == 1)
    }

    @Test func pendingAndImmortalFuturesHoldNothing() {
        let deinits = Counter()
        do {
            let pending = FutureSource<WideCarrier>()
            var immortal: Future<WideCarrier>? = FutureSource<WideCarrier>().future
            #expect(immortal?.state == .immortal && pending.future.state == .pending)
            immortal = nil
            let s = FutureSource<WideCarrier>()
            s.trySetResult(WideCarrier(t: Tracked(deinits)))
            #expect(pending.trySetResult(s.future) && pending.future.hasResult)
        }
        #expect(deinits.value == 1)
    }
}
