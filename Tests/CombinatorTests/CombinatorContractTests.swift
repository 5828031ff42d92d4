// Every combinator output can become immortal, nothing stays
// registered once it stops mattering, race/withTimeout keep the original's
// contract, internal bookkeeping never hops to the main queue, timers and
// arguments behave at the extremes.
@_spi(Testing) @testable import CollapsingFutures
import CCollapsingFutures
import Dispatch
import Foundation
import Synchronization
import Testing
import TestSupport

/// A future whose source can be dropped (making it immortal) from the test.
final class Droppable<T: Sendable>: @unchecked Sendable {
    var source: FutureSource<T>? = FutureSource<T>()
    let future: Future<T>
    init() { future = source!.future }
    func drop() { source = nil }
}

/// Registers a handler capturing a tracked object on `f`; its deinit count
/// says whether the handler was freed.
func trackHandler<T>(on f: Future<T>, _ deinits: Counter) {
    let t = Tracked(deinits)
    f.finallyDo { _ in _ = t }
}

@Suite struct CombinatorOutputsBecomeImmortal {
    @Test func raceOfAnImmortalAndAFailureIsImmortalAndFreesItsHandlers() {
        let deinits = Counter()
        let f = Future<Int>.race([{ _ in .immortal }, { _ in .failed(Boom()) }])
        #expect(f.state == .immortal)
        trackHandler(on: f, deinits)
        #expect(deinits.value == 1)
    }

    @Test func raceWhoseLastCandidatesBecomeImmortalLaterBecomesImmortal() async {
        let a = Droppable<Int>(), b = Droppable<Int>()
        let deinits = Counter()
        let f = Future<Int>.race([{ _ in a.future }, { _ in b.future }])
        trackHandler(on: f, deinits)
        a.drop()
        #expect(f.state == .pending)
        b.drop()
        #expect(f.state == .immortal)
        #expect(deinits.value == 1)
        await #expect(throws: FutureError.immortal) { try await f.get() }
    }

    @Test func orderedByCompletionMakesTheSlotsNoInputCanFillImmortal() {
        let a = FutureSource<Int>(), gone = Droppable<Int>(), b = FutureSource<Int>()
        let outs = [a.future, gone.future, b.future].orderedByCompletion()
        let deinits = Counter()
        trackHandler(on: outs[2], deinits)
        b.trySetResult(2)
        a.trySetResult(1)
        #expect(outs[0].forceGetResult() == 2)
        #expect(outs[1].forceGetResult() == 1)
        #expect(outs[2].state == .pending)
        gone.drop()
        #expect(outs[2].state == .immortal)
        #expect(deinits.value == 1)
    }

    /// `all` looks for an input that has already failed before it
    /// registers: a pending input's token word holds a node's address,
    /// never to be read as an outcome, whatever bits the address has.
    @Test func allOfPendingInputsWithHandlersStaysPending() {
        let a = FutureSource<Int>(), b = FutureSource<Int>()
        var outputs: [Future<[Int]>] = []
        for _ in 0..<64 {
            a.future.thenDo { _ in }
            outputs.append(Future.all([a.future, b.future]))
        }
        #expect(outputs.allSatisfy { $0.state == .pending })
        a.trySetResult(1)
        b.trySetResult(2)
        #expect(outputs.allSatisfy { $0.result.flatMap { try? $0.get() } == [1, 2] })
    }

    @Test func allWithAnImmortalInputLeavesNothingOnTheOtherInputs() {
        let longLived = FutureSource<Int>()
        for _ in 0..<1000 {
            #expect(Future.all([longLived.future, .immortal]).state == .immortal)
            #expect(Future.allSettled([longLived.future, .immortal]).state == .immortal)
        }
        #expect(longLived.future.completionToken._liveRegistrationCount == 0)
        #expect(longLived.future.completionToken._linkedNodeCount <= 32)
    }

    @Test func allWhoseInputBecomesImmortalLaterRemovesItsOtherRegistrations() {
        let longLived = FutureSource<Int>()
        let gone = Droppable<Int>()
        let f = Future.all([longLived.future, gone.future])
        #expect(longLived.future.completionToken._liveRegistrationCount == 1)
        gone.drop()
        #expect(f.state == .immortal)
        #expect(longLived.future.completionToken._liveRegistrationCount == 0)
    }

