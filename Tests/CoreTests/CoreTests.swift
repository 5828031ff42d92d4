// Properties of the lock-free core that the Dispatch-lock version does not
// share: memory bounds of the handler list under churn.
@_spi(Testing) import CollapsingFutures
import Testing
import TestSupport
import Dispatch

@Suite struct HandlerListMemory {
    @Test func registerRemoveChurnOnLongLivedTokenKeepsListSmall() {
        let s = CancelTokenSource()
        var peak = 0
        for i in 0..<1_000_000 {
            let r = s.token.whenCancelled {}
            #expect(r.remove())
            if i % 1000 == 0 { peak = max(peak, s.token._linkedNodeCount) }
        }
        let after = s.token._linkedNodeCount
        print("churn: linked nodes after 1,000,000 register/remove = \(after), peak sampled = \(peak)")
        #expect(after <= 32)
        #expect(peak <= 32)
    }

    /// The bound the model checker proves (Model/README.md, P6): once no
    /// removal is in flight, removed-but-linked nodes <= max(CF_CLEAN_MIN -
    /// 1, last_len / 2), with several threads churning too (a remover that
    /// finds another cleaner at work leaves its node to that cleaner's
    /// re-check). Here nothing stays live, so last_len stays small.
    @Test func concurrentChurnLeavesTheListBoundedOnceRemovalsStop() {
        let s = CancelTokenSource()
        let token = s.token
        for round in 0..<20 {
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                for _ in 0..<20_000 { token.whenCancelled {}.remove() }
            }
            let n = token._linkedNodeCount
            #expect(n <= 32, "round \(round): \(n) nodes still linked after the churn stopped")
        }
        #expect(token._liveRegistrationCount == 0)
    }

    @Test func churnWithLiveHandlersStaysProportionalToLiveOnes() {
        let s = CancelTokenSource()
        var keep: [CancelRegistration] = []
        for _ in 0..<1000 { keep.append(s.token.whenCancelled {}) }
        for _ in 0..<200_000 { s.token.whenCancelled {}.remove() }
        let n = s.token._linkedNodeCount
        print("churn with 1000 live: linked nodes = \(n)")
        #expect(n >= 1000)
        #expect(n <= 1000 + 1000 / 2 + 32)
        s.cancel()
        #expect(s.token._linkedNodeCount == 0)
    }

    /// `then`/`thenDo` steps (`_StepFuture`/`_SinkNode`) with a long-lived
    /// `unless`: completed steps leave nothing live on it, and a step whose
    /// `unless` fired first is removed from its input's list.
    @Test func thenStepsWithALongLivedUnlessDoNotAccumulate() {
        let longLived = CancelTokenSource()
        let ran = Counter()
        for i in 0..<10_000 {
            let s = FutureSource<Int>()
            let f = s.future.then(unless: longLived.token) { $0 + 1 }
            f.thenDo(unless: longLived.token) { _ in ran.increment() }
            s.trySetResult(i)
        }
        #expect(ran.value == 10_000)
        #expect(longLived.token._liveRegistrationCount == 0)
        #expect(longLived.token._linkedNodeCount <= 32)

        let s = FutureSource<Int>(), u = CancelTokenSource()
        let f = s.future.then(unless: u.token) { $0 }
        s.future.thenDo(unless: u.token) { _ in ran.increment() }
        #expect(s.future.completionToken._liveRegistrationCount == 2)
        u.cancel()
        #expect(s.future.completionToken._liveRegistrationCount == 0)
        #expect(f.hasFailedWithCancel)
    }

    @Test func unlessRegistrationsOnLongLivedTokenDoNotAccumulate() {
        let longLived = CancelTokenSource()
        let s = CancelTokenSource()
        for _ in 0..<1_000_000 {
            s.token.whenCancelled(unless: longLived.token) {}.remove()
        }
        let n = longLived.token._linkedNodeCount
        print("unless churn: linked nodes on the unless token after 1,000,000 = \(n)")
        #expect(n <= 32)
        #expect(s.token._linkedNodeCount <= 32)
    }

    @Test func unlessLinksOfHandlersThatRanAreUnlinked() {
        let longLived = CancelTokenSource()
        for _ in 0..<100_000 {
            let s = CancelTokenSource()
            s.token.whenCancelled(unless: longLived.token) {}
            s.cancel()
        }
        #expect(longLived.token._linkedNodeCount <= 32)
    }

    @Test func removedRegistrationFreesItsClosureAtOnce() {
        let d = Counter()
        let s = CancelTokenSource()
        var regs: [CancelRegistration] = []
        for _ in 0..<100 {
            let c = Tracked(d)
            regs.append(s.token.whenCancelled { _ = c })
        }
        for (i, r) in regs.enumerated() {
            #expect(r.remove())
            #expect(d.value == i + 1)
        }
    }

    /// Steps added to an immortal future with a live `unless` (whose
    /// `unless` link is made but never pushed: the future is settled) are
    /// held by the `unless` token alone, which can still fail them, and
    /// are freed when it becomes immortal.
    @Test func stepsOnAnImmortalFutureAreFreedWithTheirUnless() {
        var u: CancelTokenSource? = CancelTokenSource()
        weak var weakThen: Future<Int>?, weakCatch: Future<Int>?, weakFinally: Future<Int>?
        do {
            let f = Future<Int>.immortal
            let t = f.then(unless: u!.token) { $0 }, c = f.catch(unless: u!.token) { _ in 0 }
            let fin = f.finally(unless: u!.token) { _ in 0 }
            weakThen = t; weakCatch = c; weakFinally = fin
        }
        #expect(weakThen != nil && weakCatch != nil && weakFinally != nil)
        u = nil
        #expect(weakThen == nil && weakCatch == nil && weakFinally == nil)
    }

    @Test func settledTokenHasNoLinkedNodes() {
        let s = CancelTokenSource()
        for _ in 0..<10 { s.token.whenCancelled {} }
        #expect(s.token._linkedNodeCount == 10)
        s.cancel()
        #expect(s.token._linkedNodeCount == 0)
    }
}

