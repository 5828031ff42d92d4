#if DISPATCH_LOCK
import DispatchLockedFutures
#elseif MUTEX_LOCK
import MutexLockedFutures
#else
import CollapsingFutures
#endif
import Testing
import TestSupport
import Dispatch
import Foundation

@Suite struct FutureConstruction {
    @Test func succeededHasResult() {
        let f = Future.succeeded(5)
        #expect(f.state == .succeeded)
        #expect(f.hasResult && !f.hasFailed && !f.isIncomplete)
        #expect(f.forceGetResult() == 5)
        #expect(f.completionToken.isCancelled)
    }

    @Test func succeededWithAFutureCollapses() {
        let s = FutureSource<Int>()
        let f = Future<Int>.succeeded(s.future)
        #expect(f.isIncomplete)
        s.trySetResult(3)
        #expect(f.forceGetResult() == 3)
    }

    /// Written without the type: the collapsing form is chosen, not a
    /// future of a future (which would make the call ambiguous).
    @Test func succeededWithAFutureCollapsesWithoutAType() {
        let s = FutureSource<Int>()
        let f = Future.succeeded(s.future)
        #expect(f === s.future)
        let nested = Future<Future<Int>>.succeeded(s.future)
        #expect(nested.forceGetResult() === s.future)
    }

    @Test func failedHasFailure() {
        let f = Future<Int>.failed(TestError(code: 4))
        #expect(f.state == .failed)
        #expect(f.hasFailed && !f.hasResult)
        #expect(f.forceGetFailure() as? TestError == TestError(code: 4))
    }

    @Test func cancelledFailsWithCancellationError() {
        let f = Future<Int>.cancelled
        #expect(f.hasFailedWithCancel && !f.hasFailedWithTimeout)
        #expect(f.forceGetFailure() is CancellationError)
    }

    @Test func timedOutFailsWithTimeoutError() {
        let f = Future<Int>.timedOut
        #expect(f.hasFailedWithTimeout && !f.hasFailedWithCancel)
    }

    @Test func immortalNeverCompletesAndReleasesContinuations() {
        let f = Future<Int>.immortal
        #expect(f.state == .immortal && f.isIncomplete && f.result == nil)
        #expect(f.completionToken.state == .immortal)
        let deinits = Counter()
        do {
            let obj = Tracked(deinits)
            f.thenDo { _ in obj.touch() }
        }
        #expect(deinits.value == 1)
    }

    @Test func descriptionNamesStateAndValue() {
        #expect(Future.succeeded(42).description.contains("42"))
        let s = FutureSource<Int>()
        #expect(s.future.description.contains("pending"))
        #expect(Future<Int>.immortal.description.contains("immortal"))
    }
}

@Suite struct FutureSourceSetting {
    @Test func pendingUntilSet() {
        let s = FutureSource<Int>()
        #expect(s.future.state == .pending)
        #expect(s.future.result == nil)
        #expect(s.future.completionToken.canStillBeCancelled)
        #expect(s.trySetResult(1))
        #expect(s.future.forceGetResult() == 1)
        #expect(s.future.completionToken.isCancelled)
    }

    @Test func secondSetFails() {
        let s = FutureSource<Int>()
        #expect(s.trySetResult(1))
        #expect(!s.trySetResult(2))
        #expect(!s.trySetFailure(TestError()))
        #expect(!s.trySetFailedWithCancel())
        #expect(!s.trySetFailedWithTimeout())
        #expect(!s.trySet(.success(3)))
        #expect(!s.trySetResult(Future.succeeded(4)))
        #expect(s.future.forceGetResult() == 1)
    }

    @Test func failureSetters() {
        let a = FutureSource<Int>(); a.trySetFailure(TestError(code: 2))
        #expect(a.future.forceGetFailure() as? TestError == TestError(code: 2))
        let b = FutureSource<Int>(); b.trySetFailedWithCancel()
        #expect(b.future.hasFailedWithCancel)
        let c = FutureSource<Int>(); c.trySetFailedWithTimeout()
        #expect(c.future.hasFailedWithTimeout)
        let d = FutureSource<Int>(); d.trySet(.failure(TestError(code: 5)))
        #expect(d.future.hasFailed)
        let e = FutureSource<Int>(); e.forceSetFailure(TestError())
        #expect(e.future.hasFailed)
        let f = FutureSource<Int>(); f.forceSetResult(8)
        #expect(f.future.forceGetResult() == 8)
        let g = FutureSource<Int>(); g.forceSetFailedWithCancel()
        #expect(g.future.hasFailedWithCancel)
        let h = FutureSource<Int>(); h.forceSetFailedWithTimeout()
        #expect(h.future.hasFailedWithTimeout)
    }

    @Test func voidSourceSetsWithoutArgument() {
        let s = FutureSource<Void>()
        #expect(s.trySetResult())
        #expect(s.future.hasResult)
        let t = FutureSource<Void>()
        t.forceSetResult()
        #expect(t.future.hasResult)
    }

    @Test func sourceDeinitUnsetMakesFutureImmortalAndDiscardsHandlers() {
        var s: FutureSource<Int>? = FutureSource<Int>()
        let f = s!.future
        let deinits = Counter(), ran = Counter()
        do {
            let obj = Tracked(deinits)
            f.thenDo { _ in obj.touch(); ran.increment() }
        }
        drop(&s)
        #expect(f.state == .immortal)
        #expect(f.completionToken.state == .immortal)
        #expect(deinits.value == 1 && ran.value == 0)
    }

    @Test func untilTokenCancelledFirstFailsWithCancel() {
        let c = CancelTokenSource()
        let s = FutureSource<Int>(until: c.token)
        c.cancel()
        #expect(s.future.hasFailedWithCancel)
        #expect(!s.trySetResult(1))
    }

    @Test func untilTokenAfterSetHasNoEffect() {
        let c = CancelTokenSource()
        let s = FutureSource<Int>(until: c.token)
        s.trySetResult(1)
        c.cancel()
        #expect(s.future.forceGetResult() == 1)
    }

    @Test func untilAlreadyCancelledTokenFailsAtOnce() {
        #expect(FutureSource<Int>(until: .cancelled).future.hasFailedWithCancel)
    }