    // An input that has already failed decides `all` wherever it stands:
    // `all([.immortal, .failed(e)])` fails as `all([.failed(e), .immortal])`
    // does, rather than being made immortal by the input before it.
    @Test func allFailsWithAnAlreadyFailedInputWhereverAnImmortalOneStands() {
        let e = TestError(code: 7), later = TestError(code: 1)
        func failure<T>(_ f: Future<T>) -> TestError? {
            if case .failure(let error)? = f.result { return error as? TestError }
            return nil
        }
        let failed = Future<Int>.failed(e)
        #expect(failure(Future.all([.immortal, failed])) == e)
        #expect(failure(Future.all([failed, .immortal])) == e)
        #expect(failure(Future.all([.immortal, .succeeded(1), failed, .failed(later)])) == e,
                "the first failure in input order")
        let u = CancelTokenSource()
        #expect(failure(Future.all([.immortal, failed], unless: u.token)) == e)
        #expect(failure(Future.all(Future<String>.immortal, failed)) == e)
        #expect(failure(Future<String>.immortal.and(failed)) == e)
        // Nothing stays on a pending input when the failure is seen first.
        let longLived = FutureSource<Int>()
        #expect(Future.all([longLived.future, .immortal, failed]).hasFailed)
        #expect(longLived.future.completionToken._liveRegistrationCount == 0)
        // Without an already-failed input, an immortal one still makes it
        // immortal at once, and allSettled waits for every input.
        #expect(Future.all([.immortal, longLived.future]).state == .immortal)
        #expect(Future.allSettled([.immortal, failed]).state == .immortal)
        #expect(Future.allSettledResults([.immortal, failed]).state == .immortal)
    }

    // With an immortal input, `all`, `allSettled`, the variadic `all` and
    // `and` follow their `unless` as a continuation of an immortal future
    // does: its cancel fails them, rather than their being immortal at once.
    @Test func allWithAnImmortalInputFollowsItsUnlessLikeAContinuation() {
        let longLived = FutureSource<Int>()
        typealias Probe = (state: () -> FutureState, failedWithCancel: () -> Bool, track: (Counter) -> Void)
        func probe<T>(_ f: Future<T>) -> Probe { ({ f.state }, { f.hasFailedWithCancel }, { trackHandler(on: f, $0) }) }
        // Each gets a pending input of its own that dies after the call
        // (used by the "immortal later" cases).
        let combinators: [(String, (CancelToken, Future<String>) -> Probe)] = [
            ("all", { u, _ in probe(Future.all([longLived.future, .immortal], unless: u)) }),
            ("allSettled", { u, _ in probe(Future.allSettled([longLived.future, .immortal], unless: u)) }),
            ("allSettledResults", { u, _ in probe(Future.allSettledResults([longLived.future, .immortal], unless: u)) }),
            ("variadic all", { u, _ in probe(Future.all(longLived.future, Future<String>.immortal, unless: u)) }),
            ("and", { u, _ in probe(longLived.future.and(Future<String>.immortal, unless: u)) }),
            ("all, input immortal later", { u, later in probe(Future.all(longLived.future, later, unless: u)) }),
            ("and, input immortal later", { u, later in probe(longLived.future.and(later, unless: u)) }),
        ]
        for (name, make) in combinators {
            let u = CancelTokenSource(), gone = Droppable<String>()
            let cancelled = make(u.token, gone.future)
            gone.drop()
            #expect(cancelled.state() == .pending, "\(name): `unless` can still fail it")
            #expect(longLived.future.completionToken._liveRegistrationCount == 0, "\(name)")
            u.cancel()
            #expect(cancelled.failedWithCancel(), "\(name)")

            var v: CancelTokenSource? = CancelTokenSource()
            let goneToo = Droppable<String>()
            let abandoned = make(v!.token, goneToo.future)
            goneToo.drop()
            let deinits = Counter()
            abandoned.track(deinits)
            #expect(abandoned.state() == .pending, "\(name)")
            v = nil
            #expect(abandoned.state() == .immortal, "\(name): its `unless` can no longer fail it")
            #expect(deinits.value == 1, "\(name): its handler is freed")
        }
        #expect(longLived.future.completionToken._liveRegistrationCount == 0)
        #expect(longLived.future.completionToken._linkedNodeCount <= 32)
        // Without an immortal input, `unless` and the inputs work as before.
        let a = FutureSource<Int>(), u = CancelTokenSource()
        let f = Future.all([a.future, longLived.future], unless: u.token)
        a.trySetResult(1)
        longLived.trySetResult(2)
        #expect(f.forceGetResult() == [1, 2])
        #expect(u.token._liveRegistrationCount == 0)
        // No input, or `unless` already cancelled: as before.
        #expect(Future<Int>.all([], unless: u.token).forceGetResult() == [])
        let cancelledToken = CancelTokenSource()
        cancelledToken.cancel()
        #expect(Future<Int>.all([], unless: cancelledToken.token).forceGetResult() == [])
        #expect(Future<Int>.allSettled([], unless: cancelledToken.token).forceGetResult().isEmpty)
        #expect(Future.all([longLived.future], unless: cancelledToken.token).hasFailedWithCancel)
    }

    // The variadic `all` (and `and`) converts each input; once the call has
    // settled, no registration of that conversion stays on an input still
    // pending.
    @Test func variadicAllAndAndLeaveNothingOnAPendingInputOnceSettled() {
        let longLived = FutureSource<Int>()
        for _ in 0..<1000 {
            #expect(Future.all(longLived.future, Future<String>.failed(Boom())).hasFailed)
            #expect(longLived.future.and(Future<String>.immortal).state == .immortal)
        }
        #expect(longLived.future.completionToken._liveRegistrationCount == 0)
        #expect(longLived.future.completionToken._linkedNodeCount <= 32)
    }

    @Test func variadicAllCancelledMidWayRemovesItsRegistrationsAndStillCompletesOtherwise() {
        let a = FutureSource<Int>(), b = FutureSource<String>(), u = CancelTokenSource()
        let f = Future.all(a.future, b.future, unless: u.token)
        #expect(a.future.completionToken._liveRegistrationCount == 1)
        #expect(b.future.completionToken._liveRegistrationCount == 1)
        u.cancel()
        #expect(f.hasFailedWithCancel)
        #expect(a.future.completionToken._liveRegistrationCount == 0)
        #expect(b.future.completionToken._liveRegistrationCount == 0)
        #expect(Future.all(a.future, b.future, unless: u.token).hasFailedWithCancel)
        #expect(a.future.completionToken._liveRegistrationCount == 0)

        let g = Future.all(a.future, b.future)
        a.trySetResult(1)
        #expect(g.state == .pending)
        b.trySetResult("x")
        let (x, y) = g.forceGetResult()
        #expect(x == 1 && y == "x")
    }

    /// `race` over existing futures, and operations that ignore their
    /// token: the arrival registrations go once the result settles, and
    /// with them the race's hold on everything it owns.
    @Test func raceLeavesNothingOnTheLosersOnceSettled() {
        let longLived = FutureSource<Int>()
        let deinits = Counter()
        for _ in 0..<1000 {
            let t = Tracked(deinits)
            let f = Future.race(Future.succeeded(1), longLived.future)
            #expect(f.forceGetResult() == 1)
            let g = Future<Int>.race([{ _ in _ = t; return .failed(Boom()) }, { _ in longLived.future }, { _ in .succeeded(2) }])
            #expect(g.forceGetResult() == 2)
        }
        #expect(longLived.future.completionToken._liveRegistrationCount == 0)
        #expect(longLived.future.completionToken._linkedNodeCount <= 32)
        #expect(deinits.value == 1000)

        let u = CancelTokenSource()
        let h = Future<Int>.race([{ _ in longLived.future }], until: u.token)
        #expect(longLived.future.completionToken._liveRegistrationCount == 1)
        u.cancel()
        #expect(h.hasFailedWithCancel)
        #expect(longLived.future.completionToken._liveRegistrationCount == 0)
    }

    /// An until-style timeout whose operation ignores its cancelled token:
    /// after the timeout (or `until`) ended the result, nothing stays on the
    /// operation's still-pending future.
    @Test func untilStyleTimeoutLeavesNothingOnAnOperationThatIgnoresItsToken() {
        let longLived = FutureSource<Int>()
        let u = CancelTokenSource()
        let f = Future<Int>.withTimeout(.seconds(3600), until: u.token) { _ in longLived.future }
        #expect(longLived.future.completionToken._liveRegistrationCount == 1)
        u.cancel()
        #expect(f.hasFailedWithCancel)
        #expect(longLived.future.completionToken._liveRegistrationCount == 0)
        longLived.trySetResult(1)
        #expect(f.hasFailedWithCancel)
    }

    // After a success, the registration on `until` keeps only the result's
    // lifetime, not the result and its value, until `until` settles.
    @Test func untilStyleTimeoutKeepsNoDeliveredResultOnUntil() {
        let app = CancelTokenSource()
        let deinits = Counter()
        let tokens = Log<CancelToken>()
        for _ in 0..<100 {
            let f = Future<Tracked>.withTimeout(.seconds(3600), until: app.token) { t in
                tokens.append(t)
                return .succeeded(Tracked(deinits))
            }
            #expect(f.hasResult)
        }
        #expect(deinits.value == 100)
        #expect(app.token._liveRegistrationCount == 100)   // each result's lifetime
        #expect(tokens.all.allSatisfy { !$0.isCancelled })
        app.cancel()
        #expect(tokens.all.allSatisfy { $0.isCancelled })
        #expect(app.token._liveRegistrationCount == 0)
    }

    /// The lifetime's registration on `until` is made once the success is
    /// delivered: a cancel of `until` by the result's own continuation,
    /// right then, still ends it.
    @Test func untilStyleTimeoutEndsALifetimeWhoseUntilIsCancelledAsTheSuccessArrives() {
        let until = CancelTokenSource()
        let s = FutureSource<Int>()
        let token = Log<CancelToken>()
        let f = Future<Int>.withTimeout(.seconds(3600), until: until.token) { t in token.append(t); return s.future }
        f.thenDo(on: .completingThread) { _ in until.cancel() }
        s.trySetResult(1)
        #expect(f.forceGetResult() == 1)
        #expect(token.all.first?.isCancelled == true)
        #expect(until.token._liveRegistrationCount == 0)
    }

    // A timer that fires as the operation succeeds (its payload already
    // handed to a queue, past `cancel()`) must not cancel the token of the
    // success delivered first. Each round races the two; the result's token may end cancelled
    // only when the result timed out. (Rounds where they do not overlap
    // check nothing more than the contract; none can fail wrongly.)
    @Test func untilStyleTimeoutNeverEndsTheLifetimeOfADeliveredSuccess() {
        final class Round: @unchecked Sendable {
            weak var out: Future<Int>?
            var token: CancelToken?
        }
        var wrong = 0
        for _ in 0..<1000 {
            let round = Round()
            var outcome: Result<Int, any Error>?
            do {
                let f = Future<Int>.withTimeout(.microseconds(200), until: .immortal) { t in
                    round.token = t
                    let s = FutureSource<Int>()
                    DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(200)) { s.trySetResult(1) }
                    return s.future
                }
                round.out = f
                #expect(eventually { f.result != nil })
                outcome = f.result
            }
            // The timer's payload holds the result: once it is freed, the
            // payload has run (or was cancelled) and the token is final.
            #expect(eventually { round.out == nil })
            if case .success? = outcome, round.token!.isCancelled { wrong += 1 }
        }
        #expect(wrong == 0, "successes whose token a late timer cancelled")
    }

    // The unless-style form of the race above: a timer that fires as the
    // operation answers (its payload queued) cancels the token, if at all,
    // before the answer is delivered: the token's state at delivery is final. Each
    // round races the two; rounds where they do not overlap cannot fail.
    @Test func unlessStyleTimeoutNeverCancelsTheTokenOfADeliveredAnswer() {
        final class Round: @unchecked Sendable {
            weak var out: Future<Int>?
            var token: CancelToken?
            let cancelledAtDelivery = Log<Bool>()   // written on the completing thread
        }
        var changed = 0
        for _ in 0..<1000 {
            let round = Round()
            do {
                let f = Future<Int>.withTimeout(.microseconds(200)) { t in
                    round.token = t
                    let s = FutureSource<Int>()
                    DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(200)) { s.trySetResult(1) }
                    return s.future
                }
                f.finallyDo(on: .completingThread) { _ in round.cancelledAtDelivery.append(round.token!.isCancelled) }
                round.out = f
                #expect(eventually { f.result != nil })
            }
            // The timer's payload holds the result: once it is freed, the
            // payload has run (or was cancelled) and the token is final.
            #expect(eventually { round.out == nil })
            if round.cancelledAtDelivery.all != [round.token!.isCancelled] { changed += 1 }
        }
        #expect(changed == 0, "answers whose token a late timer cancelled after delivery")
    }

    /// The mechanism: a stop recorded after the answer is refused; one
    /// recorded before is returned to the answer, which cancels the token.
    @Test func unlessStyleStopsNothingOnceTheOperationHasAnswered() {
        let answeredFirst = _TimeoutStop()
        #expect(answeredFirst.finish() == nil)
        #expect(answeredFirst.stop(.timeout) == nil)   // nothing to cancel
        #expect(answeredFirst.stop(.unless) == nil)

        let stoppedFirst = _TimeoutStop()
        #expect(stoppedFirst.stop(.timeout) == false)  // cancel; the future is not gone
        #expect(stoppedFirst.stop(.unless) == nil)     // the first reason only
        #expect(stoppedFirst.finish() == .timeout)     // the answer sees why it was stopped

        let goneFirst = _TimeoutStop()
        #expect(goneFirst.operationGone() == nil)
        #expect(goneFirst.stop(.unless) == true)       // the stop completes the result
    }

    // Like the until-style registration above: with an input that can no
    // longer fill the last result and a long-lived `unless`, the
    // registration on `unless` keeps no result already filled, nor its value.
    @Test func orderedByCompletionKeepsNoFilledResultOnALiveUnless() {
        let app = CancelTokenSource()
        let a = FutureSource<Int>(), b = FutureSource<Int>(), gone = Droppable<Int>()
        var outs: [Future<Int>]? = [a.future, gone.future, b.future].orderedByCompletion(unless: app.token)
        a.trySetResult(1)
        b.trySetResult(2)
        gone.drop()
        weak let first = outs![0], second = outs![1]
        let last = outs![2]
        #expect(first?.forceGetResult() == 1 && second?.forceGetResult() == 2)
        #expect(last.state == .pending)   // `app` can still cancel it
        outs = nil
        #expect(first == nil && second == nil, "filled results kept by the registration on `unless`")
        #expect(app.token._liveRegistrationCount == 1)
        app.cancel()
        #expect(last.hasFailedWithCancel)
        #expect(app.token._liveRegistrationCount == 0)
    }

    @Test func untilStyleTimeoutWhoseOperationFailsLeavesNothingOnUntil() {
        let until = CancelTokenSource()
        for _ in 0..<1000 {
            let f = Future<Int>.withTimeout(.seconds(30), until: until.token) { _ in .failed(Boom()) }
            #expect(f.hasFailed)
        }
        #expect(until.token._liveRegistrationCount == 0)
        #expect(until.token._linkedNodeCount <= 32)
    }

    @Test func timeoutsWhoseOperationIsImmortalAndCannotFireAreImmortal() {
        let never = Duration.seconds(Int64.max)
        #expect(Future<Int>.withTimeout(never, until: CancelTokenSource().token) { _ in .immortal }.state == .immortal)
        #expect(Future<Int>.withTimeout(never) { _ in .immortal }.state == .immortal)
        #expect(Future<Int>.withTimeout(.seconds(30)) { _ in .immortal }.state == .pending)
    }

    /// A timed output is immortal once nothing can complete it: here the
    /// operation is gone, the timer never fires, and the last thing that
    /// could, a live `unless`, dies.
    @Test func timeoutsAreImmortalOnceTheirLastPossibleStopDies() {
        let never = Duration.seconds(Int64.max)
        var u: CancelTokenSource? = CancelTokenSource()
        let timed = Future<Int>.withTimeout(never, unless: u!.token) { _ in .immortal }
        let input = Droppable<Int>()
        let waiting = input.future.timeout(never, unless: u!.token)
        input.drop()
        #expect(timed.state == .pending && waiting.state == .pending)   // `u` can still fail them
        u = nil
        #expect(timed.state == .immortal && waiting.state == .immortal)
    }

    /// Once the operation has answered, nothing can cancel its token any
    /// more: it is immortal, and what the operation registered on it is
    /// freed unrun; the answer is not kept by the timeout either.
    @Test func anAnsweredTimeoutKeepsNeitherTheOperationsHandlersNorTheAnswer() {
        let handlerDeinits = Counter(), answerDeinits = Counter()
        let ran = Counter()
        let token = Locked<CancelToken?>(nil)
        var out: Future<Tracked>? = Future<Tracked>.withTimeout(.seconds(3600)) { t in
            token.withLock { $0 = t }
            let held = Tracked(handlerDeinits)
            t.whenCancelled { held.touch(); ran.increment() }
            return .succeeded(Tracked(answerDeinits))
        }
        #expect(out?.hasResult == true)
        #expect(token.withLock { $0?.state } == .immortal)
        #expect(handlerDeinits.value == 1 && ran.value == 0)
        out = nil
        #expect(answerDeinits.value == 1)

        let input = FutureSource<Tracked>()
        var waited: Future<Tracked>? = input.future.timeout(.seconds(3600))
        input.trySetResult(Tracked(answerDeinits))
        #expect(waited?.hasResult == true && input.future.completionToken._liveRegistrationCount == 0)
        waited = nil
        _ = consume input
        #expect(answerDeinits.value == 2)
    }

    @Test func continuationOfAnImmortalFutureFailsWhenItsUnlessIsCancelled() {
        let u = CancelTokenSource()
        let f = Future<Int>.immortal.then(unless: u.token) { $0 + 1 }
        #expect(f.state == .pending)
        u.cancel()
        #expect(f.hasFailedWithCancel)

        let gone = Droppable<Int>()
        var v: CancelTokenSource? = CancelTokenSource()
        let g = gone.future.unless(v!.token)
        gone.drop()
        #expect(g.state == .pending)   // `v` can still cancel it
        v = nil
        #expect(g.state == .immortal)
    }
}