/// Flattening walks the chain of targets to detect cycles; the work is
/// counted (targets followed), not timed.
@Suite struct FlattenChainWork {
    /// Each new future set to the previous one: every set targets the
    /// chain's end, so each set walks at most two steps (it was the whole
    /// chain, O(n²) in all: 50 million steps for these 10,000 levels).
    @Test func aChainBuiltOutwardsWalksAConstantNumberOfStepsPerLevel() {
        let root = FutureSource<Int>()
        var outer = root.future
        var sources: [FutureSource<Int>] = []
        var total = 0, worst = 0
        for _ in 0..<10_000 {
            let s = FutureSource<Int>()
            let (set, steps) = s._trySetResultCountingSteps(outer)
            #expect(set)
            total += steps
            worst = max(worst, steps)
            sources.append(s)
            outer = s.future
        }
        #expect(worst <= 2)
        #expect(total <= 2 * 10_000)
        let seen = Counter()
        for s in sources.prefix(100) { s.future.thenDo(on: .completingThread) { if $0 == 7 { seen.increment() } } }
        root.trySetResult(7)
        #expect(sources.allSatisfy { $0.future.forceGetResult() == 7 })
        #expect(seen.value == 100)
    }

    /// Each source set to a new pending future (a retry loop): one step each.
    @Test func aTailRecursiveChainWalksOneStepPerLevel() {
        let outermost = FutureSource<Int>()
        var current = outermost
        var total = 0
        for _ in 0..<10_000 {
            let next = FutureSource<Int>()
            total += current._trySetResultCountingSteps(next.future).steps
            current = next
        }
        #expect(total <= 10_000)
        current.trySetResult(3)
        #expect(outermost.future.forceGetResult() == 3)
    }

    /// A million-level chain built outwards, its levels linked into the
    /// first future, still unset: it completes every level still held, or
    /// makes it immortal, without recursion.
    @Test func aMillionLevelChainBuiltOutwardsCompletesOrBecomesImmortal() {
        let root = FutureSource<Int>()
        var held: [Future<Int>] = []
        let outer = chainBuiltOutwards(onto: root.future, levels: 1_000_000) { level, s, _ in
            if level % 100_000 == 0 { held.append(s.future) }
        }
        root.trySetResult(4)
        #expect(outer.forceGetResult() == 4 && held.allSatisfy { $0.forceGetResult() == 4 })
        let orphan: Future<Int>
        do {
            let first = FutureSource<Int>()
            orphan = chainBuiltOutwards(onto: first.future, levels: 1_000_000)
            #expect(orphan.state == .flattening)
        }
        #expect(orphan.state == .immortal)
    }

