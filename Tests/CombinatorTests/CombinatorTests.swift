@_spi(Testing) import CollapsingFutures
import Dispatch
import Foundation
import Synchronization
import Testing
import TestSupport

/// Blocks until `f` completes or becomes immortal, within `patience`.
func waitFor<T>(_ f: Future<T>) -> Future<T> {
    _ = eventually { !f.isIncomplete || f.state == .immortal }
    return f
}

@Suite struct DispatchAndDelayed {
    @Test func dispatchRunsTheOperationOnTheQueue() {
        let q = DispatchQueue(label: "cf.combinators")
        let key = DispatchSpecificKey<Int>()
        q.setSpecific(key: key, value: 5)
        let f = Future<Int?>.dispatch(on: q) { DispatchQueue.getSpecific(key: key) }
        #expect(waitFor(f).forceGetResult() == 5)
        #expect(waitFor(Future<Int>.dispatch(on: q) { throw Boom() }).hasFailed)
    }

    @Test func delayedSucceedsWithTheValue() {
        #expect(waitFor(Future.delayed(3, by: .milliseconds(5))).forceGetResult() == 3)
    }

    @Test func delayedCancelledBeforeFiringFailsAndReleasesTheValueAtOnce() {
        let deinits = Counter()
        let u = CancelTokenSource()
        let f: Future<Tracked>
        do { f = Future.delayed(Tracked(deinits), by: .seconds(30), unless: u.token) }
        #expect(deinits.value == 0)
        u.cancel()
        #expect(f.hasFailedWithCancel)
        #expect(deinits.value == 1)
    }

    @Test func delayedWithCancelledUnlessFailsAtOnce() {
        #expect(Future.delayed(1, by: .seconds(30), unless: .cancelled).hasFailedWithCancel)
    }
}

@Suite struct Timeouts {
    @Test func untilStyleFastOperationWinsAndItsTokenLastsUntilUntil() {
        let until = CancelTokenSource()
        let opToken = Locked<CancelToken?>(nil)
        let f = Future<Int>.withTimeout(.seconds(30), until: until.token) { t in
            opToken.withLock { $0 = t }
            return .succeeded(1)
        }
        #expect(f.forceGetResult() == 1)
        let t = opToken.withLock { $0 }!
        #expect(t.canStillBeCancelled)
        until.cancel()
        #expect(t.isCancelled)
    }

    @Test func untilStyleTimeoutFailsWithTimeoutErrorAndCancelsTheOperationToken() {
        let opToken = Locked<CancelToken?>(nil)
        let never = FutureSource<Int>()
        let f = Future<Int>.withTimeout(.milliseconds(5), until: .immortal) { t in
            opToken.withLock { $0 = t }
            return never.future
        }
        #expect(waitFor(f).hasFailedWithTimeout)
        #expect(opToken.withLock { $0 }!.isCancelled)
    }

    @Test func unlessStyleUnlessFirstFailsWithCancelAndCancelsTheOperation() {
        let u = CancelTokenSource()
        let opToken = Locked<CancelToken?>(nil)
        let never = FutureSource<Int>()
        let f = Future<Int>.withTimeout(.seconds(30), unless: u.token) { t in
            opToken.withLock { $0 = t }
            return never.future.unless(t)   // an operation that honours its token
        }
        u.cancel()
        #expect(f.hasFailedWithCancel)
        #expect(opToken.withLock { $0 }!.isCancelled)
    }

    @Test func unlessStyleTimeoutFailsWithTimeoutError() {
        let never = FutureSource<Int>()
        #expect(waitFor(Future<Int>.withTimeout(.milliseconds(5), unless: .immortal) { t in never.future.unless(t) }).hasFailedWithTimeout)
    }

    /// Every timer says how long it waited, in the error and its text.
    @Test func timeoutErrorsCarryTheDurationThatElapsed() {
        let never = FutureSource<Int>()
        let ms5 = Duration.milliseconds(5)
        let failures: [(String, Future<Int>)] = [
            ("until-style", Future<Int>.withTimeout(ms5, until: .immortal) { _ in never.future }),
            ("unless-style", Future<Int>.withTimeout(ms5) { t in never.future.unless(t) }),
            ("instance", never.future.timeout(ms5)),
            ("retrying", Future<Int>.retrying(upTo: 2, baseTimeout: ms5, backoff: 3) { _ in never.future }),
            ("zero", never.future.timeout(.zero)),
        ]
        let expected: [Duration] = [ms5, ms5, ms5, ms5 * 3, .zero]
        for ((name, f), d) in zip(failures, expected) {
            let e = waitFor(f).result.flatMap { r -> TimeoutError? in
                if case .failure(let e) = r { return e as? TimeoutError } else { return nil }
            }
            #expect(e?.duration == d, "\(name)")
            #expect(e.map { "\($0)" } == "The operation timed out after \(d).", "\(name)")
        }
    }