@Suite struct RaceContract {
    @Test func untilCancelledMidRaceFailsWithCancellationAndCancelsEveryToken() {
        let c = CancelTokenSource()
        let tokens = Locked<[CancelToken]>([])
        let never = FutureSource<Int>()
        let f = Future<Int>.race([
            { t in tokens.withLock { $0.append(t) }; return never.future.unless(t) },
            { t in tokens.withLock { $0.append(t) }; return never.future },   // ignores its token
        ], until: c.token)
        #expect(f.state == .pending)
        c.cancel()
        #expect(f.hasFailedWithCancel)
        #expect(tokens.withLock { $0 }.allSatisfy { $0.isCancelled })
    }

    @Test func untilCancelledAfterTheWinCancelsTheWinnersToken() {
        let c = CancelTokenSource()
        let tokens = Locked<[CancelToken]>([])
        let f = Future<Int>.race([
            { t in tokens.withLock { $0.append(t) }; return .succeeded(4) },
        ], until: c.token)
        #expect(f.forceGetResult() == 4)
        let winner = tokens.withLock { $0 }[0]
        #expect(winner.canStillBeCancelled)
        c.cancel()
        #expect(winner.isCancelled)
    }

    @Test func alreadyCancelledUntilRunsNoOperation() {
        let calls = Counter()
        let f = Future<Int>.race([{ _ in calls.increment(); return .succeeded(1) }], until: .cancelled)
        #expect(f.hasFailedWithCancel)
        #expect(calls.value == 0)
    }