    @Test func untilRegistrationsOnLongLivedTokenAreReleased() {
        let longLived = CancelTokenSource()
        let deinits = Counter()
        for i in 0..<100 {
            let s = FutureSource<Int>(until: longLived.token)
            let obj = Tracked(deinits)
            s.future.thenDo { _ in obj.touch() }
            if i % 2 == 0 { s.trySetResult(i) }   // the rest die unset: immortal
        }
        #expect(deinits.value == 100)
    }

    @Test func racingSettersExactlyOneWinsAndHandlersSeeTheWinnerOnce() {
        for _ in 0..<200 {
            let s = FutureSource<Int>()
            let wins = Counter()
            let seen = Log<Int>()
            for _ in 0..<4 { s.future.thenDo { seen.append($0) } }
            onThreads(4) { i in
                if s.trySetResult(i) { wins.increment() }
            }
            #expect(wins.value == 1)
            let v = s.future.forceGetResult()
            #expect(seen.all == [v, v, v, v])
        }
    }
}

@Suite struct Continuations {
    @Test func thenMapsValue() {
        let s = FutureSource<Int>()
        let f = s.future.then { $0 * 2 }
        #expect(f.isIncomplete)
        s.trySetResult(21)
        #expect(f.forceGetResult() == 42)
    }

    @Test func thenOnCompletedFutureRunsInline() {
        #expect(Future.succeeded(2).then { $0 + 1 }.forceGetResult() == 3)
    }

    @Test func thenPassesFailureThroughWithoutRunning() {
        let ran = Counter()
        let f = Future<Int>.failed(TestError(code: 3)).then { (x: Int) -> Int in ran.increment(); return x }
        #expect(f.forceGetFailure() as? TestError == TestError(code: 3))
        #expect(ran.value == 0)
    }

    @Test func throwingContinuationFailsResult() {
        let f = Future.succeeded(1).then { (_: Int) throws -> Int in throw TestError(code: 9) }
        #expect(f.forceGetFailure() as? TestError == TestError(code: 9))
    }

    @Test func thenReturningFutureCollapses() {
        let inner = FutureSource<String>()
        let s = FutureSource<Int>()
        let f: Future<String> = s.future.then { _ in inner.future }
        s.trySetResult(1)
        #expect(f.state == .flattening)
        inner.trySetResult("x")
        #expect(f.forceGetResult() == "x")
    }

    @Test func catchRecoversFailureAndPassesValues() {
        #expect(Future<Int>.failed(TestError()).catch { _ in 7 }.forceGetResult() == 7)
        #expect(Future.succeeded(1).catch { _ in 7 }.forceGetResult() == 1)
        let f: Future<Int> = Future<Int>.failed(TestError()).catch { _ in Future.succeeded(8) }
        #expect(f.forceGetResult() == 8)
        let g = Future<Int>.failed(TestError(code: 1)).catch { _ throws -> Int in throw TestError(code: 2) }
        #expect(g.forceGetFailure() as? TestError == TestError(code: 2))
    }

    @Test func finallyRunsEitherWay() {
        #expect(Future.succeeded(1).finally { $0.hasResult }.forceGetResult())
        #expect(Future<Int>.failed(TestError()).finally { $0.hasFailed }.forceGetResult())
        let f: Future<Int> = Future.succeeded(1).finally { _ in Future.succeeded(5) }
        #expect(f.forceGetResult() == 5)
    }

    @Test func doFormsRunOnlyForTheirOutcome() {
        let log = Log<String>()
        let ok = Future.succeeded(1), bad = Future<Int>.failed(TestError())
        ok.thenDo { _ in log.append("then-ok") }
        ok.catchDo { _ in log.append("catch-ok") }
        ok.finallyDo { _ in log.append("finally-ok") }
        bad.thenDo { _ in log.append("then-bad") }
        bad.catchDo { _ in log.append("catch-bad") }
        bad.finallyDo { _ in log.append("finally-bad") }
        #expect(log.all == ["then-ok", "finally-ok", "catch-bad", "finally-bad"])
    }

    @Test func unlessCancelledFirstNeverRunsReleasesClosureAndFailsWithCancel() {
        let s = FutureSource<Int>()
        let u = CancelTokenSource()
        let deinits = Counter(), ran = Counter()
        let f: Future<Int>
        do {
            let obj = Tracked(deinits)
            f = s.future.then(unless: u.token) { x in obj.touch(); ran.increment(); return x }
        }
        u.cancel()
        #expect(deinits.value == 1)
        #expect(f.hasFailedWithCancel)
        s.trySetResult(1)
        #expect(ran.value == 0)
    }

    @Test func unlessAlreadyCancelledFailsAtOnce() {
        let s = FutureSource<Int>()
        let f = s.future.then(unless: .cancelled) { $0 }
        #expect(f.hasFailedWithCancel)
    }

    @Test func unlessFutureForwardsOrCancels() {
        let s = FutureSource<Int>(), u = CancelTokenSource()
        let f = s.future.unless(u.token)
        s.trySetResult(3)
        #expect(f.forceGetResult() == 3)
        let s2 = FutureSource<Int>(), u2 = CancelTokenSource()
        let g = s2.future.unless(u2.token)
        u2.cancel()
        #expect(g.hasFailedWithCancel)
    }

    @Test func continuationOnQueueRunsThere() {
        let q = DispatchQueue(label: "cf.test.then")
        let key = DispatchSpecificKey<Int>()
        q.setSpecific(key: key, value: 3)
        let f = Future.succeeded(1).then(on: q) { _ in DispatchQueue.getSpecific(key: key) }
        #expect(eventually { !f.isIncomplete })
        #expect(f.forceGetResult() == 3)
    }

    @Test func continuationsOfImmortalFutureAreImmortal() {
        var s: FutureSource<Int>? = FutureSource<Int>()
        let f = s!.future.then { $0 + 1 }
        drop(&s)
        #expect(f.state == .immortal)
    }

    @Test func continuationsRunInRegistrationOrder() {
        let s = FutureSource<Int>()
        let log = Log<Int>()
        for i in 0..<50 { s.future.thenDo { _ in log.append(i) } }
        s.trySetResult(0)
        #expect(log.all == Array(0..<50))
    }
}