    /// A chain built outwards whose innermost source dies: every level
    /// becomes immortal and frees what was registered on it.
    @Test func aChainBuiltOutwardsBecomesImmortalWhenItsRootDoes() {
        let deinits = Counter()
        var futures: [Future<Int>] = []
        do {
            let root = FutureSource<Int>()
            var sources: [FutureSource<Int>] = []
            _ = chainBuiltOutwards(onto: root.future, levels: 1_000) { _, s, _ in
                let t = Tracked(deinits)
                s.future.thenDo(on: .completingThread) { _ in _ = t }
                sources.append(s)
                futures.append(s.future)
            }
            #expect(deinits.value == 0)
        }
        #expect(futures.allSatisfy { $0.state == .immortal })
        #expect(deinits.value == 1_000)
    }

    /// A future set into a chain whose end is later set back to it: the
    /// cycle is found although the first set targets the chain's end, not
    /// its direct target. Each future has a handler, so none is linked:
    /// each set publishes a flattening target.
    @Test func aCycleClosedThroughAChainEndIsImmortal() {
        let a = FutureSource<Int>(), b = FutureSource<Int>(), c = FutureSource<Int>(), d = FutureSource<Int>()
        for s in [a, b, c, d] { s.future.thenDo { _ in } }
        b.trySetResult(c.future)                    // b -> c
        a.trySetResult(b.future)                    // a -> b: targets c, the end
        c.trySetResult(d.future)                    // c -> d
        let (_, steps) = d._trySetResultCountingSteps(a.future)   // d -> a (-> c) -> d
        #expect(steps == 2)
        for f in [a.future, b.future, c.future, d.future] { #expect(f.state == .immortal) }
    }
}

#if DEBUG  // the future count exists in debug builds only
/// A tail-recursive flatten chain (retry code returning the next `then`):
/// each level's output is linked into the outermost future instead of
/// being kept by a forwarder (Future._link), so the chain keeps a
/// constant number of futures, counted (debug builds count futures per
/// thread; the chain runs on this thread alone).
@Suite struct TailRecursiveChainsKeepNothingPerLevel {
    final class Steps: @unchecked Sendable {
        var pending: [FutureSource<Void>] = []
        var aliveAtInnermost = 0
    }

    enum Kind { case then, `catch`, finally }

    /// Runs a tail-recursive chain `depth` levels deep of collapsing `kind`
    /// steps, each on a pending source (set for `then`, failed for `catch`
    /// and `finally`: a retry loop), completed from the innermost level out;
    /// checks its outcome and that every future is freed afterwards, and
    /// returns how many futures were alive at the innermost level.
    func aliveAtInnermost(_ kind: Kind, depth: Int) -> Int {
        final class Pending: @unchecked Sendable { var sources: [FutureSource<Int>] = []; var alive = 0 }
        let pending = Pending()
        let before = Future<Int>._aliveOnThisThread
        @Sendable func loop(_ n: Int) -> Future<Int> {
            if n == 0 {
                pending.alive = Future<Int>._aliveOnThisThread
                return .succeeded(depth)
            }
            let s = FutureSource<Int>()
            pending.sources.append(s)
            switch kind {
            case .then: return s.future.then { (_: Int) -> Future<Int> in loop(n - 1) }
            case .catch: return s.future.catch { (_: any Error) -> Future<Int> in loop(n - 1) }
            case .finally: return s.future.finally { (_: Future<Int>) -> Future<Int> in loop(n - 1) }
            }
        }
        var f: Future<Int>? = loop(depth)
        while let s = pending.sources.popLast() {
            if kind == .then { s.trySetResult(0) } else { s.trySetFailure(Boom()) }
        }
        #expect(f!.forceGetResult() == depth)
        f = nil
        #expect(Future<Int>._aliveOnThisThread == before)
        let kept = pending.alive - before
        print("\(kind) chain \(depth) deep: \(kept) futures alive at the innermost level")
        return kept
    }

    /// The outermost future, the source futures of the level running and
    /// the one it created, their outputs: a handful, not one per level (it
    /// was two futures and a node per level).
    @Test func aHundredThousandLevelsKeepAConstantNumberOfFutures() {
        #expect(aliveAtInnermost(.then, depth: 100_000) <= 8)
    }

    /// The same for a retry loop on the collapsing `catch` (the README's
    /// `fetchWithRetry`) and a `finally` chain: constant, not per level.
    @Test func catchAndFinallyLoopsKeepAConstantNumberOfFutures() {
        #expect(aliveAtInnermost(.catch, depth: 20_000) <= 8)
        #expect(aliveAtInnermost(.finally, depth: 20_000) <= 8)
    }