    /// An operation that cancels itself before the timer: a timeout (as
    /// the original says) whose duration is not known.
    @Test func aSelfCancelledOperationTimesOutWithoutADuration() {
        let f = Future<Int>.withTimeout(.seconds(30)) { _ in .cancelled }
        #expect(f.hasFailedWithTimeout)
        #expect((f.forceGetFailure() as? TimeoutError)?.duration == nil)
    }

    @Test func timeoutErrorsAreEqualWhateverTheirDuration() {
        #expect(TimeoutError(after: .seconds(2)) == TimeoutError())
        #expect(TimeoutError(after: .seconds(2)).hashValue == TimeoutError().hashValue)
        #expect(Set([TimeoutError(), TimeoutError(after: .seconds(1))]).count == 1)
        #expect(TimeoutError().duration == nil)
        #expect("\(TimeoutError())" == "The operation timed out.")
        #expect(TimeoutError(after: .milliseconds(20)).localizedDescription == "The operation timed out after 0.02 seconds.")
    }
}

@Suite struct All {
    @Test func emptyIsAnEmptyArray() {
        #expect(Future<Int>.all([]).forceGetResult() == [])
        #expect(Future<Int>.allSettled([]).forceGetResult().isEmpty)
        #expect([Future<Int>]().orderedByCompletion().isEmpty)
    }

    @Test func allSucceedsWithValuesInInputOrder() {
        let s = (0..<5).map { _ in FutureSource<Int>() }
        let f = Future.all(s.map(\.future))
        for i in [3, 1, 4, 0, 2] { s[i].trySetResult(i * 10) }
        #expect(f.forceGetResult() == [0, 10, 20, 30, 40])
    }

    @Test func allFailsFastAndRemovesTheRestOfItsRegistrations() {
        let s = (0..<3).map { _ in FutureSource<Int>() }
        let f = Future.all(s.map(\.future))
        s[1].trySetFailure(Boom(code: 2))
        #expect(f.forceGetFailure() as? Boom == Boom(code: 2))
        #expect(s[0].future.completionToken._linkedNodeCount <= 1)
    }

    @Test func allWithUnlessCancelledFailsWithCancel() {
        let u = CancelTokenSource()
        let s = FutureSource<Int>()
        let f = Future.all([s.future], unless: u.token)
        u.cancel()
        #expect(f.hasFailedWithCancel)
    }

    @Test func allOfAnImmortalInputIsImmortal() {
        var s: FutureSource<Int>? = FutureSource<Int>()
        let f = Future.all([s!.future, .succeeded(1)])
        s = nil
        _ = s
        #expect(f.state == .immortal)
    }

    @Test func allOverOneHundredThousandFutures() {
        let s = (0..<100_000).map { _ in FutureSource<Int>() }
        let f = Future.all(s.map(\.future))
        for (i, x) in s.enumerated() { x.trySetResult(i) }
        #expect(f.forceGetResult().count == 100_000)
        #expect(f.forceGetResult()[99_999] == 99_999)
    }

    @Test func allSettledCompletesWithTheSameFuturesEitherWay() {
        let a = FutureSource<Int>(), b = FutureSource<Int>()
        let f = Future.allSettled([a.future, b.future])
        a.trySetFailure(Boom())
        #expect(f.isIncomplete)
        b.trySetResult(1)
        let r = f.forceGetResult()
        #expect(r[0] === a.future && r[1] === b.future)
    }