    @Test func winnerIsPublishedAfterTheLosersAreCancelled() {
        let loser = Locked<CancelToken?>(nil)
        let win = FutureSource<Int>()
        let sawLoserCancelled = Locked<Bool?>(nil)
        let f = Future<Int>.race([
            { t in loser.withLock { $0 = t }; return FutureSource<Int>().future.unless(t) },
            { _ in win.future },
        ])
        f.thenDo { _ in sawLoserCancelled.withLock { $0 = loser.withLock { $0 }!.isCancelled } }
        win.trySetResult(1)
        #expect(sawLoserCancelled.withLock { $0 } == true)
    }

    @Test func failuresAreInOperationOrderAndTheTokensEndCancelled() {
        let a = FutureSource<Int>(), b = FutureSource<Int>()
        let tokens = Locked<[CancelToken]>([])
        let f = Future<Int>.race([
            { t in tokens.withLock { $0.append(t) }; return a.future },
            { t in tokens.withLock { $0.append(t) }; return b.future },
        ])
        b.trySetFailure(Boom(code: 6))
        #expect(f.state == .pending)
        a.trySetFailure(Boom(code: 5))
        #expect((f.forceGetFailure() as? RaceFailure)?.failures.compactMap { ($0 as? Boom)?.code } == [5, 6])
        #expect(tokens.withLock { $0 }.allSatisfy { $0.isCancelled })
    }
}

