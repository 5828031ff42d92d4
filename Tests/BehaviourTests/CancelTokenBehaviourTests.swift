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

@Suite struct CancelTokenStates {
    @Test func newSourceTokenIsStillCancellable() {
        let s = CancelTokenSource()
        #expect(s.token.state == .stillCancellable)
        #expect(s.token.canStillBeCancelled)
        #expect(!s.token.isCancelled)
    }

    @Test func cancelMovesStillCancellableToCancelled() {
        let s = CancelTokenSource()
        s.cancel()
        #expect(s.token.state == .cancelled)
        #expect(s.token.isCancelled)
        #expect(!s.token.canStillBeCancelled)
    }

    @Test func sourceDeinitWithoutCancelMakesTokenImmortal() {
        var s: CancelTokenSource? = CancelTokenSource()
        let t = s!.token
        drop(&s)
        #expect(t.state == .immortal)
        #expect(!t.canStillBeCancelled)
        #expect(!t.isCancelled)
    }

    @Test func cancelledTokenStaysCancelledAfterSourceDeinit() {
        var s: CancelTokenSource? = CancelTokenSource()
        let t = s!.token
        s!.cancel()
        drop(&s)
        #expect(t.state == .cancelled)
    }

    @Test func cancelOnDeinitSourceCancelsWhenDeallocated() {
        let ran = Counter()
        var s: CancelTokenSource? = CancelTokenSource(cancelOnDeinit: true)
        let t = s!.token
        t.whenCancelled { ran.increment() }
        drop(&s)
        #expect(t.state == .cancelled)
        #expect(ran.value == 1)
    }

    @Test func cancelOnDeinitFalseImmortalizes() {
        var s: CancelTokenSource? = CancelTokenSource(cancelOnDeinit: false)
        let t = s!.token
        drop(&s)
        #expect(t.state == .immortal)
    }

    @Test func tryCancelReturnsFalseWhenAlreadyCancelled() {
        let s = CancelTokenSource()
        #expect(s.tryCancel())
        #expect(!s.tryCancel())
        s.cancel()
        #expect(s.token.isCancelled)
    }

    @Test func staticCancelledAndImmortalTokens() {
        #expect(CancelToken.cancelled.state == .cancelled)
        #expect(CancelToken.immortal.state == .immortal)
    }

    @Test func descriptionNamesTheState() {
        let s = CancelTokenSource()
        #expect(s.token.description.contains("stillCancellable"))
        s.cancel()
        #expect(s.token.description.contains("cancelled"))
        #expect(CancelToken.immortal.description.contains("immortal"))
    }

    @Test func tokensOfOneSourceAreEqualAndHashAlike() {
        let a = CancelTokenSource(), b = CancelTokenSource()
        #expect(a.token == a.token)
        #expect(a.token != b.token)
        #expect(Set([a.token, a.token, b.token]).count == 2)
    }
}

@Suite struct WhenCancelled {
    @Test func handlerRunsOnceWhenCancelled() {
        let s = CancelTokenSource()
        let ran = Counter()
        s.token.whenCancelled { ran.increment() }
        #expect(ran.value == 0)
        s.cancel()
        s.cancel()
        #expect(ran.value == 1)
    }

    @Test func handlerRunsInlineWhenAlreadyCancelled() {
        let ran = Counter()
        CancelToken.cancelled.whenCancelled { ran.increment() }
        #expect(ran.value == 1)
    }

    @Test func handlerOnImmortalTokenIsReleasedAtOnceUnrun() {
        let deinits = Counter(), ran = Counter()
        do {
            let obj = Tracked(deinits)
            CancelToken.immortal.whenCancelled { obj.touch(); ran.increment() }
        }
        #expect(deinits.value == 1)
        #expect(ran.value == 0)
    }