    @Test func allSettledResultsGivesEveryOutcomeInInputOrder() {
        let s = (0..<3).map { _ in FutureSource<Int>() }
        let f = Future.allSettledResults(s.map(\.future))
        s[2].trySetResult(2)
        s[0].trySetFailure(Boom(code: 7))
        #expect(f.isIncomplete)
        s[1].trySetResult(1)
        let r = f.forceGetResult()
        #expect(r.count == 3)
        #expect((try? r[1].get()) == 1 && (try? r[2].get()) == 2)
        guard case .failure(let e) = r[0] else { Issue.record("first outcome: \(r[0])"); return }
        #expect(e as? Boom == Boom(code: 7))
        #expect(Future<Int>.allSettledResults([]).forceGetResult().isEmpty)
        // Nothing stays registered on the inputs once it completes.
        #expect(s.allSatisfy { $0.future.completionToken._liveRegistrationCount == 0 })
    }

    @Test func allSettledResultsFailsWithCancelWhenUnlessComesFirst() {
        let u = CancelTokenSource()
        let s = FutureSource<Int>()
        let f = Future.allSettledResults([s.future, .succeeded(1)], unless: u.token)
        u.cancel()
        #expect(f.hasFailedWithCancel)
        #expect(s.future.completionToken._liveRegistrationCount == 0)
    }

    @Test func orderedByCompletionOrdersOutcomes() {
        let s = (0..<3).map { _ in FutureSource<Int>() }
        let ordered = s.map(\.future).orderedByCompletion()
        s[2].trySetResult(2); s[0].trySetFailure(Boom()); s[1].trySetResult(1)
        #expect(ordered[0].forceGetResult() == 2)
        #expect(ordered[1].hasFailed)
        #expect(ordered[2].forceGetResult() == 1)
    }

    @Test func orderedByCompletionUnlessCancelsTheRest() {
        let u = CancelTokenSource()
        let s = (0..<2).map { _ in FutureSource<Int>() }
        let ordered = s.map(\.future).orderedByCompletion(unless: u.token)
        s[1].trySetResult(1)
        u.cancel()
        #expect(ordered[0].forceGetResult() == 1)
        #expect(ordered[1].hasFailedWithCancel)
    }
}

@Suite struct Race {
    @Test func firstSuccessWinsAndLosersAreCancelled() {
        let tokens = Locked<[CancelToken]>([])
        let slow = FutureSource<Int>()
        let f = Future<Int>.race([
            { t in tokens.withLock { $0.append(t) }; return slow.future },
            { t in tokens.withLock { $0.append(t) }; return .succeeded(2) },
        ])
        #expect(f.forceGetResult() == 2)
        let ts = tokens.withLock { $0 }
        #expect(ts[0].isCancelled)
        #expect(!ts[1].isCancelled)
    }

    @Test func lateWinnerIsCleanedUpThroughItsToken() {
        let tokens = Locked<[CancelToken]>([])
        let late = FutureSource<Int>()
        let f = Future<Int>.race([
            { t in tokens.withLock { $0.append(t) }; return late.future },
            { _ in .succeeded(1) },
        ])
        #expect(f.forceGetResult() == 1)
        late.trySetResult(5)
        #expect(tokens.withLock { $0 }[0].isCancelled)
    }

    @Test func allFailingFailsWithEveryFailure() {
        let f = Future<Int>.race([{ _ in .failed(Boom(code: 1)) }, { _ in .failed(Boom(code: 2)) }])
        let e = f.forceGetFailure() as? RaceFailure
        #expect(e?.failures.compactMap { $0 as? Boom } == [Boom(code: 1), Boom(code: 2)])
    }

    @Test func emptyRaceFails() {
        #expect(Future<Int>.race([]).hasFailed)
    }
}

@Suite struct Retrying {
    /// A fake operation: the first `hangs` calls never complete; then it returns `then`.
    final class FakeOp: Sendable {
        let calls = Counter()
        let hangs: Int
        let outcome: Result<Int, Boom>
        let never = FutureSource<Int>()
        init(hangs: Int, then outcome: Result<Int, Boom>) { self.hangs = hangs; self.outcome = outcome }
        func run(_ t: CancelToken) -> Future<Int> {
            calls.increment()
            if calls.value <= hangs { return never.future.unless(t) }
            switch outcome {
            case .success(let v): return .succeeded(v)
            case .failure(let e): return .failed(e)
            }
        }
    }

    @Test func zeroTriesFailsWithTimeoutError() {
        let op = FakeOp(hangs: 0, then: .success(1))
        #expect(Future.retrying(upTo: 0, baseTimeout: .milliseconds(1), op.run).hasFailedWithTimeout)
        #expect(op.calls.value == 0)
    }

