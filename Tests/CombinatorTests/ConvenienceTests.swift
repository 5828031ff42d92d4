// The conveniences users of PromiseKit, NIO and Combine reach for,
// continuations on the main actor, the completing-thread marker, diagnostics.
@_spi(Testing) import CollapsingFutures
import Dispatch
import Foundation
import Synchronization
import Testing
import TestSupport

@Suite struct Always {
    @Test func runsTheCleanupAndKeepsTheOutcome() {
        let ran = Counter()
        let s = FutureSource<Int>()
        let f: Future<Int> = s.future.always { done in
            #expect(done.hasResult)
            ran.increment()
        }
        s.trySetResult(3)
        #expect(f.forceGetResult() == 3)
        #expect(ran.value == 1)
        let g = Future<Int>.failed(Boom(code: 2)).always { _ in ran.increment() }
        #expect(g.forceGetFailure() as? Boom == Boom(code: 2))
        #expect(ran.value == 2)
    }

    @Test func unlessCancelledFirstSkipsTheCleanupAndFails() {
        let u = CancelTokenSource(), s = FutureSource<Int>()
        let ran = Counter()
        let f = s.future.always(unless: u.token) { _ in ran.increment() }
        u.cancel()
        s.trySetResult(1)
        #expect(f.hasFailedWithCancel)
        #expect(ran.value == 0)
    }
}

@Suite struct CombiningTypes {
    @Test func andPairsTwoValuesOfDifferentTypes() {
        let a = FutureSource<Int>(), b = FutureSource<String>()
        let both = a.future.and(b.future)
        b.trySetResult("x")
        #expect(both.state == .pending)
        a.trySetResult(1)
        let (x, y) = both.forceGetResult()
        #expect(x == 1 && y == "x")
    }

    @Test func variadicAllKeepsEachType() {
        let f = Future.all(Future.succeeded(1), Future.succeeded("two"), Future.succeeded(3.0))
        let (a, b, c) = f.forceGetResult()
        #expect(a == 1 && b == "two" && c == 3.0)
    }

    @Test func variadicAllFailsFastAndIsImmortalWithAnImmortalInput() {
        let pending = FutureSource<String>()
        let failed = Future.all(Future<Int>.failed(Boom(code: 7)), pending.future)
        #expect(failed.forceGetFailure() as? Boom == Boom(code: 7))
        #expect(Future.all(Future.succeeded(1), Future<String>.immortal).state == .immortal)
        let u = CancelTokenSource()
        let cancelled = Future.all(Future.succeeded(1), pending.future, unless: u.token)
        u.cancel()
        #expect(cancelled.hasFailedWithCancel)
    }
}

@Suite struct RacingExistingFutures {
    @Test func firstSuccessWinsAndAllFailuresAreReported() {
        let slow = FutureSource<Int>(), fast = FutureSource<Int>()
        let f = Future.race(slow.future, fast.future)
        fast.trySetResult(2)
        #expect(f.forceGetResult() == 2)
        let g = Future.race(Future<Int>.failed(Boom(code: 1)), .failed(Boom(code: 2)))
        #expect((g.forceGetFailure() as? RaceFailure)?.failures.compactMap { ($0 as? Boom)?.code } == [1, 2])
        #expect(Future.race(Future<Int>.immortal, .failed(Boom())).state == .immortal)
    }
}

@Suite struct InstanceTimeout {
    @Test func completesWithTheOutcomeAndRemovesItsRegistration() {
        let s = FutureSource<Int>()
        let f = s.future.timeout(.seconds(30))
        #expect(s.future.completionToken._liveRegistrationCount == 1)
        s.trySetResult(4)
        #expect(f.forceGetResult() == 4)
        #expect(Future.succeeded(5).timeout(.zero).forceGetResult() == 5)
    }

    @Test func failsWithTimeoutErrorAndLeavesNothingOnTheFuture() async {
        let s = FutureSource<Int>()
        let f = s.future.timeout(.milliseconds(1))
        #expect(await eventually { f.hasFailedWithTimeout })
        #expect(s.future.completionToken._liveRegistrationCount == 0)
        #expect(s.future.state == .pending)   // untouched
        #expect(s.future.timeout(.zero).hasFailedWithTimeout)
    }

    @Test func unlessAndImmortality() {
        let u = CancelTokenSource(), s = FutureSource<Int>()
        let f = s.future.timeout(.seconds(30), unless: u.token)
        u.cancel()
        #expect(f.hasFailedWithCancel)
        #expect(Future<Int>.immortal.timeout(.seconds(Int64.max)).state == .immortal)
    }
}