    @Test func handlersAreDiscardedUnrunWhenTokenBecomesImmortal() {
        let deinits = Counter(), ran = Counter()
        var s: CancelTokenSource? = CancelTokenSource()
        do {
            let obj = Tracked(deinits)
            s!.token.whenCancelled { obj.touch(); ran.increment() }
        }
        #expect(deinits.value == 0)
        drop(&s)
        #expect(deinits.value == 1)
        #expect(ran.value == 0)
    }

    @Test func handlersRunInRegistrationOrder() {
        let s = CancelTokenSource()
        let log = Log<Int>()
        for i in 0..<100 { s.token.whenCancelled { log.append(i) } }
        s.cancel()
        #expect(log.all == Array(0..<100))
    }

    @Test func handlerRunsOnTheCancellingThread() {
        let s = CancelTokenSource()
        let ranOn = Log<UInt>(), cancelledOn = Log<UInt>()
        s.token.whenCancelled { ranOn.append(UInt(pthread_self())) }
        onThreads(1) { _ in
            cancelledOn.append(UInt(pthread_self()))
            s.cancel()
        }
        #expect(ranOn.all.count == 1)
        #expect(ranOn.all == cancelledOn.all)
    }

    @Test func handlerWithQueueRunsOnThatQueue() {
        let q = DispatchQueue(label: "cf.test.on")
        let key = DispatchSpecificKey<Int>()
        q.setSpecific(key: key, value: 7)
        let seen = Log<Int?>()
        let s = CancelTokenSource()
        s.token.whenCancelled(on: q) { seen.append(DispatchQueue.getSpecific(key: key)) }
        s.cancel()
        #expect(eventually { seen.all.count == 1 })
        #expect(seen.all == [7])
    }

    /// With an `unless:` token the node keeps its link where it keeps its
    /// threading; the threading must hold all the same.
    @Test func handlerWithQueueAndUnlessRunsOnThatQueue() {
        let q = DispatchQueue(label: "cf.test.on.unless")
        let key = DispatchSpecificKey<Int>()
        q.setSpecific(key: key, value: 8)
        let seen = Log<Int?>()
        let s = CancelTokenSource(), u = CancelTokenSource()
        s.token.whenCancelled(on: q, unless: u.token) { seen.append(DispatchQueue.getSpecific(key: key)) }
        s.cancel()
        #expect(eventually { seen.all.count == 1 })
        #expect(seen.all == [8])
    }

    @Test func handlerWithQueueOnCancelledTokenRunsOnThatQueue() {
        let q = DispatchQueue(label: "cf.test.on2")
        let key = DispatchSpecificKey<Int>()
        q.setSpecific(key: key, value: 9)
        let seen = Log<Int?>()
        CancelToken.cancelled.whenCancelled(on: q) { seen.append(DispatchQueue.getSpecific(key: key)) }
        #expect(eventually { seen.all.count == 1 })
        #expect(seen.all == [9])
    }

    // Under `swift test` on Linux the main actor runs on the main queue but
    // off the main thread (the runner retires it, as an async `main` does,
    // and worker threads drain the main queue): code on the main queue
    // counts as "on the main thread" (so such a handler does not run inline
    // on the cancelling thread), and the check is for the main queue.
    @Test func handlerRegisteredOnMainThreadRunsOnMainQueueWhenCancelledElsewhere() async {
        let s = CancelTokenSource()
        let onMain = Log<Bool>()
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        await MainActor.run {
            _ = s.token.whenCancelled { onMain.append(DispatchQueue.getSpecific(key: key) == true) }
        }
        await Task.detached { s.cancel() }.value
        // The handler hops to the main queue; wait for the main actor to drain it.
        let end = ContinuousClock.now + patience
        while onMain.all.isEmpty && ContinuousClock.now < end { _ = await MainActor.run { 0 }; try? await Task.sleep(nanoseconds: 1_000_000) }
        #expect(onMain.all == [true])
    }