@Suite struct TimeoutContract {
    @Test func unlessStyleWaitsForTheOperationAndDeliversALateSuccess() async {
        let op = FutureSource<Int>()
        let token = Locked<CancelToken?>(nil)
        let f = Future<Int>.withTimeout(.milliseconds(1)) { t in token.withLock { $0 = t }; return op.future }
        let t = token.withLock { $0 }!
        #expect(await eventually { t.isCancelled })
        #expect(f.state == .pending)   // waits for the operation to confirm
        op.trySetResult(1)
        #expect(f.forceGetResult() == 1)
    }

    @Test func unlessStyleTranslatesTheOperationsCancellation() {
        let u = CancelTokenSource()
        let op = FutureSource<Int>()
        let token = Locked<CancelToken?>(nil)
        let f = Future<Int>.withTimeout(.seconds(30), unless: u.token) { t in token.withLock { $0 = t }; return op.future }
        u.cancel()
        #expect(token.withLock { $0 }!.isCancelled)
        #expect(f.state == .pending)
        op.trySetFailedWithCancel()
        #expect(f.hasFailedWithCancel)

        let op2 = FutureSource<Int>()
        let g = Future<Int>.withTimeout(.milliseconds(1)) { t in
            t.whenCancelled { op2.trySetFailedWithCancel() }
            return op2.future
        }
        #expect(waitFor(g).hasFailedWithTimeout)
    }

    @Test func unlessStyleForwardsOtherFailuresAfterAStop() {
        let u = CancelTokenSource()
        let op = FutureSource<Int>()
        let f = Future<Int>.withTimeout(.seconds(30), unless: u.token) { _ in op.future }
        u.cancel()
        op.trySetFailure(Boom(code: 2))
        #expect(f.forceGetFailure() as? Boom == Boom(code: 2))
    }

    @Test func unlessStyleWithAnImmortalOperationFailsWhenStopped() {
        let u = CancelTokenSource()
        let gone = Droppable<Int>()
        let f = Future<Int>.withTimeout(.seconds(30), unless: u.token) { _ in gone.future }
        gone.drop()
        #expect(f.state == .pending)
        u.cancel()
        #expect(f.hasFailedWithCancel)
    }

    /// A cancel landing between the library's "cancelled?" and "still
    /// cancellable?" reads still reaches the timeout's internal handler: the
    /// timeout fails with cancel rather than ending immortal.
    @Test func unlessCancelledWhileTheTimeoutIsBeingSetUpIsNeverMissed() {
        var missed = 0
        for _ in 0..<5_000 {
            let u = CancelTokenSource()
            let op = Droppable<Int>()
            let start = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
            Thread.detachNewThread { start.wait(); u.cancel(); done.signal() }
            start.signal()
            let f = Future<Int>.withTimeout(.seconds(Int64.max), unless: u.token) { _ in op.future }
            done.wait()
            op.drop()
            if !f.hasFailedWithCancel { missed += 1 }
        }
        #expect(missed == 0)
    }

    @Test func untilStyleWithAnAlreadyCancelledUntilFailsAtOnceWithoutRunning() {
        let calls = Counter()
        let f = Future<Int>.withTimeout(.seconds(30), until: .cancelled) { _ in calls.increment(); return .succeeded(1) }
        #expect(f.hasFailedWithCancel)
        #expect(calls.value == 0)
    }

    @Test func untilStyleCancelledDuringFailsAtOnceAndCancelsTheOperation() {
        let c = CancelTokenSource()
        let token = Locked<CancelToken?>(nil)
        let f = Future<Int>.withTimeout(.seconds(30), until: c.token) { t in token.withLock { $0 = t }; return FutureSource<Int>().future }
        c.cancel()
        #expect(f.hasFailedWithCancel)
        #expect(token.withLock { $0 }!.isCancelled)
    }

    @Test func continuationsOfATimedOutResultSeeTheOperationTokenCancelled() async {
        for until in [true, false] {
            let token = Locked<CancelToken?>(nil)
            let seen = Locked<CancelTokenState?>(nil)
            let op: @Sendable (CancelToken) -> Future<Int> = { t in
                token.withLock { $0 = t }
                return FutureSource<Int>().future.unless(t)
            }
            let f = until ? Future<Int>.withTimeout(.milliseconds(1), until: CancelTokenSource().token, op)
                          : Future<Int>.withTimeout(.milliseconds(1), op)
            f.finallyDo { _ in seen.withLock { $0 = token.withLock { $0 }!.state } }
            #expect(await eventually { seen.withLock { $0 } != nil })
            #expect(seen.withLock { $0 } == .cancelled)
            #expect(f.hasFailedWithTimeout)
        }
    }

    @Test func zeroDelayAndZeroTimeoutCompleteAtOnce() {
        #expect(Future.delayed(7, by: .zero).forceGetResult() == 7)
        #expect(Future.delayed(7, by: .zero, unless: .cancelled).forceGetResult() == 7)
        let calls = Counter()
        #expect(Future<Int>.withTimeout(.zero) { _ in calls.increment(); return .succeeded(1) }.hasFailedWithTimeout)
        #expect(Future<Int>.withTimeout(.zero, until: CancelTokenSource().token) { _ in calls.increment(); return .succeeded(1) }.hasFailedWithTimeout)
        // Zero is checked first, as in the original: even with a cancelled token.
        #expect(Future<Int>.withTimeout(.zero, until: .cancelled) { _ in calls.increment(); return .succeeded(1) }.hasFailedWithTimeout)
        #expect(Future<Int>.withTimeout(.zero, unless: .cancelled) { _ in calls.increment(); return .succeeded(1) }.hasFailedWithTimeout)
        #expect(calls.value == 0)
    }