/// A nonisolated async step returning a future (a global function: not
/// isolated to the main actor of the test that uses it). It says it has
/// started, then waits for that test's go-ahead before it returns.
private let collapseStepStarted = Atomic<Int>(0)
private let collapseStepGo = DispatchSemaphore(value: 0)
@Sendable private func nonisolatedNext(_ v: Int) async -> Future<Int> {
    collapseStepStarted.add(1, ordering: .sequentiallyConsistent)
    collapseStepGo.wait()
    return .succeeded(v + 1)
}

@Suite struct AsyncContinuations {
    @Test func thenWithAnAsyncClosureCompletesWithItsValue() async throws {
        let s = FutureSource<Int>()
        let f = s.future.then { v async throws -> Int in
            await Task.yield()
            return v * 2
        }
        s.trySetResult(21)
        #expect(try await f.get() == 42)
        let failed = Future<Int>.failed(Boom(code: 3)).then { v async throws -> Int in v }
        await #expect(throws: Boom(code: 3)) { try await failed.get() }
    }

    @Test func unlessCancelsTheTaskAndFailsTheResult() async {
        let u = CancelTokenSource()
        let started = Counter()
        let f = Future.succeeded(1).then(unless: u.token) { v async throws -> Int in
            started.increment()
            try await Task.sleep(nanoseconds: 60_000_000_000)
            return v
        }
        #expect(await eventually { started.value == 1 })
        u.cancel()
        #expect(f.hasFailedWithCancel)
    }

    /// API.md's "a continuation that returns a Future collapses" holds for
    /// the async `then`: it gives a `Future<U>`, not a `Future<Future<U>>`.
    /// (Each `get()` below compares with an Int, so a `Future<Future<U>>`
    /// would not compile.)
    @Test func anAsyncClosureReturningAFutureCollapses() async throws {
        let s = FutureSource<Int>()
        let inner = FutureSource<Int>()
        let f = s.future.then { v async in v == 1 ? inner.future : Future.succeeded(0) }
        s.trySetResult(1)
        #expect(!f.hasResult)
        inner.trySetResult(42)
        #expect(try await f.get() == 42)
        // An immortal inner future makes the result immortal, as a
        // synchronous collapsing `then` does, rather than failing it.
        let gone = Droppable<Int>()
        let ran = Counter()
        let g = Future.succeeded(1).then { _ async in ran.increment(); return gone.future }
        #expect(await eventually { ran.value == 1 })
        gone.drop()
        #expect(await eventually { g.state == .immortal })
        let failing = Future.succeeded(1).then { _ async throws -> Future<Int> in throw Boom(code: 4) }
        await #expect(throws: Boom(code: 4)) { try await failing.get() }
    }

    /// The collapse is the library's own bookkeeping: registered from the
    /// main actor it still needs no main-queue hop, so it completes while
    /// the main actor is busy (a public `then` doing the collapse would wait
    /// for the main queue).
    /// (The main actor is held only from the step's go-ahead on: the step
    /// itself may wait for a busy thread pool first.)
    @Test @MainActor func anAsyncCollapseNeedsNoMainQueue() async throws {
        let f = Future.succeeded(1).then(nonisolatedNext)
        while collapseStepStarted.load(ordering: .sequentiallyConsistent) == 0 {
            try await Task.sleep(for: .milliseconds(1))   // the main actor is free here
        }
        collapseStepGo.signal()
        // From here the main actor is held: the step returns, its Task
        // completes on a worker thread, and the collapse must follow there.
        let end = ContinuousClock.now + patience
        while f.isIncomplete && ContinuousClock.now < end { usleep(1_000) }
        #expect(f.hasResult)
    }

    @Test func aSynchronousClosureInAnAsyncContextStillRunsInline() async {
        let s = FutureSource<Int>()
        let f = s.future.then { $0 + 1 }
        s.trySetResult(1)
        #expect(f.hasResult)   // the synchronous overload: completed before trySetResult returned
    }
}

@Suite struct MainActorContinuations {
    @MainActor final class Model {
        var title = ""
        var count = 0
        var caught = false
    }