    @Test func successOnTheThirdTry() {
        let op = FakeOp(hangs: 2, then: .success(9))
        let f = waitFor(Future.retrying(upTo: 5, baseTimeout: .milliseconds(2), op.run))
        #expect(f.forceGetResult() == 9)
        #expect(op.calls.value == 3)
    }

    @Test func nonTimeoutFailureOnTheFirstTryStops() {
        let op = FakeOp(hangs: 0, then: .failure(Boom(code: 4)))
        let f = waitFor(Future.retrying(upTo: 5, baseTimeout: .milliseconds(2), op.run))
        #expect(f.forceGetFailure() as? Boom == Boom(code: 4))
        #expect(op.calls.value == 1)
    }

    @Test func runsOutOfTriesWithTimeoutError() {
        let op = FakeOp(hangs: 10, then: .success(1))
        let f = waitFor(Future.retrying(upTo: 3, baseTimeout: .milliseconds(1), op.run))
        #expect(f.hasFailedWithTimeout)
        #expect(op.calls.value == 3)
    }

    @Test func cancelledMidWayStopsAtOnce() {
        let op = FakeOp(hangs: 10, then: .success(1))
        let c = CancelTokenSource()
        let f = Future.retrying(upTo: 10, baseTimeout: .seconds(30), until: c.token, op.run)
        #expect(op.calls.value == 1)
        c.cancel()
        #expect(f.hasFailedWithCancel)
        usleep(20_000)
        #expect(op.calls.value == 1)
    }
}

@Suite struct RetryingFailures {
    /// An operation whose try `i` (from 0) returns `outcomes(i)`; it records
    /// each try's token.
    final class Op: Sendable {
        let tokens = Locked<[CancelToken]>([])
        let outcome: @Sendable (Int) -> Future<Int>
        init(_ outcome: @escaping @Sendable (Int) -> Future<Int>) { self.outcome = outcome }
        var calls: Int { tokens.withLock { $0.count } }
        func run(_ t: CancelToken) -> Future<Int> {
            let i = tokens.withLock { $0.append(t); return $0.count - 1 }
            return outcome(i)
        }
    }

    @Test func retriesFailuresUntilASuccess() {
        let op = Op { i in i < 2 ? .failed(Boom(code: i)) : .succeeded(7) }
        let f = waitFor(Future.retrying(upTo: 5, delay: .milliseconds(1), op.run))
        #expect(f.forceGetResult() == 7)
        #expect(op.calls == 3)
        // The failed tries' tokens were cancelled; the success's lasts.
        let ts = op.tokens.withLock { $0 }
        #expect(ts[0].isCancelled && ts[1].isCancelled && !ts[2].isCancelled)
    }

    @Test func failsWithTheLastErrorAfterMaxTries() {
        let op = Op { i in .failed(Boom(code: i)) }
        let f = waitFor(Future.retrying(upTo: 4, delay: .milliseconds(1), backoff: 1, op.run))
        #expect(f.forceGetFailure() as? Boom == Boom(code: 3))
        #expect(op.calls == 4)
    }

    @Test func anErrorNotToRetryEndsItAtOnce() {
        let op = Op { i in .failed(Boom(code: i)) }
        let f = Future.retrying(upTo: 4, delay: .seconds(30), shouldRetry: { ($0 as? Boom)?.code != 0 }, op.run)
        #expect(f.forceGetFailure() as? Boom == Boom(code: 0))
        #expect(op.calls == 1)
        // By default a CancellationError is not retried.
        let cancelled = Op { _ in .cancelled }
        #expect(Future.retrying(upTo: 4, delay: .zero, cancelled.run).hasFailedWithCancel)
        #expect(cancelled.calls == 1)
    }

    @Test func pendingTriesContinueWhenTheyFail() {
        let sources = (0..<3).map { _ in FutureSource<Int>() }
        let op = Op { i in sources[i].future }
        let f = Future.retrying(upTo: 3, delay: .zero, op.run)
        #expect(op.calls == 1)
        sources[0].trySetFailure(Boom(code: 0))
        #expect(op.calls == 2)
        sources[1].trySetFailure(Boom(code: 1))
        #expect(op.calls == 3)
        sources[2].trySetFailure(Boom(code: 2))
        #expect(f.forceGetFailure() as? Boom == Boom(code: 2))
    }