    @Test func retryingNeverStartsATryWhileThePreviousTokenIsLive() {
        let live = Counter(), calls = Counter()
        let previous = Locked<CancelToken?>(nil)
        let f = Future<Int>.retrying(upTo: 4, baseTimeout: .milliseconds(1), backoff: 1) { t in
            calls.increment()
            if let p = previous.withLock({ $0 }), p.canStillBeCancelled { live.increment() }
            previous.withLock { $0 = t }
            return FutureSource<Int>().future.unless(t)
        }
        #expect(waitFor(f).hasFailedWithTimeout)
        #expect(calls.value == 4)
        #expect(live.value == 0)
    }
}

@Suite struct TimersAtTheExtremes {
    @Test func hugeDelaysMeanNeverWithoutTrapping() {
        #expect(Future.delayed(1, by: .seconds(Int64.max)).state == .immortal)
        let u = CancelTokenSource()
        let f = Future.delayed(1, by: .seconds(Int64.max), unless: u.token)
        #expect(f.state == .pending)
        u.cancel()
        #expect(f.hasFailedWithCancel)
        let years300 = Duration.seconds(300 * 365 * 86_400)
        #expect(Future<Int>.withTimeout(years300) { _ in .succeeded(3) }.forceGetResult() == 3)
        #expect(Future<Int>.withTimeout(years300, until: u.token) { _ in .succeeded(3) }.hasFailedWithCancel)
    }

    /// Longer than `Int64.max` seconds: `Duration.components` would trap
    /// (it did, inside the conversion for the timer).
    @Test func delaysBeyondInt64SecondsMeanNever() {
        let beyond = Duration.seconds(Int64.max) * 4
        #expect(Future.delayed(1, by: beyond).state == .immortal)
        #expect(Future<Int>.withTimeout(beyond) { _ in .immortal }.state == .immortal)
        let s = FutureSource<Int>()
        let t = s.future.timeout(beyond)
        #expect(t.state == .pending)
        s.trySetResult(2)
        #expect(t.forceGetResult() == 2)
        let calls = Counter()
        let r = Future<Int>.retrying(upTo: 3, baseTimeout: beyond, backoff: 0) { _ in calls.increment(); return .timedOut }
        #expect(r.hasFailedWithTimeout)
        #expect(calls.value == 1)   // the next timeout, beyond * 0, is zero: never run
    }

    @Test func retryingWithAHugeBackoffDoesNotTrap() async {
        let c = CancelTokenSource()
        let calls = Counter()
        let f = Future<Int>.retrying(upTo: 5, baseTimeout: .milliseconds(1), backoff: 1e13, until: c.token) { t in
            calls.increment()
            return FutureSource<Int>().future.unless(t)
        }
        #expect(await eventually { calls.value == 2 })   // the second try's timeout is "never"
        #expect(f.state == .pending)
        c.cancel()
        #expect(f.hasFailedWithCancel)
        #expect(calls.value == 2)
    }

    @Test func timerFuturesCompleteOffTheWheelsDriverThread() async {
        let onTimerQueue = Locked<[Bool]>([])
        let fs = [Future.delayed(1, by: .milliseconds(1)),
                  Future<Int>.withTimeout(.milliseconds(1)) { t in FutureSource<Int>().future.unless(t) }.catch { _ in 0 },
                  Future<Int>.withTimeout(.milliseconds(1), until: CancelTokenSource().token) { _ in FutureSource<Int>().future }.catch { _ in 0 }]
        for f in fs { f.finallyDo { _ in onTimerQueue.withLock { $0.append(cf_wheel_on_driver_thread() != 0) } } }
        #expect(await eventually { onTimerQueue.withLock { $0.count } == 3 })
        #expect(onTimerQueue.withLock { $0 } == [false, false, false])
    }
}

/// The global pool blocked: timers must not need it. Blockers are queued
/// on the pool until one does not start (every thread the pool has is
/// blocked, however many earlier tests left idle); that one is the canary,
/// which runs only when Dispatch adds a thread (its monitor does so about
/// once a second): a timer's future that completes first did not wait for
/// the pool. That order is the assertion, not a duration; an attempt where
/// the monitor happened to act within the timers' 1 ms is tried again.
@Suite struct TimersNeverWaitForABusyPool {
    @Test func timeoutsAndDelaysCompleteWhileEveryGlobalThreadIsBlocked() {
        var outcome = Self.attempt()
        for _ in 1..<3 where !outcome.completedBeforeCanary { outcome = Self.attempt() }
        #expect(outcome.completedBeforeCanary, "the timers' futures completed only after the pool moved")
        #expect(outcome.timedOut)
        #expect(outcome.delayedValue == 1)
    }

    static func attempt() -> (completedBeforeCanary: Bool, timedOut: Bool, delayedValue: Int?) {
        let release = DispatchSemaphore(value: 0)
        // Each blocker holds a global thread until `release` (within
        // `patience`: the bound only keeps a failure from hanging the suite).
        // The first `width` start (the pool has at least as many threads);
        // a later one that has not started 50 ms after it was queued found
        // no idle thread: it is the canary. At most 16 more than `width`:
        // a pool that keeps adding threads (other tests queue work on it)
        // is not held for long, and the attempt is tried again.
        let width = ProcessInfo.processInfo.activeProcessorCount
        var blockers = 0
        var canaryRan = Locked(false)
        while blockers < width + 16 {
            let started = Locked(false), signal = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                started.withLock { $0 = true }
                signal.signal()
                _ = release.wait(timeout: patienceDeadline())
            }
            blockers += 1
            canaryRan = started
            let deadline = blockers <= width ? patienceDeadline() : .now() + .milliseconds(50)
            if signal.wait(timeout: deadline) == .timedOut { break }
        }
        let canary = canaryRan
        let done = DispatchSemaphore(value: 0)
        let ranFirst = Locked<[Bool]>([])
        let timedOut = Future<Int>.withTimeout(.milliseconds(1)) { t in FutureSource<Int>().future.unless(t) }
        let delayed = Future.delayed(1, by: .milliseconds(1))
        for f in [timedOut, delayed] {
            f.finallyDo(on: .completingThread) { _ in
                let first = !canary.withLock { $0 }
                ranFirst.withLock { $0.append(first) }
                done.signal()
            }
        }
        _ = done.wait(timeout: patienceDeadline())
        _ = done.wait(timeout: patienceDeadline())
        for _ in 0..<blockers { release.signal() }
        return (ranFirst.withLock { $0 } == [true, true], timedOut.hasFailedWithTimeout,
                delayed.result.flatMap { try? $0.get() })
    }
}