/// `then` and `thenDo` hold their input, function and output in the node
/// itself (no closure context): every way such a step ends must run it
/// once, fail or make its output immortal as the contract says, and free
/// what it held (counted deinits and weak references).
@Suite struct StepContinuations {
    @Test func thenDoUnlessCancelledFirstNeverRunsAndReleasesItsClosure() {
        let s = FutureSource<Int>(), u = CancelTokenSource()
        let deinits = Counter(), ran = Counter()
        do {
            let obj = Tracked(deinits)
            s.future.thenDo(unless: u.token) { _ in obj.touch(); ran.increment() }
        }
        #expect(deinits.value == 0)
        u.cancel()
        #expect(deinits.value == 1)
        s.trySetResult(1)
        #expect(ran.value == 0)
    }

    @Test func stepsReleaseInputFunctionAndOutputOnceRun() {
        let deinits = Counter()
        weak var input: Future<Int>?
        weak var output: Future<Int>?
        weak var last: Future<Int>?
        var s: FutureSource<Int>? = FutureSource<Int>()
        let seen = Counter()
        do {
            let obj = Tracked(deinits)
            input = s!.future
            output = s!.future.then { v in obj.touch(); return v + 1 }
        }
        // The pending output is kept alive only by the step waiting for its input.
        #expect(output != nil)
        do {
            let obj2 = Tracked(deinits)
            let out2 = output!.then { v in obj2.touch(); return v * 10 }
            last = out2
            out2.thenDo { v in if v == 20 { seen.increment() } }
        }
        s!.trySetResult(1)
        #expect(seen.value == 1)
        #expect(deinits.value == 2)
        #expect(output == nil)
        #expect(last == nil)
        drop(&s)
        #expect(input == nil)
    }

    /// The collapsing `then` (its own step node): `unless` cancelled first
    /// releases its function at once and fails the result; once run, the
    /// input and the function are released, and the result, once the
    /// returned future completes, is held by nothing.
    @Test func collapsingThenReleasesItsFunctionWhenStoppedAndItsStepOnceRun() {
        let deinits = Counter(), ran = Counter(), seen = Counter()
        let s = FutureSource<Int>(), u = CancelTokenSource()
        let stopped: Future<Int>
        do {
            let obj = Tracked(deinits)
            stopped = s.future.then(unless: u.token) { v -> Future<Int> in obj.touch(); ran.increment(); return .succeeded(v) }
        }
        u.cancel()
        #expect(deinits.value == 1)
        #expect(stopped.hasFailedWithCancel)

        let inner = FutureSource<Int>()
        weak var input: Future<Int>?
        weak var output: Future<Int>?
        var s2: FutureSource<Int>? = FutureSource<Int>()
        do {
            let obj = Tracked(deinits)
            input = s2!.future
            let out = s2!.future.then { v -> Future<Int> in obj.touch(); ran.increment(); return inner.future.then { $0 + v } }
            output = out
            out.thenDo { if $0 == 12 { seen.increment() } }
        }
        #expect(output != nil)
        s2!.trySetResult(2)
        #expect(ran.value == 1)
        #expect(deinits.value == 2)
        #expect(output?.state == .flattening)
        inner.trySetResult(10)
        #expect(seen.value == 1)
        #expect(output == nil)
        drop(&s2)
        #expect(input == nil)
        s.trySetResult(1)
        #expect(ran.value == 1)
    }

    @Test func collapsingThenWhoseFutureBecomesImmortalIsImmortalAndFreesWhatWasRegistered() {
        let s = FutureSource<Int>()
        var inner: FutureSource<Int>? = FutureSource<Int>()
        let deinits = Counter()
        weak var weakOut: Future<Int>?
        do {
            // Returned with nothing registered on it, `innerFuture` is
            // linked into `out`: `out` holds its outcome, so lives as long
            // as either is held.
            let innerFuture = inner!.future
            let out: Future<Int> = s.future.then { _ in innerFuture }
            weakOut = out
            thenDoHolding(Tracked(deinits), on: out)
            s.trySetResult(1)
            #expect(out.state == .flattening)
            #expect(deinits.value == 0)
            drop(&inner)
            #expect(out.state == .immortal)
            #expect(deinits.value == 1)
        }
        #expect(weakOut == nil)
    }

    @Test func collapsingThenReturningItsOwnOutputIsImmortalAndFreed() {
        final class Slot: @unchecked Sendable { var future: Future<Int>? }
        let slot = Slot(), deinits = Counter()
        let s = FutureSource<Int>()
        weak var weakOut: Future<Int>?
        do {
            let out: Future<Int> = s.future.then { _ in slot.future! }
            slot.future = out
            weakOut = out
            thenDoHolding(Tracked(deinits), on: out)
            s.trySetResult(1)
            #expect(out.state == .immortal)
            #expect(deinits.value == 1)
            slot.future = nil
        }
        #expect(weakOut == nil)
    }

    @Test func collapsingThenFollowsItsFutureOnceRunWhateverUnlessDoesLater() {
        let s = FutureSource<Int>(), inner = FutureSource<Int>(), u = CancelTokenSource()
        let out: Future<Int> = s.future.then(unless: u.token) { v in inner.future.then { $0 + v } }
        s.trySetResult(1)
        #expect(out.state == .flattening)
        u.cancel()
        #expect(out.state == .flattening)
        inner.trySetResult(5)
        #expect(out.forceGetResult() == 6)
    }

    @Test func collapsingThenOnAQueueFollowsItsFutureAndIsFreed() {
        let q = DispatchQueue(label: "cf.test.flat")
        let s = FutureSource<Int>(), inner = FutureSource<Int>()
        let deinits = Counter(), seen = Counter()
        weak var weakOut: Future<Int>?
        do {
            let out: Future<Int>
            do {
                let obj = Tracked(deinits)
                out = s.future.then(on: q) { v in obj.touch(); return inner.future.then { $0 * v } }
            }
            weakOut = out
            out.thenDo(on: q) { if $0 == 21 { seen.increment() } }
            s.trySetResult(3)
            q.sync {}
            #expect(out.state == .flattening)
            #expect(deinits.value == 1)
            inner.trySetResult(7)
            q.sync {}
            #expect(out.forceGetResult() == 21)
        }
        #expect(seen.value == 1)
        #expect(weakOut == nil)
    }