    @Test func handlerRegisteredOnMainThreadWithUnlessRunsOnMainQueueWhenCancelledElsewhere() async {
        let s = CancelTokenSource(), u = CancelTokenSource()
        let onMain = Log<Bool>()
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        await MainActor.run {
            _ = s.token.whenCancelled(unless: u.token) { onMain.append(DispatchQueue.getSpecific(key: key) == true) }
        }
        await Task.detached { s.cancel() }.value
        let end = ContinuousClock.now + patience
        while onMain.all.isEmpty && ContinuousClock.now < end { _ = await MainActor.run { 0 }; try? await Task.sleep(nanoseconds: 1_000_000) }
        #expect(onMain.all == [true])
    }

    @Test func handlerRegisteredOnMainThreadRunsInlineWhenCancelledOnMain() async {
        let s = CancelTokenSource()
        let ranBeforeReturn = await MainActor.run { () -> Bool in
            let ran = Counter()
            s.token.whenCancelled { ran.increment() }
            s.cancel()
            return ran.value == 1
        }
        #expect(ranBeforeReturn)
    }

    @Test func removeBeforeCancelPreventsRunAndReleasesClosureAtOnce() {
        let s = CancelTokenSource()
        let deinits = Counter(), ran = Counter()
        var reg: CancelRegistration?
        do {
            let obj = Tracked(deinits)
            reg = s.token.whenCancelled { obj.touch(); ran.increment() }
        }
        #expect(deinits.value == 0)
        #expect(reg!.remove())
        #expect(deinits.value == 1)
        s.cancel()
        #expect(ran.value == 0)
    }

    @Test func removeIsSafeTwiceAndLateAndAfterSettle() {
        let s = CancelTokenSource()
        let ran = Counter()
        let reg = s.token.whenCancelled { ran.increment() }
        s.cancel()
        #expect(ran.value == 1)
        #expect(!reg.remove())
        #expect(!reg.remove())

        let s2 = CancelTokenSource()
        let reg2 = s2.token.whenCancelled {}
        #expect(reg2.remove())
        #expect(reg2.remove())
        s2.cancel()
        #expect(reg2.remove())
    }

    @Test func removeAfterImmortalReportsNeverRuns() {
        var s: CancelTokenSource? = CancelTokenSource()
        let reg = s!.token.whenCancelled {}
        drop(&s)
        #expect(reg.remove())
        #expect(CancelToken.immortal.whenCancelled {}.remove())
    }

    @Test func discardedRegistrationKeepsHandlerRegistered() {
        let s = CancelTokenSource()
        let ran = Counter()
        _ = s.token.whenCancelled { ran.increment() }
        s.cancel()
        #expect(ran.value == 1)
    }
}

@Suite struct Unless {
    @Test func handlerNeverRunsWhenUnlessCancelledFirstAndIsReleasedAtOnce() {
        let s = CancelTokenSource(), u = CancelTokenSource()
        let deinits = Counter(), ran = Counter()
        do {
            let obj = Tracked(deinits)
            s.token.whenCancelled(unless: u.token) { obj.touch(); ran.increment() }
        }
        u.cancel()
        #expect(deinits.value == 1)
        s.cancel()
        #expect(ran.value == 0)
    }

    @Test func handlerRunsWhenTokenCancelledBeforeUnless() {
        let s = CancelTokenSource(), u = CancelTokenSource()
        let ran = Counter()
        s.token.whenCancelled(unless: u.token) { ran.increment() }
        s.cancel()
        u.cancel()
        #expect(ran.value == 1)
    }

    @Test func alreadyCancelledUnlessNeverRuns() {
        let s = CancelTokenSource()
        let ran = Counter()
        let reg = s.token.whenCancelled(unless: .cancelled) { ran.increment() }
        s.cancel()
        #expect(ran.value == 0)
        #expect(reg.remove())
    }

    @Test func sameTokenAsBothNeverRuns() {
        let s = CancelTokenSource()
        let ran = Counter(), deinits = Counter()
        do {
            let obj = Tracked(deinits)
            s.token.whenCancelled(unless: s.token) { obj.touch(); ran.increment() }
        }
        #expect(deinits.value == 1)
        s.cancel()
        #expect(ran.value == 0)
    }

