#if DISPATCH_LOCK
import DispatchLockedFutures
#elseif MUTEX_LOCK
import MutexLockedFutures
#else
import CollapsingFutures
#endif
import Dispatch
import Testing
import TestSupport

/// What a handler starts runs right after it returns, before its later
/// siblings, in the order started (Threading.md, "Work started inside a handler").
@Suite struct DrainOrder {
    @Test func unlessCancelledByAnEarlierHandlerRemovesTheLaterOnes() {
        // The original's AfterTheFactCancellationStillStopsCallbacks: one run, not five.
        let s1 = CancelTokenSource(), s2 = CancelTokenSource()
        let hits = Counter()
        for _ in 0..<5 {
            s1.token.whenCancelled(unless: s2.token) {
                s2.cancel()
                hits.increment()
            }
        }
        #expect(hits.value == 0)
        s1.cancel()
        #expect(hits.value == 1)
    }

    @Test func unlessRemovalMidCancellationReportsTheRemovedRegistrationsAsNeverRunning() {
        let s1 = CancelTokenSource(), s2 = CancelTokenSource()
        let log = Log<Int>()
        let first = s1.token.whenCancelled { log.append(0); s2.cancel() }
        let later = (1...3).map { i in s1.token.whenCancelled(unless: s2.token) { log.append(i) } }
        s1.cancel()
        #expect(log.all == [0])
        #expect(first.remove() == false)
        #expect(later.allSatisfy { $0.remove() })
    }

    @Test func continuationRegisteredAfterASettleInsideAHandlerRunsAfterEarlierOnes() {
        let trigger = CancelTokenSource()
        let fs = FutureSource<Int>()
        let log = Log<Int>()
        fs.future.thenDo { _ in log.append(1) }
        trigger.token.whenCancelled {
            fs.trySetResult(5)
            fs.future.thenDo { _ in log.append(2) }
            log.append(0)
        }
        trigger.cancel()
        #expect(log.all == [0, 1, 2])
    }

    @Test func whatAHandlerStartsRunsBeforeItsLaterSiblingsInTheOrderStarted() {
        let root = CancelTokenSource(), a = CancelTokenSource(), b = CancelTokenSource(), c = CancelTokenSource()
        let log = Log<String>()
        a.token.whenCancelled { log.append("a1"); c.cancel(); log.append("a1 end") }
        a.token.whenCancelled { log.append("a2") }
        b.token.whenCancelled { log.append("b1") }
        c.token.whenCancelled { log.append("c1") }
        root.token.whenCancelled {
            log.append("h1")
            a.cancel()
            b.cancel()
            log.append("h1 end")
        }
        root.token.whenCancelled { log.append("h2") }
        root.cancel()
        #expect(log.all == ["h1", "h1 end", "a1", "a1 end", "c1", "a2", "b1", "h2"])
    }

    @Test func registrationOnALongCancelledTokenInsideAHandlerThatStartedNothingRunsInline() {
        let trigger = CancelTokenSource()
        let log = Log<String>()
        trigger.token.whenCancelled {
            CancelToken.cancelled.whenCancelled { log.append("inline") }
            log.append("after")
            let f = Future<Int>.succeeded(1).then { $0 + 1 }
            log.append(f.result.map { (try? $0.get()).map(String.init) ?? "failed" } ?? "pending")
        }
        trigger.cancel()
        #expect(log.all == ["inline", "after", "2"])
    }

    @Test func registrationQueuedBehindStartedWorkCanStillBeRemoved() {
        let trigger = CancelTokenSource(), other = CancelTokenSource()
        let log = Log<String>()
        other.token.whenCancelled { log.append("other") }
        trigger.token.whenCancelled {
            other.cancel()   // starts work that is still waiting
            let r = CancelToken.cancelled.whenCancelled { log.append("queued") }
            #expect(r.remove())
            log.append("h end")
        }
        trigger.cancel()
        #expect(log.all == ["h end", "other"])
    }

    @Test func millionDeepCascadeOfHandlersThatCancelTheNextStillCompletes() {
        let n = 1_000_000
        var sources: [CancelTokenSource] = (0..<n).map { _ in CancelTokenSource() }
        let count = Counter()
        for i in 0..<(n - 1) {
            let next = sources[i + 1]
            sources[i].token.whenCancelled { count.increment(); next.cancel() }
        }
        sources[n - 1].token.whenCancelled { count.increment() }
        sources[0].cancel()
        #expect(count.value == n)
        sources.removeAll()
    }
}

/// A handler that waits for its queue (an `on:` queue, or the main queue
/// when registered on the main thread and cancelled elsewhere) is checked
/// against its `unless:` token when its turn comes there, not only when the
/// token was cancelled: the original's main-thread test (five handlers, each
/// cancelling their shared `unless`, one runs) with an `on:` queue, which
/// takes the same path and can be tested off the main thread.
@Suite struct UnlessIsCheckedAfterTheHop {
    @Test func aHandlerCancellingTheUnlessOfItsSiblingsStopsThemOnTheirQueue() async {
        let s1 = CancelTokenSource(), s2 = CancelTokenSource()
        let q = DispatchQueue(label: "hop")
        let hits = Counter(), deinits = Counter()
        var registrations: [CancelRegistration] = []
        for _ in 0..<5 {
            let tracked = Tracked(deinits)
            registrations.append(s1.token.whenCancelled(on: q, unless: s2.token) {
                tracked.touch()
                s2.cancel()
                hits.increment()
            })
        }
        q.suspend()   // all five are claimed and queued before the first runs
        s1.cancel()
        q.resume()
        q.sync {}
        #expect(hits.value == 1)
        #expect(deinits.value == 5)
        #expect(registrations.filter { $0.remove() }.count == 0)   // claimed to run: remove() says too late
    }

    @Test func aContinuationWhoseUnlessIsCancelledWhileItWaitsFailsWithCancel() async {
        let source = FutureSource<Int>(), u = CancelTokenSource()
        let q = DispatchQueue(label: "hop")
        let ran = Counter()
        let first = source.future.then(on: q, unless: u.token) { v -> Int in u.cancel(); ran.increment(); return v }
        let second = source.future.then(on: q, unless: u.token) { v -> Int in ran.increment(); return v }
        source.future.thenDo(on: q, unless: u.token) { _ in ran.increment() }
        q.suspend()
        source.trySetResult(7)
        q.resume()
        q.sync {}
        #expect(first.forceGetResult() == 7)
        #expect(second.hasFailedWithCancel)
        #expect(ran.value == 1)
    }

    /// The same when the registration found its token already settled: it
    /// hops to its queue at once, and `unless` is checked when it gets there.
    @Test func aRegistrationOnASettledTokenWhoseUnlessIsCancelledBeforeItsTurnNeverRuns() async {
        let done = FutureSource<Int>(), cancelled = CancelTokenSource(), u = CancelTokenSource()
        done.trySetResult(7)
        cancelled.cancel()
        let q = DispatchQueue(label: "hop")
        let ran = Counter()
        q.suspend()
        let mapped = done.future.then(on: q, unless: u.token) { v -> Int in ran.increment(); return v }
        let caught = done.future.catch(on: q, unless: u.token) { _ in ran.increment(); return 0 }
        done.future.thenDo(on: q, unless: u.token) { _ in ran.increment() }
        cancelled.token.whenCancelled(on: q, unless: u.token) { ran.increment() }
        u.cancel()
        q.resume()
        q.sync {}
        #expect(mapped.hasFailedWithCancel)
        #expect(caught.hasFailedWithCancel)
        #expect(ran.value == 0)
    }
}