    /// The same chain with every level's output also held by a weak
    /// reference (someone else who could still observe it): linking does
    /// not depend on who holds a future, so the chain keeps a constant
    /// number of futures all the same, and each weak reference, read at
    /// the innermost level, sees a future still pending.
    @Test func outputsAlsoHeldWeaklyKeepAConstantNumberOfFutures() {
        final class Watched: @unchecked Sendable {
            final class Weak { weak var future: Future<Int>? }
            var sources: [FutureSource<Int>] = []
            var outputs: [Weak] = []
            var alive = 0
            var pendingSeen = 0
        }
        let w = Watched()
        let before = Future<Int>._aliveOnThisThread
        @Sendable func loop(_ n: Int) -> Future<Int> {
            if n == 0 {
                w.alive = Future<Int>._aliveOnThisThread
                w.pendingSeen = w.outputs.compactMap(\.future).filter { $0.state == .pending }.count
                return .succeeded(7)
            }
            let s = FutureSource<Int>()
            w.sources.append(s)
            let out = s.future.then { (_: Int) -> Future<Int> in loop(n - 1) }
            let weak = Watched.Weak()
            weak.future = out
            w.outputs.append(weak)
            return out
        }
        var f: Future<Int>? = loop(20_000)
        while let s = w.sources.popLast() { s.trySetResult(0) }
        #expect(f!.forceGetResult() == 7)
        #expect(w.alive - before <= 8)
        #expect(w.pendingSeen <= 2)
        f = nil
        #expect(Future<Int>._aliveOnThisThread == before)
    }

    /// The README's retry loop when the call it retries fails synchronously,
    /// and the same loop through `then` and `finally` over completed futures.
    /// Continuations of completed futures run inline up to a bounded depth,
    /// then wait on the thread's drain, so the loop runs in batches: each
    /// batch's outputs link into the root its innermost level made
    /// (`Future._linkInto`), and one forwarder joins consecutive roots. About
    /// one future per batch stays alive, where without linking into roots
    /// nearly one per level did.
    @Test(arguments: [Kind.catch, .then, .finally])
    func aLoopOverCompletedFuturesKeepsAboutOneFuturePerBatch(_ kind: Kind) {
        final class Deepest: @unchecked Sendable { var alive = 0 }
        let depth = 20_000
        let deepest = Deepest()
        let before = Future<Int>._aliveOnThisThread
        @Sendable func fetch(_ attempt: Int) -> Future<Int> {
            if attempt < depth { return kind == .then ? .succeeded(attempt) : .failed(Boom()) }
            deepest.alive = Future<Int>._aliveOnThisThread
            return .succeeded(attempt)
        }
        @Sendable func fetchWithRetry(_ attempt: Int) -> Future<Int> {
            guard attempt < depth else { return fetch(attempt) }
            switch kind {
            case .catch: return fetch(attempt).catch { (_: any Error) -> Future<Int> in fetchWithRetry(attempt + 1) }
            case .then: return fetch(attempt).then { (_: Int) -> Future<Int> in fetchWithRetry(attempt + 1) }
            case .finally: return fetch(attempt).finally { (_: Future<Int>) -> Future<Int> in fetchWithRetry(attempt + 1) }
            }
        }
        var f: Future<Int>? = fetchWithRetry(0)
        #expect(f!.forceGetResult() == depth)
        f = nil
        #expect(Future<Int>._aliveOnThisThread == before)
        let kept = deepest.alive - before
        print("\(kind) loop over completed futures \(depth) deep: \(kept) futures alive at the innermost level")
        #expect(kept <= depth / 12)
    }

    /// The same chain with an output the function also keeps: that one is
    /// observable, so it is flattened as before (a forwarder per level
    /// keeps it), and it completes.
    @Test func anOutputSomeoneElseHoldsIsFlattenedAndCompletes() {
        let steps = Steps()
        final class Kept: @unchecked Sendable { var outputs: [Future<Int>] = [] }
        let kept = Kept()
        let before = Future<Int>._aliveOnThisThread
        @Sendable func loop(_ n: Int) -> Future<Int> {
            if n == 0 {
                steps.aliveAtInnermost = Future<Int>._aliveOnThisThread
                return .succeeded(7)
            }
            let s = FutureSource<Void>()
            steps.pending.append(s)
            let out = s.future.then { (_: Void) -> Future<Int> in loop(n - 1) }
            kept.outputs.append(out)
            return out
        }
        let f = loop(1_000)
        while let s = steps.pending.popLast() { s.trySetResult() }
        #expect(steps.aliveAtInnermost - before >= 1_000)
        #expect(f.forceGetResult() == 7)
        #expect(kept.outputs.allSatisfy { $0.forceGetResult() == 7 })
    }
}
#endif