    /// The second wait is `delay * backoff`: with a backoff that makes it
    /// 100 years or more, no third try can come, and the second try's
    /// failure is the result.
    @Test func theWaitGrowsByBackoff() {
        let op = Op { i in .failed(Boom(code: i)) }
        let f = waitFor(Future.retrying(upTo: 5, delay: .milliseconds(1), backoff: 1e13, op.run))
        #expect(f.forceGetFailure() as? Boom == Boom(code: 1))
        #expect(op.calls == 2)
    }

    /// A try that cancels `until` and fails (retried by a `shouldRetry`
    /// that accepts anything): no further try, at once, whatever `maxTries`.
    @Test func cancellingUntilStopsTheTriesAtOnce() {
        let until = CancelTokenSource()
        let op = Op { _ in until.cancel(); return .failed(Boom()) }
        let f = Future.retrying(upTo: 1_000_000_000, delay: .zero, until: until.token, shouldRetry: { _ in true }, op.run)
        #expect(f.hasFailedWithCancel)
        #expect(op.calls == 1)
    }

    @Test func untilCancelsTheRunningTryAndTheWait() {
        // During a try: its token is cancelled, the result fails at once.
        let until = CancelTokenSource()
        let never = FutureSource<Int>()
        let op = Op { _ in never.future }
        let f = Future.retrying(upTo: 3, delay: .zero, until: until.token, op.run)
        until.cancel()
        #expect(f.hasFailedWithCancel)
        #expect(op.tokens.withLock { $0 }[0].isCancelled)
        // During a wait: no further try; nothing stays on `until`.
        let until2 = CancelTokenSource()
        let failing = Op { i in .failed(Boom(code: i)) }
        let g = Future.retrying(upTo: 3, delay: .seconds(30), until: until2.token, failing.run)
        #expect(g.state == .pending)
        until2.cancel()
        #expect(g.hasFailedWithCancel)
        #expect(failing.calls == 1)
        // An already-cancelled `until`, or no tries: nothing runs.
        #expect(Future.retrying(upTo: 3, delay: .zero, until: until.token, op.run).hasFailedWithCancel)
        #expect(Future.retrying(upTo: 0, delay: .zero, op.run).hasFailedWithCancel)
        #expect(op.calls == 1)
    }

    @Test func aDeliveredSuccessKeepsItsTokenUntilUntilAndNothingElse() {
        let until = CancelTokenSource()
        let op = Op { i in i == 0 ? .failed(Boom()) : .succeeded(1) }
        let f = Future.retrying(upTo: 3, delay: .zero, until: until.token, op.run)
        #expect(f.forceGetResult() == 1)
        // One registration stays on `until`: the success's token lifetime.
        #expect(until.token._liveRegistrationCount == 1)
        until.cancel()
        #expect(op.tokens.withLock { $0 }[1].isCancelled)
        #expect(f.forceGetResult() == 1)
        // After a final failure nothing stays on `until` at all.
        let until2 = CancelTokenSource()
        let failing = Op { i in .failed(Boom(code: i)) }
        #expect(Future.retrying(upTo: 3, delay: .zero, until: until2.token, failing.run).hasFailed)
        #expect(until2.token._liveRegistrationCount == 0)
    }

    @Test func anImmortalTryMakesTheResultImmortal() {
        let op = Op { _ in .immortal }
        #expect(Future.retrying(upTo: 3, delay: .zero, op.run).state == .immortal)
        #expect(op.calls == 1)
    }

    @Test func aMillionSynchronousFailuresUseConstantStack() {
        let op = Op { i in .failed(Boom(code: i)) }
        let f = Future.retrying(upTo: 1_000_000, delay: .zero, op.run)
        #expect(f.forceGetFailure() as? Boom == Boom(code: 999_999))
        #expect(op.calls == 1_000_000)
    }

    @Test func theOperationAndItsCapturesAreReleasedOnceItEnds() {
        let deinits = Counter()
        let source = FutureSource<Int>()
        do {
            let tracked = Tracked(deinits)
            let f = Future<Int>.retrying(upTo: 3, delay: .seconds(30)) { _ in withExtendedLifetime(tracked) { source.future } }
            #expect(f.state == .pending)
        }
        #expect(deinits.value == 0)
        source.trySetResult(1)   // ends it: the operation is released
        #expect(deinits.value == 1)
    }
}