    @Test func collapsingThenReturningACompletedOrFlatteningFutureTakesItsOutcome() {
        let s = FutureSource<Int>()
        let done: Future<Int> = s.future.then { _ in .failed(TestError(code: 4)) }
        let a = FutureSource<Int>(), b = FutureSource<Int>()
        a.trySetResult(b.future)
        let viaChain: Future<Int> = s.future.then { _ in a.future }
        s.trySetResult(1)
        #expect(done.forceGetFailure() as? TestError == TestError(code: 4))
        #expect(viaChain.state == .flattening)
        b.trySetResult(8)
        #expect(viaChain.forceGetResult() == 8)
    }

    @Test func thenOfFutureThatBecomesImmortalFailsWhenUnlessIsCancelledLater() {
        var s: FutureSource<Int>? = FutureSource<Int>()
        let u = CancelTokenSource()
        let deinits = Counter(), ran = Counter()
        weak var input: Future<Int>?
        let f: Future<Int>
        do {
            let obj = Tracked(deinits)
            input = s!.future
            f = s!.future.then(unless: u.token) { v in obj.touch(); ran.increment(); return v }
        }
        drop(&s)
        // Never runs: the function and the input are released at once; the
        // output can still fail through `unless`.
        #expect(deinits.value == 1)
        #expect(input == nil)
        #expect(f.state == .pending)
        u.cancel()
        #expect(f.hasFailedWithCancel)
        #expect(ran.value == 0)
    }

    @Test func thenOfFutureThatBecomesImmortalIsImmortalOnceUnlessCannotFire() {
        var s: FutureSource<Int>? = FutureSource<Int>()
        var u: CancelTokenSource? = CancelTokenSource()
        let deinits = Counter()
        let f: Future<Int>
        do {
            let obj = Tracked(deinits)
            f = s!.future.then(unless: u!.token) { v in obj.touch(); return v }
        }
        drop(&s)
        #expect(deinits.value == 1)
        drop(&u)
        #expect(f.state == .immortal)
    }

    @Test func thenDoOfFutureThatBecomesImmortalReleasesItsClosure() {
        var s: FutureSource<Int>? = FutureSource<Int>()
        let u = CancelTokenSource()
        let deinits = Counter()
        do {
            let obj = Tracked(deinits)
            s!.future.thenDo(unless: u.token) { _ in obj.touch() }
        }
        drop(&s)
        #expect(deinits.value == 1)
    }

    /// Every continuation form on a future that becomes immortal while
    /// `unless` is live: the function is released at once (a long-lived
    /// `unless` must not keep what it captured), the outputs stay pending
    /// and fail with `CancellationError` when `unless` is cancelled.
    @Test func everyFormOfAFutureThatBecomesImmortalReleasesItsFunctionAtOnce() {
        var s: FutureSource<Int>? = FutureSource<Int>()
        let u = CancelTokenSource()
        let deinits = Counter(), ran = Counter()
        var outs: [Future<Int>] = []
        do {
            let f = s!.future
            let t = (0..<9).map { _ in Tracked(deinits) }
            outs.append(f.then(unless: u.token) { v -> Int in t[0].touch(); ran.increment(); return v })
            outs.append(f.then(unless: u.token) { v -> Future<Int> in t[1].touch(); ran.increment(); return .succeeded(v) })
            outs.append(f.catch(unless: u.token) { _ -> Int in t[2].touch(); ran.increment(); return 0 })
            outs.append(f.catch(unless: u.token) { _ -> Future<Int> in t[3].touch(); ran.increment(); return .succeeded(0) })
            outs.append(f.finally(unless: u.token) { _ -> Int in t[4].touch(); ran.increment(); return 0 })
            outs.append(f.finally(unless: u.token) { _ -> Future<Int> in t[5].touch(); ran.increment(); return .succeeded(0) })
            f.thenDo(unless: u.token) { _ in t[6].touch(); ran.increment() }
            f.catchDo(unless: u.token) { _ in t[7].touch(); ran.increment() }
            f.finallyDo(unless: u.token) { _ in t[8].touch(); ran.increment() }
            outs.append(f.unless(u.token))
        }
        drop(&s)
        #expect(deinits.value == 9)
        #expect(outs.allSatisfy { $0.state == .pending })
        u.cancel()
        #expect(outs.allSatisfy { $0.hasFailedWithCancel })
        #expect(ran.value == 0)
    }

    /// The same on a future that is already immortal when they are added.
    @Test func formsAddedToAnImmortalFutureWithALiveUnlessReleaseTheirFunctionAtOnce() {
        let u = CancelTokenSource()
        let deinits = Counter()
        var outs: [Future<Int>] = []
        do {
            let f = Future<Int>.immortal
            let t = (0..<4).map { _ in Tracked(deinits) }
            outs.append(f.then(unless: u.token) { v -> Int in t[0].touch(); return v })
            outs.append(f.then(unless: u.token) { v -> Future<Int> in t[1].touch(); return .succeeded(v) })
            outs.append(f.catch(unless: u.token) { _ -> Int in t[2].touch(); return 0 })
            f.thenDo(unless: u.token) { _ in t[3].touch() }
        }
        #expect(deinits.value == 4)
        #expect(outs.allSatisfy { $0.state == .pending })
        u.cancel()
        #expect(outs.allSatisfy { $0.hasFailedWithCancel })
    }

    @Test func pendingStepsOnAQueueRunThere() {
        let q = DispatchQueue(label: "cf.test.steps")
        let key = DispatchSpecificKey<Int>()
        q.setSpecific(key: key, value: 5)
        let s = FutureSource<Int>()
        let onQueue = Counter()
        let f = s.future.then(on: q) { _ in DispatchQueue.getSpecific(key: key) }
        s.future.thenDo(on: q) { _ in if DispatchQueue.getSpecific(key: key) == 5 { onQueue.increment() } }
        s.trySetResult(1)
        #expect(eventually { !f.isIncomplete && onQueue.value == 1 })
        #expect(f.forceGetResult() == 5)
    }