    @Test func immortalUnlessDoesNotPreventRun() {
        let s = CancelTokenSource()
        var u: CancelTokenSource? = CancelTokenSource()
        let ran = Counter()
        s.token.whenCancelled(unless: u!.token) { ran.increment() }
        drop(&u)
        s.cancel()
        #expect(ran.value == 1)
    }

    @Test func unlessLinkIsRemovedWhenHandlerRunsSoNothingAccumulates() {
        // A long-lived `unless` token: every handler that ran must release
        // its link's captures (the link holds only the registration).
        let u = CancelTokenSource()
        let deinits = Counter()
        for _ in 0..<1000 {
            let s = CancelTokenSource()
            let obj = Tracked(deinits)
            s.token.whenCancelled(unless: u.token) { obj.touch() }
            s.cancel()
        }
        #expect(deinits.value == 1000)
    }

    /// A handler registered with `unless` while one thread cancels its
    /// token and another its `unless` token: whichever comes first, every
    /// handler runs at most once and every closure is released (the link,
    /// reachable through its handler's node as soon as that is listed,
    /// must not be settled behind a remover's back).
    @Test func registrationRacingBothTokensRunsAtMostOnceAndReleasesAll() {
        let n = 20_000
        let tokens = (0..<n).map { _ in CancelTokenSource() }
        let unlesses = (0..<n).map { _ in CancelTokenSource() }
        let runs = Counter(), deinits = Counter()
        onThreads(3) { t in
            for i in 0..<n {
                switch t {
                case 0:
                    let obj = Tracked(deinits)
                    tokens[i].token.whenCancelled(unless: unlesses[i].token) { obj.touch(); runs.increment() }
                case 1: tokens[i].cancel()
                default: unlesses[i].cancel()
                }
            }
        }
        #expect(runs.value <= n)
        #expect(deinits.value == n)
    }
}

@Suite struct LinkedSources {
    @Test func linkedSourceIsCancelledWithParent() {
        let parent = CancelTokenSource()
        let child = CancelTokenSource(until: parent.token)
        #expect(child.token.canStillBeCancelled)
        parent.cancel()
        #expect(child.token.isCancelled)
    }

    @Test func linkedToCancelledParentStartsCancelled() {
        let child = CancelTokenSource(until: .cancelled)
        #expect(child.token.isCancelled)
    }

    @Test func cancellingChildDoesNotCancelParent() {
        let parent = CancelTokenSource()
        let child = CancelTokenSource(until: parent.token)
        child.cancel()
        #expect(parent.token.canStillBeCancelled)
    }

    @Test func childThatDiesLeavesNothingOnParent() {
        // The leaf registration is removed when the child becomes immortal:
        // the child's own token handlers (capturing objects) are freed.
        let parent = CancelTokenSource()
        let deinits = Counter()
        for _ in 0..<100 {
            let child = CancelTokenSource(until: parent.token)
            let obj = Tracked(deinits)
            child.token.whenCancelled { obj.touch() }
        }
        #expect(deinits.value == 100)
        parent.cancel()
    }

    @Test func chainOf100000LinkedSourcesCancelsFromRootWithoutStackOverflow() {
        let root = CancelTokenSource()
        var sources = [root]
        sources.reserveCapacity(100_001)
        for _ in 0..<100_000 { sources.append(CancelTokenSource(until: sources.last!.token)) }
        let ran = Counter()
        sources.last!.token.whenCancelled { ran.increment() }
        root.cancel()
        #expect(ran.value == 1)
        #expect(sources.allSatisfy { $0.token.isCancelled })
    }
}

@Suite struct AnyAll {
    @Test func anyIsCancelledWhenTheFirstIs() {
        let a = CancelTokenSource(), b = CancelTokenSource()
        let t = CancelToken.any(a.token, b.token)
        #expect(t.canStillBeCancelled)
        b.cancel()
        #expect(t.isCancelled)
    }

    @Test func anyOfACancelledTokenIsCancelled() {
        let a = CancelTokenSource()
        #expect(CancelToken.any(a.token, .cancelled).isCancelled)
    }