@Suite struct NoQuadraticSurprises {
    @Test func cancellingOrderedByCompletionVisitsEachResultOnce() {
        let u = CancelTokenSource()
        let n = 20_000
        let sources = (0..<n).map { _ in FutureSource<Int>() }
        let outs = sources.map(\.future).orderedByCompletion(unless: u.token)
        #expect(u.token._linkedNodeCount == 1)
        #expect(sources[0].future.completionToken._linkedNodeCount == 1)
        u.cancel()
        #expect(outs.allSatisfy { $0.hasFailedWithCancel })
        // The registrations on the inputs were removed (not left to fire).
        #expect(sources.allSatisfy { $0.future.completionToken._liveRegistrationCount == 0 })
        sources[0].trySetResult(1)
        #expect(outs[0].hasFailedWithCancel)
    }

    @Test func anyAndAllRegisterOncePerDistinctToken() {
        let sources = (0..<20_000).map { _ in CancelTokenSource() }
        let tokens = sources.map(\.token)
        let any = CancelToken.any(tokens + tokens)
        let all = CancelToken.all(tokens + tokens.reversed())
        #expect(tokens.allSatisfy { $0._linkedNodeCount == 2 })
        for s in sources.dropLast() { s.cancel() }
        #expect(any.isCancelled)
        #expect(all.canStillBeCancelled)
        sources.last!.cancel()
        #expect(all.isCancelled)
    }

    /// The async `then` binds its Task to `unless`: the future's own
    /// completion token (cancelled by the time the body runs) must not
    /// cancel it.
    @Test func asyncThenWithItsOwnCompletionTokenAsUnlessCompletes() async throws {
        let s = FutureSource<Int>()
        let g = s.future.then(unless: s.future.completionToken) { (v: Int) async throws -> Int in
            try Task.checkCancellation()
            return v * 3
        }
        s.trySetResult(2)
        #expect(try await g.get() == 6)
    }

    @Test func unlessOfTheFuturesOwnCompletionTokenEndsWithItsOutcome() {
        let s = FutureSource<Int>()
        let f = s.future.unless(s.future.completionToken)
        let g = s.future.then(unless: s.future.completionToken) { $0 * 2 }
        #expect(f.state == .pending)
        s.trySetResult(4)
        #expect(f.forceGetResult() == 4)
        #expect(g.forceGetResult() == 8)
        // `timeout` too: its `unless` link is registered on that token
        // before its forwarding, and must not win and fail the result.
        let t = FutureSource<Int>()
        let h = t.future.timeout(.seconds(3600), unless: t.future.completionToken)
        t.trySetResult(5)
        #expect(h.forceGetResult() == 5)
    }
}

@Suite struct TimersAndTriesLeaveNothingBehind {
    /// A try that has timed out when `withTimeout` returns is followed by
    /// the next in a loop: 100,000 such tries (and a million zero-timeout
    /// ones) would overflow the stack if each nested the next.
    @Test func retryingTriesThatTimeOutAtOnceUsesConstantStack() {
        let calls = Counter()
        let f = Future<Int>.retrying(upTo: 100_000, baseTimeout: .seconds(Int64.max), backoff: 1) { _ in
            calls.increment()
            return .timedOut
        }
        #expect(f.hasFailedWithTimeout)
        #expect(calls.value == 100_000)
        let zero = Future<Int>.retrying(upTo: 1_000_000, baseTimeout: .zero) { _ in
            calls.increment()
            return .succeeded(1)
        }
        #expect(zero.hasFailedWithTimeout)
        #expect(calls.value == 100_000)   // a zero timeout never runs the operation
    }

    /// A zero timeout (given, or reached through a backoff of 0) times
    /// every try left out without running it: `retrying` answers at once
    /// instead of counting up to `maxTries`.
    @Test func retryingWithAZeroTimeoutEndsAtOnceWhateverMaxTries() async {
        let calls = Counter()
        let f = Future<Int>.retrying(upTo: .max, baseTimeout: .zero) { _ in
            calls.increment()
            return .succeeded(1)
        }
        #expect(f.hasFailedWithTimeout)
        #expect(calls.value == 0)
        let g = Future<Int>.retrying(upTo: .max, baseTimeout: .nanoseconds(1), backoff: 0) { _ in
            calls.increment()
            return FutureSource<Int>().future   // never answers: times out
        }
        await #expect(throws: TimeoutError.self) { try await g.get() }
        #expect(calls.value == 1)
    }

    @Test func retryingStopsAtTheFirstTryThatDoesNotTimeOutAtOnce() {
        let calls = Counter()
        let f = Future<Int>.retrying(upTo: 10, baseTimeout: .seconds(Int64.max), backoff: 1) { _ in
            calls.increment()
            return calls.value < 4 ? .timedOut : .succeeded(calls.value)
        }
        #expect(f.forceGetResult() == 4)
        #expect(calls.value == 4)
    }

    /// The timer's payload holds the result's source (and so the result):
    /// once `until`/`unless` has ended the result, the timer goes at once,
    /// not at its deadline an hour later.
    @Test func withTimeoutReleasesItsTimerAsSoonAsTheResultSettles() {
        for untilStyle in [true, false] {
            weak var weakResult: Future<Int>?
            let u = CancelTokenSource()
            do {
                let f = untilStyle
                    ? Future<Int>.withTimeout(.seconds(3600), until: u.token) { _ in .immortal }
                    : Future<Int>.withTimeout(.seconds(3600), unless: u.token) { _ in .immortal }
                weakResult = f
                #expect(f.state == .pending)
                u.cancel()
                #expect(f.hasFailedWithCancel)
            }
            #expect(weakResult == nil, "untilStyle: \(untilStyle)")
        }
    }