    @Test func completedFutureStepsRunInline() {
        let log = Log<String>()
        let f = Future.succeeded(2)
        let g = f.then { v -> Int in log.append("then"); return v * 3 }
        f.thenDo { _ in log.append("thenDo") }
        #if !DISPATCH_LOCK && !MUTEX_LOCK
        let h = f.then(on: .completingThread) { v -> Int in log.append("then-ct"); return v * 5 }
        f.thenDo(on: .completingThread) { _ in log.append("thenDo-ct") }
        #expect(h.forceGetResult() == 10)
        #endif
        log.append("after")
        #if !DISPATCH_LOCK && !MUTEX_LOCK
        #expect(log.all == ["then", "thenDo", "then-ct", "thenDo-ct", "after"])
        #else
        #expect(log.all == ["then", "thenDo", "after"])
        #endif
        #expect(g.forceGetResult() == 6)
    }

    @Test func thenDoOnAFailedFutureNeverRunsAndReleasesItsClosure() {
        let s = FutureSource<Int>()
        let deinits = Counter(), ran = Counter()
        do {
            let obj = Tracked(deinits)
            s.future.thenDo { _ in obj.touch(); ran.increment() }
        }
        s.trySetFailure(TestError())
        #expect(ran.value == 0)
        #expect(deinits.value == 1)
    }
}

@Suite struct Collapsing {
    @Test func setToPendingFutureFlattensThenCompletes() {
        let a = FutureSource<Int>(), b = FutureSource<Int>()
        #expect(a.trySetResult(b.future))
        #expect(a.future.state == .flattening)
        #expect(a.future.isIncomplete)
        b.trySetFailure(TestError(code: 6))
        #expect(a.future.forceGetFailure() as? TestError == TestError(code: 6))
    }

    @Test func setToCompletedFutureCompletesAtOnce() {
        let a = FutureSource<Int>()
        a.trySetResult(Future.succeeded(2))
        #expect(a.future.forceGetResult() == 2)
    }

    @Test func flatteningIntoFutureThatBecomesImmortalBecomesImmortal() {
        let a = FutureSource<Int>()
        var b: FutureSource<Int>? = FutureSource<Int>()
        a.trySetResult(b!.future)
        drop(&b)
        #expect(a.future.state == .immortal)
    }

    @Test func flatteningSourceDeinitDoesNotImmortalize() {
        var a: FutureSource<Int>? = FutureSource<Int>()
        let b = FutureSource<Int>()
        let f = a!.future
        a!.trySetResult(b.future)
        drop(&a)
        #expect(f.state == .flattening)
        b.trySetResult(1)
        #expect(f.forceGetResult() == 1)
    }

    @Test func selfCycleBecomesImmortal() {
        let a = FutureSource<Int>()
        let deinits = Counter()
        do {
            let obj = Tracked(deinits)
            a.future.thenDo { _ in obj.touch() }
        }
        a.trySetResult(a.future)
        #expect(a.future.state == .immortal)
        #expect(deinits.value == 1)
    }

    @Test func twoFutureCycleBecomesImmortal() {
        let a = FutureSource<Int>(), b = FutureSource<Int>()
        a.trySetResult(b.future)
        b.trySetResult(a.future)
        #expect(a.future.state == .immortal)
        #expect(b.future.state == .immortal)
    }

    @Test func tenFutureCycleBecomesImmortalAndFreesEverything() {
        let deinits = Counter()
        weak var weakFirst: Future<Int>?
        do {
            let sources = (0..<10).map { _ in FutureSource<Int>() }
            weakFirst = sources[0].future
            for i in 0..<10 {
                let obj = Tracked(deinits)
                sources[i].future.thenDo { _ in obj.touch() }
            }
            for i in 0..<10 { sources[i].trySetResult(sources[(i + 1) % 10].future) }
            #expect(sources.allSatisfy { $0.future.state == .immortal })
            #expect(deinits.value == 10)
        }
        #expect(weakFirst == nil)
    }

    @Test func futureFlatteningIntoACycleBecomesImmortal() {
        let a = FutureSource<Int>(), b = FutureSource<Int>(), c = FutureSource<Int>()
        c.trySetResult(a.future)
        a.trySetResult(b.future)
        b.trySetResult(a.future)
        #expect(c.future.state == .immortal)
    }

    @Test func concurrentTwoThreadCycleClosingAlwaysEndsImmortalWithNothingLeaked() {
        let deinits = Counter()
        for _ in 0..<500 {
            weak var wa: Future<Int>?, wb: Future<Int>?
            do {
                let a = FutureSource<Int>(), b = FutureSource<Int>()
                wa = a.future; wb = b.future
                let obj = Tracked(deinits)
                a.future.thenDo { _ in obj.touch() }
                onThreads(2) { i in
                    if i == 0 { a.trySetResult(b.future) } else { b.trySetResult(a.future) }
                }
                #expect(a.future.state == .immortal)
                #expect(b.future.state == .immortal)
            }
            #expect(wa == nil && wb == nil)
        }
        #expect(deinits.value == 500)
    }
}

@Suite struct FutureLeaks {
    @Test func consumerCycleThroughFutureIsFreedWhenSourceDies() {
        let deinits = Counter()
        var source: FutureSource<Int>? = FutureSource<Int>()
        do {
            let c = Consumer(deinits)
            c.future = source!.future
            c.future!.thenDo { _ in c.ran.increment() }   // self -> future -> handler -> self
        }
        #expect(deinits.value == 0)
        drop(&source)
        #expect(deinits.value == 1)
    }

    @Test func continuationClosuresReleasedAfterRunning() {
        let deinits = Counter()
        let s = FutureSource<Int>()
        var results: [Future<Int>] = []
        for _ in 0..<10 {
            let obj = Tracked(deinits)
            results.append(s.future.then { obj.touch(); return $0 })
        }
        s.trySetResult(1)
        #expect(deinits.value == 10)
        #expect(results.allSatisfy { $0.forceGetResult() == 1 })
    }
}

@Suite struct DeepChains {
    @Test func completingHeadOfMillionLongThenChainDoesNotOverflow() {
        let s = FutureSource<Int>()
        var f = s.future
        for _ in 0..<1_000_000 { f = f.then { $0 + 1 } }
        s.trySetResult(0)
        #expect(f.forceGetResult() == 1_000_000)
    }