    @Test func anyBecomesImmortalWhenEveryInputIs() {
        var a: CancelTokenSource? = CancelTokenSource()
        var b: CancelTokenSource? = CancelTokenSource()
        let t = CancelToken.any([a!.token, b!.token])
        drop(&a)
        #expect(t.canStillBeCancelled)
        drop(&b)
        #expect(t.state == .immortal)
        #expect(CancelToken.any([]).state == .immortal)
    }

    @Test func allIsCancelledWhenEveryOneIs() {
        let a = CancelTokenSource(), b = CancelTokenSource(), c = CancelTokenSource()
        let t = CancelToken.all(a.token, b.token, c.token)
        a.cancel(); b.cancel()
        #expect(t.canStillBeCancelled)
        c.cancel()
        #expect(t.isCancelled)
        #expect(CancelToken.all([]).isCancelled)
    }

    @Test func allBecomesImmortalAsSoonAsAnyInputIs() {
        let a = CancelTokenSource()
        var b: CancelTokenSource? = CancelTokenSource()
        let t = CancelToken.all(a.token, b!.token)
        drop(&b)
        #expect(t.state == .immortal)
        #expect(CancelToken.all(a.token, .immortal).state == .immortal)
    }

    @Test func anyHandlersOnLongLivedInputsAreReleasedOnceResultCancelled() {
        let longLived = CancelTokenSource()
        let deinits = Counter()
        for _ in 0..<100 {
            let other = CancelTokenSource()
            let t = CancelToken.any(longLived.token, other.token)
            let obj = Tracked(deinits)
            t.whenCancelled { obj.touch() }
            other.cancel()
        }
        #expect(deinits.value == 100)
    }
}

@Suite struct TokenConcurrency {
    @Test func registeringRemovingAndCancellingConcurrentlyRunsEachHandlerAtMostOnce() {
        for _ in 0..<50 {
            let s = CancelTokenSource()
            let runs = Counter(), removed = Counter(), registered = Counter()
            onThreads(4) { i in
                if i == 3 {
                    s.cancel()
                    return
                }
                for k in 0..<200 {
                    registered.increment()
                    let r = s.token.whenCancelled { runs.increment() }
                    if k % 3 == 0 && r.remove() { removed.increment() }
                }
            }
            // Every handler either ran exactly once or was removed, never both.
            #expect(runs.value + removed.value == registered.value)
        }
    }

    @Test func registrationRacingCancelLosesNoHandler() {
        for _ in 0..<200 {
            let s = CancelTokenSource()
            let runs = Counter()
            onThreads(3) { i in
                if i == 0 { s.cancel() } else { for _ in 0..<20 { s.token.whenCancelled { runs.increment() } } }
            }
            #expect(runs.value == 40)
        }
    }
}

@Suite struct TokenLeaks {
    @Test func seedCycleThroughTokenIsFreedWhenSourceDies() {
        let deinits = Counter()
        var source: CancelTokenSource? = CancelTokenSource()
        do {
            let c = Consumer(deinits)
            c.token = source!.token
            c.token!.whenCancelled { c.ran.increment() }   // self -> token -> handler -> self
        }
        #expect(deinits.value == 0)
        drop(&source)
        #expect(deinits.value == 1)
    }

    @Test func seedCycleThroughTokenIsFreedWhenCancelled() {
        let deinits = Counter()
        let source = CancelTokenSource()
        do {
            let c = Consumer(deinits)
            c.token = source.token
            c.token!.whenCancelled { c.ran.increment() }
        }
        source.cancel()
        #expect(deinits.value == 1)
    }

    @Test func handlersReleasedAfterRunning() {
        let deinits = Counter()
        let s = CancelTokenSource()
        for _ in 0..<10 {
            let obj = Tracked(deinits)
            s.token.whenCancelled { obj.touch() }
        }
        s.cancel()
        #expect(deinits.value == 10)
    }
}