    /// The original's rule: an operation that fails with a cancel timed out
    /// unless `unless` was cancelled, whether or not our timer's work has
    /// run yet; with a timeout that never fires, the cancel is its own.
    @Test func unlessStyleWithTimeoutReportsACancelledOperationAsTimedOut() {
        #expect(Future<Int>.withTimeout(.seconds(3600)) { _ in .cancelled }.hasFailedWithTimeout)
        let u = CancelTokenSource()
        let op = FutureSource<Int>()
        let f = Future<Int>.withTimeout(.seconds(3600), unless: u.token) { _ in op.future }
        u.cancel()
        #expect(f.state == .pending)          // waits for the operation to confirm
        op.trySetFailedWithCancel()
        #expect(f.hasFailedWithCancel)
        #expect(Future<Int>.withTimeout(.seconds(Int64.max)) { _ in .cancelled }.hasFailedWithCancel)
        #expect(Future<Int>.withTimeout(.seconds(3600)) { _ in .failed(Boom()) }.forceGetFailure() is Boom)
    }

    /// Unless-style: `unless` fires while the operation still runs (the
    /// result waits for it), then the operation becomes immortal. The result
    /// fails with `CancellationError` there, and only its settling cancels
    /// the timer: the timer's payload must not keep the result alive.
    @Test func withTimeoutReleasesItsTimerWhenTheOperationBecomesImmortalAfterUnless() {
        weak var weakResult: Future<Int>?
        let u = CancelTokenSource()
        do {
            var op: FutureSource<Int>? = FutureSource<Int>()
            let f = Future<Int>.withTimeout(.seconds(3600), unless: u.token) { [op] _ in op!.future }
            weakResult = f
            u.cancel()
            #expect(f.state == .pending)     // waits for the operation to confirm
            op = nil                         // the operation's future becomes immortal
            #expect(f.hasFailedWithCancel)
        }
        #expect(weakResult == nil)
    }
}

/// What stays linked in a list does not outlive the list's owner, nor keep an
/// `unless` token's owner alive.
@Suite struct NothingOutlivesItsList {
    /// A pending future nobody can complete any more is freed: a node still
    /// linked in its list (here removed, waiting for a cleanup that would
    /// only come after 15 more removals) is released, and a live handler is
    /// discarded unrun, as on a future whose source died. (The variadic
    /// `all` drops its conversions of still-pending inputs this way when it
    /// fails early, with its own removed registrations linked in them.)
    /// Released: freed, or kept for reuse by its thread (cf_node_pool.h),
    /// which only a node nothing else holds can be. The body runs on a
    /// thread of its own, which frees what it kept when it exits.
    @Test func aPendingFutureFreedReleasesWhatIsStillLinkedInItsList() {
        final class Seen: @unchecked Sendable {
            weak var removedNode: _Node?
            var removed = false, heldWhileLinked = false, notKeptWhileLinked = false
            var releasedWithTheFuture = false
        }
        let seen = Seen()
        let deinits = Counter()
        onNewThread {
            do {
                let f = Future<Int>()   // pending, with no source: nothing can complete it
                let r = f.completionToken.whenCancelled {}
                seen.removedNode = r._node
                seen.removed = r.remove()
                let t = Tracked(deinits)
                f.completionToken.whenCancelled { _ = t }
                seen.heldWhileLinked = seen.removedNode != nil
                seen.notKeptWhileLinked = seen.removedNode?._isKeptOnThisThread == false
            }
            seen.releasedWithTheFuture = seen.removedNode == nil || seen.removedNode!._isKeptOnThisThread
        }
        #expect(seen.removed)
        #expect(seen.heldWhileLinked)
        #expect(seen.notKeptWhileLinked)
        #expect(seen.releasedWithTheFuture)
        #expect(seen.removedNode == nil)
        #expect(deinits.value == 1)
    }

    /// `CancelToken.all`: when an input becomes immortal, the result does,
    /// and its registrations on the other inputs are removed; those removed
    /// nodes, still linked in a live input's list, must not keep the
    /// result's storage (or its links) alive.
    @Test func allTokensRemovedRegistrationsDoNotKeepTheResult() {
        let live = CancelTokenSource()
        weak var storage: AnyObject?
        do {
            var gone: CancelTokenSource? = CancelTokenSource()
            let result = CancelToken.all(live.token, gone!.token)
            storage = result._owner
            gone = nil
            #expect(result.state == .immortal)
            #expect(live.token._liveRegistrationCount == 0)
        }
        #expect(storage == nil)
    }

    /// A registration that settles removes its `unless` link, which can stay
    /// linked (as a removed node) in the `unless` token's list until a
    /// cleanup: it must not keep that token's owner alive from there. Here
    /// the owner is a pending future nobody can complete, so only its own
    /// list could keep it.
    @Test func aRemovedUnlessLinkDoesNotKeepTheUnlessOwner() {
        let s = CancelTokenSource()
        for settle in ["remove", "run"] {
            weak var unlessOwner: Future<Int>?
            do {
                let u = Future<Int>()
                unlessOwner = u
                let r = s.token.whenCancelled(unless: u.completionToken) {}
                #expect(u.completionToken._linkedNodeCount == 1)
                if settle == "remove" { #expect(r.remove()) } else { s.cancel() }
                #expect(u.completionToken._linkedNodeCount == 1, "the removed link waits for a cleanup")
            }
            #expect(unlessOwner == nil, "\(settle)")
        }
    }

    /// A continuation removed by its `unless` token can stay linked (as a
    /// removed node) in its input's list until a cleanup: it must not keep
    /// the `unless` token's owner alive. Here that owner's value holds the
    /// input's source, so keeping it made a cycle nothing broke.
    @Test func aContinuationRemovedByUnlessDoesNotKeepTheUnlessOwner() {
        final class Holder: Sendable {
            let source: FutureSource<Int>
            let t: Tracked
            init(_ s: FutureSource<Int>, _ t: Tracked) { source = s; self.t = t }
        }
        let deinits = Counter()
        for form in 0..<5 {
            do {
                let a = FutureSource<Int>()
                let b = FutureSource<Holder>()
                let u = b.future.completionToken
                switch form {
                case 0: _ = a.future.then(unless: u) { $0 }
                case 1: _ = a.future.then(unless: u) { Future.succeeded($0) }
                case 2: a.future.thenDo(unless: u) { _ in }
                case 3: _ = a.future.catch(unless: u) { _ in 0 }
                default: a.future.completionToken.whenCancelled(unless: u) {}
                }
                b.trySetResult(Holder(a, Tracked(deinits)))
            }
            #expect(deinits.value == form + 1, "form \(form)")
        }
    }
}