    @Test @MainActor func continuationsRunOnTheMainActor() async throws {
        let model = Model()
        let s = FutureSource<String>()
        s.future.thenDo(on: MainActor.shared) { model.title = $0 }
        let counted = s.future.then(on: MainActor.shared) { v in model.count = v.count; return v.count }
        Future<Int>.failed(Boom()).catchDo(on: MainActor.shared) { _ in model.caught = true }
        s.trySetResult("hello")
        #expect(try await counted.get() == 5)
        for _ in 0..<2000 where !(model.title == "hello" && model.caught) {
            try await Task.sleep(nanoseconds: 1_000_000)
        }
        #expect(model.title == "hello")
        #expect(model.count == 5)
        #expect(model.caught)
    }

    /// `unless` cancelled after the future completed but before the main
    /// actor ran the continuation still stops it (as `on: .main` does after
    /// its hop): the hop is a Task that checks `unless` first.
    @Test @MainActor func unlessCancelledBeforeTheMainActorRunsStopsTheContinuation() async throws {
        let model = Model()
        let s = FutureSource<String>(), u = CancelTokenSource()
        s.future.thenDo(on: MainActor.shared, unless: u.token) { model.title = $0 }
        s.future.finallyDo(on: MainActor.shared, unless: u.token) { _ in model.caught = true }
        let counted = s.future.then(on: MainActor.shared, unless: u.token) { v in model.count = v.count; return v.count }
        s.trySetResult("hello")   // the hops are queued on the main actor: we are on it, not suspended
        u.cancel()
        await #expect(throws: CancellationError.self) { try await counted.get() }
        // The main actor runs its jobs in order: the two hops before `then`'s have run.
        #expect(model.title == "")
        #expect(model.count == 0)
        #expect(!model.caught)
        // The future's own completion token as `unless` never stops them.
        let s2 = FutureSource<String>()
        let own = s2.future.then(on: MainActor.shared, unless: s2.future.completionToken) { $0.count }
        s2.trySetResult("four")
        #expect(try await own.get() == 4)
    }

    /// The main-actor `then` returning a future collapses: it gives a
    /// `Future<U>`, not a `Future<Future<U>>`.
    @Test @MainActor func aMainActorThenReturningAFutureCollapses() async throws {
        let model = Model()
        let s = FutureSource<String>(), inner = FutureSource<Int>()
        let f = s.future.then(on: MainActor.shared) { v in model.title = v; return inner.future }
        s.trySetResult("hi")
        #expect(await eventually { f.state == .flattening })
        #expect(model.title == "hi")
        inner.trySetResult(7)
        #expect(try await f.get() == 7)
        let thrown = Future.succeeded("x").then(on: MainActor.shared) { _ throws -> Future<Int> in throw Boom(code: 5) }
        await #expect(throws: Boom(code: 5)) { try await thrown.get() }
        let u = CancelTokenSource()
        let s3 = FutureSource<String>()
        let stopped = s3.future.then(on: MainActor.shared, unless: u.token) { _ in inner.future }
        s3.trySetResult("y")
        u.cancel()
        await #expect(throws: CancellationError.self) { try await stopped.get() }
    }
}

@Suite struct Diagnostics {
    @Test func errorsReadAsSentences() {
        #expect(TimeoutError().localizedDescription == "The operation timed out.")
        #expect("\(TimeoutError())" == "The operation timed out.")
        #expect(FutureError.immortal.localizedDescription.hasPrefix("The future can never complete"))
        let race = Future<Int>.race([{ _ in .timedOut }, { _ in .failed(FutureError.immortal) }]).forceGetFailure()
        #expect(race.localizedDescription.hasPrefix("Every operation of the race failed: The operation timed out.; The future"))
    }

    @Test func sourcesAndRegistrationsDescribeTheirState() {
        let s = FutureSource<Int>()
        #expect("\(s)" == "FutureSource(Future(pending))")
        s.trySetResult(2)
        #expect("\(s)" == "FutureSource(Future(succeeded: 2))")
        let t = CancelTokenSource()
        #expect("\(t)" == "CancelTokenSource(stillCancellable)")
        let r = t.token.whenCancelled {}
        #expect("\(r)" == "CancelRegistration(registered)")
        r.remove()
        #expect("\(r)" == "CancelRegistration(removed)")
        let ran = t.token.whenCancelled {}
        t.cancel()
        #expect("\(ran)" == "CancelRegistration(ran)")
        #expect("\(t)" == "CancelTokenSource(cancelled)")
        #expect("\(CancelToken.immortal.whenCancelled {})" == "CancelRegistration(never runs)")
    }
}