    @Test func millionDeepFlattenChainCompletesWithoutOverflow() {
        // Recursive retry-style code: each continuation returns the next
        // future, which is still pending when it is returned.
        #expect(runFlattenChain(depth: 1_000_000) == 1_000_000)
    }
}

/// Builds a flatten chain `depth` deep the way recursive retry code does and
/// drives it; returns the outermost result.
func runFlattenChain(depth: Int) -> Int? {
    final class Steps: @unchecked Sendable { var pending: [FutureSource<Void>] = [] }
    let steps = Steps()
    @Sendable func loop(_ n: Int) -> Future<Int> {
        if n == 0 { return .succeeded(0) }
        let s = FutureSource<Void>()
        steps.pending.append(s)
        return s.future.then { (_: Void) -> Future<Int> in loop(n - 1).then { $0 + 1 } }
    }
    let f = loop(depth)
    while let s = steps.pending.popLast() { s.trySetResult() }
    return try? f.result?.get()
}

/// Sets an optional to nil (drops the last reference) without a
/// never-read warning.
func drop<T>(_ x: inout T?) { x = nil }

/// Registers a `thenDo` on `future` whose closure holds `object` (a leak
/// test counts its deinit).
func thenDoHolding(_ object: Tracked, on future: Future<Int>) {
    future.thenDo { _ in object.touch() }
}

/// A continuation that returns another continuation's output (tail-recursive
/// retry code): the lock-free version links that output into its own
/// instead of flattening (Future._link), so these pin the behaviour a user
/// sees either way, whoever else holds the output.
@Suite struct ReturnedContinuationOutputs {
    final class Box<T>: @unchecked Sendable { var value: T?; init() {} }

    @Test func aTailRecursiveChainTakesTheInnermostFailure() {
        final class Steps: @unchecked Sendable { var pending: [FutureSource<Void>] = [] }
        let steps = Steps()
        @Sendable func loop(_ n: Int) -> Future<Int> {
            if n == 0 { return .failed(Boom()) }
            let s = FutureSource<Void>()
            steps.pending.append(s)
            return s.future.then { (_: Void) -> Future<Int> in loop(n - 1) }
        }
        let f = loop(1_000)
        #expect(f.state == .pending)
        steps.pending.popLast()!.trySetResult()
        #expect(f.state == .flattening)
        while let s = steps.pending.popLast() { s.trySetResult() }
        #expect(f.forceGetFailure() is Boom)
    }

    /// A tail-recursive `then`, `catch` (retry) or `finally` chain whose
    /// pending level's source dies: the outer future becomes immortal and
    /// frees its handler while it is still alive (deinit counted).
    @Test func aTailRecursiveChainWhoseInnerInputDiesIsImmortalAndFreesItsHandlers() {
        enum Kind: CaseIterable { case then, `catch`, finally }
        let deinits = Counter()
        final class Steps: @unchecked Sendable { var pending: [FutureSource<Int>] = [] }
        let steps = Steps()
        for (k, kind) in Kind.allCases.enumerated() {
            @Sendable func loop(_ n: Int) -> Future<Int> {
                let s = FutureSource<Int>()
                steps.pending.append(s)
                switch kind {
                case .then: return s.future.then { (_: Int) -> Future<Int> in loop(n - 1) }
                case .catch: return s.future.catch { (_: any Error) -> Future<Int> in loop(n - 1) }
                case .finally: return s.future.finally { (_: Future<Int>) -> Future<Int> in loop(n - 1) }
                }
            }
            let f = loop(100)
            thenDoHolding(Tracked(deinits), on: f)
            for _ in 0..<10 {                                            // ten levels deep
                let s = steps.pending.removeLast()
                if kind == .then { s.trySetResult(0) } else { s.trySetFailure(Boom()) }
            }
            #expect(f.state == .flattening)
            #expect(deinits.value == k)
            steps.pending.removeAll()                                    // the pending level's source dies
            // `f` is still alive here: its handler was freed by immortality.
            #expect(f.state == .immortal)
            #expect(deinits.value == k + 1)
        }
    }

    @Test func aReturnedContinuationStoppedByItsUnlessFailsTheOuterWithCancellation() {
        let a = FutureSource<Int>(), b = FutureSource<Int>(), stop = CancelTokenSource()
        let f = a.future.then { (_: Int) -> Future<Int> in b.future.then(unless: stop.token) { $0 + 1 } }
        a.trySetResult(0)
        #expect(f.state == .flattening)
        stop.cancel()
        #expect(f.hasFailedWithCancel)
        b.trySetResult(1)
        #expect(f.hasFailedWithCancel)
    }

    /// Kept by the function and observed after the outer step took it on: a
    /// handler registered then, its token and its state all follow its own
    /// outcome, and both complete.
    @Test func aReturnedContinuationTheFunctionAlsoKeptCompletesBoth() {
        let a = FutureSource<Int>(), b = FutureSource<Int>()
        let kept = Box<Future<Int>>()
        let f = a.future.then { (_: Int) -> Future<Int> in
            let inner = b.future.then { $0 + 1 }
            kept.value = inner
            return inner
        }
        a.trySetResult(0)
        let inner = kept.value!
        let seen = Log<Int>()
        inner.thenDo { seen.append($0) }
        let stopped = inner.completionToken
        #expect(!stopped.isCancelled && stopped.canStillBeCancelled)
        #expect(inner.state == .pending && inner.result == nil)
        b.trySetResult(1)
        #expect(seen.all == [2])
        #expect(stopped.isCancelled)
        #expect(inner.forceGetResult() == 2 && f.forceGetResult() == 2)
    }

    /// Held by someone else when its producer dies: it is immortal, and so
    /// is the outer future, whose handler is freed.
    @Test func aReturnedContinuationHeldElsewhereWhoseInputDiesIsImmortal() {
        let deinits = Counter()
        let a = FutureSource<Int>()
        var b: FutureSource<Int>? = FutureSource<Int>()
        let kept = Box<Future<Int>>()
        let bFuture = b!.future
        let f = a.future.then { (_: Int) -> Future<Int> in
            let inner = bFuture.then { $0 + 1 }
            kept.value = inner
            return inner
        }
        thenDoHolding(Tracked(deinits), on: f)
        a.trySetResult(0)
        #expect(kept.value!.state == .pending)
        drop(&b)                                   // the inner step's input dies unset
        #expect(kept.value!.state == .immortal)
        #expect(f.state == .immortal)
        #expect(deinits.value == 1)
    }

    /// The library's own bookkeeping on a returned future that another took
    /// on and that has completed acts at once, as on any completed future,
    /// even inside a handler that has started work still waiting:
    /// `FutureSource(until:)` of its token is cancelled on return.
    @Test func untilOnACompletedReturnedFutureActsAtOnceInsideAHandler() {
        let input = FutureSource<Int>()
        let returned = input.future.then { $0 }
        let outer = FutureSource<Int>()
        #expect(outer.trySetResult(returned))
        input.trySetResult(1)
        #expect(returned.forceGetResult() == 1 && outer.future.forceGetResult() == 1)
        let a = CancelTokenSource(), b = CancelTokenSource()
        b.token.whenCancelled {}
        let setAfterwards = Log<Bool>()
        a.token.whenCancelled {
            b.cancel()                                   // work started, still waiting
            let s = FutureSource<Int>(until: returned.completionToken)
            setAfterwards.append(s.trySetResult(2))
        }
        a.cancel()
        #expect(setAfterwards.all == [false])
    }

    /// A handler registered on the returned future from another thread
    /// while the outer step takes it on runs once with its outcome, never
    /// lost, whichever comes first.
    @Test func aHandlerRegisteredWhileTheOuterStepTakesItOnRuns() {
        final class Shared: @unchecked Sendable {
            let inner = Locked<Future<Int>?>(nil)
        }
        for _ in 0..<500 {
            let a = FutureSource<Int>(), b = FutureSource<Int>()
            let shared = Shared()
            let ran = Log<Int>()
            let f = a.future.then { (_: Int) -> Future<Int> in
                let inner = b.future.then { $0 + 1 }
                shared.inner.withLock { $0 = inner }
                return inner
            }
            onThreads(2) { t in
                if t == 0 {
                    a.trySetResult(0)
                } else {
                    var inner: Future<Int>?
                    while inner == nil { inner = shared.inner.withLock { $0 } }
                    inner!.thenDo { ran.append($0) }
                }
            }
            b.trySetResult(1)
            #expect(ran.all == [2])
            #expect(f.forceGetResult() == 2)
        }
    }

    @Test func aReturnedContinuationWithAHandlerStillRunsIt() {
        let a = FutureSource<Int>(), b = FutureSource<Int>()
        let ran = Counter()
        let f = a.future.then { (_: Int) -> Future<Int> in
            let inner = b.future.then { $0 + 1 }
            inner.thenDo { if $0 == 2 { ran.increment() } }
            return inner
        }
        a.trySetResult(0)
        b.trySetResult(1)
        #expect(ran.value == 1)
        #expect(f.forceGetResult() == 2)
    }

    @Test func aReturnedContinuationWhoseFunctionReturnsTheOuterIsACycle() {
        let a = FutureSource<Int>(), b = FutureSource<Int>()
        let outer = Box<Future<Int>>()
        let deinits = Counter()
        let f = a.future.then { (_: Int) -> Future<Int> in
            b.future.then { (_: Int) -> Future<Int> in outer.value! }
        }
        outer.value = f
        thenDoHolding(Tracked(deinits), on: f)
        a.trySetResult(0)
        b.trySetResult(1)
        #expect(f.state == .immortal)
        #expect(deinits.value == 1)
        outer.value = nil
    }

    @Test func aReturnedContinuationOnAQueueOrThrowingOrUnderAnUnlessStillDecides() {
        let q = DispatchQueue(label: "returned")
        let a = FutureSource<Int>(), b = FutureSource<Int>(), u = CancelTokenSource()
        let onQueue = a.future.then { (_: Int) -> Future<Int> in b.future.then(on: q) { $0 + 1 } }
        let throwing = a.future.then { (_: Int) -> Future<Int> in b.future.then { (_: Int) throws -> Int in throw Boom() } }
        let underUnless = a.future.then(unless: u.token) { (_: Int) -> Future<Int> in b.future.then { $0 * 3 } }
        a.trySetResult(0)
        b.trySetResult(2)
        #expect(eventually { onQueue.result.flatMap { try? $0.get() } == 3 })
        #expect(throwing.forceGetFailure() is Boom)
        #expect(underUnless.forceGetResult() == 6)
        u.cancel()
        #expect(underUnless.forceGetResult() == 6)
    }

    /// The returned continuation's input becomes immortal while its `unless`
    /// can still fire: that `unless` decides the outer future, then or never.
    @Test func aReturnedContinuationOfAnImmortalInputFollowsItsUnless() {
        let a = FutureSource<Int>(), stop = CancelTokenSource()
        var b: FutureSource<Int>? = FutureSource<Int>()
        var never: CancelTokenSource? = CancelTokenSource()
        let bf = b!.future
        let nf = never!.token
        let cancelled = a.future.then { (_: Int) -> Future<Int> in bf.then(unless: stop.token) { $0 } }
        let immortal = a.future.then { (_: Int) -> Future<Int> in bf.then(unless: nf) { $0 } }
        a.trySetResult(0)
        drop(&b)
        #expect(cancelled.state == .flattening)
        #expect(immortal.state == .flattening)
        stop.cancel()
        drop(&never)
        #expect(cancelled.hasFailedWithCancel)
        #expect(immortal.state == .immortal)
    }

    /// The returned continuation's input dies on another thread while the
    /// outer continuation returns it: the outer future is immortal, and
    /// frees its handler, whichever comes first.
    @Test func aReturnedContinuationWhoseInputDiesConcurrentlyIsImmortal() {
        let deinits = Counter()
        for _ in 0..<1_000 {
            final class Holder: @unchecked Sendable { var b: FutureSource<Int>? = FutureSource<Int>() }
            let a = FutureSource<Int>(), h = Holder()
            let bf = h.b!.future
            let f = a.future.then { (_: Int) -> Future<Int> in bf.then { $0 } }
            thenDoHolding(Tracked(deinits), on: f)
            onThreads(2) { t in if t == 0 { a.trySetResult(0) } else { h.b = nil } }
            #expect(f.state == .immortal)
        }
        #expect(deinits.value == 1_000)
    }

    /// Someone the function handed the returned continuation to registers
    /// on it from another thread and lets go, racing the return: its
    /// handler still runs.
    @Test func aHandlerRegisteredFromAnotherThreadOnTheReturnedContinuationRuns() {
        final class Handoff: @unchecked Sendable {
            let lock = NSLock()
            var inner: Future<Int>?
            func put(_ f: Future<Int>) { lock.lock(); inner = f; lock.unlock() }
            func take() -> Future<Int>? { lock.lock(); defer { inner = nil; lock.unlock() }; return inner }
        }
        for _ in 0..<500 {
            let a = FutureSource<Int>(), b = FutureSource<Int>(), h = Handoff()
            let ran = Counter()
            let f = a.future.then { (_: Int) -> Future<Int> in
                let inner = b.future.then { $0 + 1 }
                h.put(inner)
                return inner
            }
            onThreads(2) { t in
                if t == 0 {
                    a.trySetResult(0)
                } else {
                    var inner: Future<Int>? = nil
                    while inner == nil { inner = h.take() }   // the step runs in thread 0's set
                    inner!.thenDo { if $0 == 2 { ran.increment() } }
                    inner = nil
                }
            }
            b.trySetResult(1)
            #expect(ran.value == 1)
            #expect(f.forceGetResult() == 2)
        }
    }

    /// A retry loop built on the collapsing `catch` (each failed attempt
    /// returns the next attempt's `catch`): the first success anywhere down
    /// the chain is the outer outcome, and a final failure propagates.
    @Test func aCatchRetryLoopTakesTheFirstSuccessOrTheLastFailure() {
        final class Attempts: @unchecked Sendable { var pending: [FutureSource<Int>] = [] }
        struct GaveUp: Error {}
        for succeedAt in [-1, 0, 3, 499] {
            let attempts = Attempts()
            @Sendable func attempt(_ n: Int) -> Future<Int> {
                let s = FutureSource<Int>()
                attempts.pending.append(s)
                return s.future.catch { (_: any Error) -> Future<Int> in n == 0 ? .failed(GaveUp()) : attempt(n - 1) }
            }
            let f = attempt(500)
            var i = 0
            while let s = attempts.pending.popLast() {
                if i == succeedAt { s.trySetResult(i) } else { s.trySetFailure(Boom()) }
                if i == 0 { #expect(f.state == (succeedAt == 0 ? .succeeded : .flattening)) }
                i += 1
            }
            // The last attempt's recovery gives up with its own error type.
            if succeedAt < 0 { #expect(f.forceGetFailure() is GaveUp) } else { #expect(f.forceGetResult() == succeedAt) }
        }
    }

    /// A collapsing `finally` chain behaves the same way: each level's
    /// function sees its completed input and returns the next level.
    @Test func aFinallyChainTakesTheInnermostOutcome() {
        final class Steps: @unchecked Sendable { var pending: [FutureSource<Int>] = []; var seen: [Int] = [] }
        let steps = Steps()
        @Sendable func loop(_ n: Int) -> Future<Int> {
            if n == 0 { return .succeeded(-1) }
            let s = FutureSource<Int>()
            steps.pending.append(s)
            return s.future.finally { (done: Future<Int>) -> Future<Int> in
                steps.seen.append(done.forceGetResult())
                return loop(n - 1)
            }
        }
        let f = loop(300)
        var i = 0
        while let s = steps.pending.popLast() { s.trySetResult(i); i += 1 }
        #expect(f.forceGetResult() == -1)
        #expect(steps.seen == Array(0..<300))
    }

    /// A collapsing `catch` or `finally` returning a `then` output, and the
    /// other way round, mixed in one chain; one returned output stopped by
    /// its `unless` fails the outer future with cancellation.
    @Test func mixedCollapsingStepsReturnedFromEachOther() {
        let a = FutureSource<Int>(), b = FutureSource<Int>(), c = FutureSource<Int>(), stop = CancelTokenSource()
        let f = a.future.catch { (_: any Error) -> Future<Int> in
            b.future.then { (v: Int) -> Future<Int> in
                c.future.finally { (d: Future<Int>) -> Future<Int> in .succeeded(v + d.forceGetResult()) }
            }
        }
        let g = a.future.catch { (_: any Error) -> Future<Int> in
            b.future.catch(unless: stop.token) { (_: any Error) -> Future<Int> in .succeeded(0) }
        }
        a.trySetFailure(Boom())
        #expect(f.state == .flattening)
        #expect(g.state == .flattening)
        stop.cancel()
        #expect(g.hasFailedWithCancel)
        b.trySetResult(10)
        #expect(f.state == .flattening)
        c.trySetResult(5)
        #expect(f.forceGetResult() == 15)
    }

    /// A returned `catch` output whose input fails on another thread while
    /// it is being returned: never lost.
    @Test func aReturnedCatchCompletedConcurrentlyIsNeverLost() {
        for round in 0..<2_000 {
            let a = FutureSource<Int>(), b = FutureSource<Int>()
            let f = a.future.then { (_: Int) -> Future<Int> in
                b.future.catch { (_: any Error) -> Future<Int> in .succeeded(round) }
            }
            onThreads(2) { t in if t == 0 { a.trySetResult(0) } else { b.trySetFailure(Boom()) } }
            #expect(f.result.flatMap { try? $0.get() } == round)
        }
    }

    /// The returned continuation's input completes on another thread while
    /// the outer continuation is returning it (the link races its
    /// producer's claim).
    @Test func aReturnedContinuationCompletedConcurrentlyIsNeverLost() {
        for round in 0..<2_000 {
            let a = FutureSource<Int>(), b = FutureSource<Int>()
            let f = a.future.then { (_: Int) -> Future<Int> in b.future.then { $0 + 1 }.then { $0 * 2 } }
            onThreads(2) { t in if t == 0 { a.trySetResult(0) } else { b.trySetResult(round) } }
            #expect(f.result.flatMap { try? $0.get() } == (round + 1) * 2)
        }
    }
}
