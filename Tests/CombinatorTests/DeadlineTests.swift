// CancelTokenSource(cancellingAfter:): a token that cancels itself, on the
// core's timing wheel, and what every library timer inherits from it.
@testable import CollapsingFutures
import CCollapsingFutures
import Dispatch
import Foundation
import Synchronization
import Testing
import TestSupport

@Suite struct DeadlineSources {
    @Test func aDeadlineNeverFiresEarly() async {
        // Counts firings before their deadline: there must be none. Lateness
        // is a benchmark figure, not asserted here.
        let n = 500
        let early = Counter(), fired = Counter()
        var sources: [CancelTokenSource] = []
        for i in 0..<n {
            let duration = Duration.microseconds(Int64(i % 40) * 250 + 1)
            let start = ContinuousClock.now
            let s = CancelTokenSource(cancellingAfter: duration)
            s.token.whenCancelled(on: .global()) {
                if ContinuousClock.now - start < duration { early.increment() }
                fired.increment()
            }
            sources.append(s)
        }
        #expect(await eventually { fired.value == n })
        #expect(early.value == 0)
        #expect(sources.allSatisfy { $0.token.isCancelled })
    }

    @Test func aZeroDurationIsCancelledAtOnce() {
        let s = CancelTokenSource(cancellingAfter: .zero)
        #expect(s.token.isCancelled)
        #expect(!s.tryCancel())
    }

    @Test func aHundredYearsNeverFires() {
        let s = CancelTokenSource(cancellingAfter: .seconds(100 * 365 * 86_400))
        #expect(s.token.state == .stillCancellable)
        #expect(s.tryCancel())
        let beyond = CancelTokenSource(cancellingAfter: .seconds(Int64.max) * 4)
        #expect(beyond.token.state == .stillCancellable)
    }

    @Test func cancelBeforeTheDeadlineCancelsOnThisThread() {
        let s = CancelTokenSource(cancellingAfter: .seconds(3600))
        let thread = Locked<Thread?>(nil)
        s.token.whenCancelled(on: nil) { thread.withLock { $0 = Thread.current } }
        #expect(s.tryCancel())
        #expect(thread.withLock { $0 } === Thread.current)
        #expect(!s.tryCancel())
    }

    @Test func cancelRacingTheDeadlineRunsEachHandlerOnce() async {
        let n = 1_000
        let runs = Counter()
        let sources = (0..<n).map { i in
            let s = CancelTokenSource(cancellingAfter: .microseconds(Int64(i % 4) * 500 + 1))
            s.token.whenCancelled(on: nil) { runs.increment() }
            return s
        }
        DispatchQueue.concurrentPerform(iterations: n) { i in sources[i].cancel() }
        #expect(await eventually { runs.value == n })
        try? await Task.sleep(for: .milliseconds(20))
        #expect(runs.value == n)
    }

    @Test func aReleasedSourceMakesItsTokenImmortalAndDropsItsHandlersAtOnce() {
        let deinits = Counter()
        let token: CancelToken
        do {
            let s = CancelTokenSource(cancellingAfter: .seconds(3600))
            let h = Tracked(deinits)
            s.token.whenCancelled { h.touch() }
            token = s.token
        }
        #expect(token.state == .immortal)
        #expect(deinits.value == 1)
    }

    @Test func aFiredDeadlineKeepsNothingOfItsHandlers() async {
        let deinits = Counter(), runs = Counter()
        let s = CancelTokenSource(cancellingAfter: .milliseconds(1))
        do {
            let h = Tracked(deinits)
            s.token.whenCancelled { h.touch(); runs.increment() }
        }
        #expect(await eventually { deinits.value == 1 })
        #expect(runs.value == 1)
        #expect(s.token.isCancelled)
    }

    @Test func deadlinesRunCompletingThreadHandlersOffTheWheelsThread() async {
        let onDriver = Counter(), fired = Counter()
        let sources = (0..<50).map { _ in CancelTokenSource(cancellingAfter: .milliseconds(2)) }
        for s in sources {
            s.token.whenCancelled(on: nil) {
                if cf_wheel_on_driver_thread() != 0 { onDriver.increment() }
                fired.increment()
            }
        }
        #expect(await eventually { fired.value == 50 })
        #expect(onDriver.value == 0)
    }
}

@Suite(.serialized) struct WheelMemory {
    @Test func cancelledDeadlinesLeaveTheWheelLongBeforeTheirDeadline() async {
        // Far deadlines, cancelled: the wheel sweeps them once cancels reach
        // max(CF_WHEEL_SWEEP_MIN, entries held), so what it holds falls back
        // to what other tests' timers keep (far below this batch).
        let n = 4 * Int(CF_WHEEL_SWEEP_MIN)
        var sources = (0..<n).map { _ in CancelTokenSource(cancellingAfter: .seconds(3600)) }
        // Far deadlines wait in the inbox until the driver wakes: a near one
        // armed after them wakes it, and it takes them all with it.
        let near = CancelTokenSource(cancellingAfter: .milliseconds(1))
        #expect(await eventually { near.token.isCancelled })
        #expect(await eventually { cf_wheel_debug_held(cf_wheel_shared(CF_CLOCK_CONTINUOUS)) >= n })
        sources.removeAll()
        #expect(await eventually { cf_wheel_debug_held(cf_wheel_shared(CF_CLOCK_CONTINUOUS)) < Int(CF_WHEEL_SWEEP_MIN) })
    }

    @Test func manyDeadlinesExpiringTogetherAllFireNoneEarly() async {
        let n = 100_000
        let fired = Counter(), early = Counter()
        let start = ContinuousClock.now
        let duration = Duration.milliseconds(20)
        var sources: [CancelTokenSource] = []
        sources.reserveCapacity(n)
        for _ in 0..<n {
            let s = CancelTokenSource(cancellingAfter: duration)
            s.token.whenCancelled(on: nil) {
                if ContinuousClock.now - start < duration { early.increment() }
                fired.increment()
            }
            sources.append(s)
        }
        #expect(await eventually { fired.value == n })
        #expect(early.value == 0)
    }
}

/// The timer contract of API.md ("Timers and threads"): a timer's own
/// transition happens on time, whatever handlers do; handlers run where
/// their registration says, user code never on the wheel's thread.
@Suite(.serialized) struct TimerTransitions {
    /// How long a test that holds every thread of the firing pool waits
    /// for anything meanwhile: other tests' timers wait for the pool.
    let holdingPool: Duration = .seconds(10)

    @Test func handlersThatBlockDelayNoTimerAndStartNoThreadPerFiring() {
        // More blocked handlers than Dispatch has threads (255 on Linux):
        // a thread or queue per firing could not cancel the late deadline.
        // Synchronous, the handlers released as soon as it has looked, and
        // its waits short: while they block, the firing pool is theirs, and
        // other tests' timers wait for it (as a user's would).
        let n = 300
        let started = Counter(), finished = Counter()
        let release = DispatchSemaphore(value: 0)
        // Due together once every handler is registered; one that still
        // finds its token cancelled (a slow machine) runs here, and must
        // not block this thread.
        let due = ContinuousClock.now + .milliseconds(200)
        let sources = (0..<n).map { _ in CancelTokenSource(cancellingAfter: max(.zero, due - .now)) }
        for s in sources {
            s.token.whenCancelled(on: .completingThread) {
                started.increment()
                if cf_firing_on_pool_thread() != 0 { release.wait() }
                finished.increment()
            }
        }
        do {
            defer { for _ in 0..<n { release.signal() } }
            #expect(eventually(within: holdingPool) { sources.allSatisfy { $0.token.isCancelled } })
            #expect(eventually(within: holdingPool) { started.value >= 1 })
            // While they block: a new deadline is still cancelled, and its
            // handler on a queue of its own still runs.
            let late = CancelTokenSource(cancellingAfter: .milliseconds(5))
            let ranOnItsQueue = Counter()
            late.token.whenCancelled(on: DispatchQueue(label: "late")) { ranOnItsQueue.increment() }
            #expect(eventually(within: holdingPool) { late.token.isCancelled })
            #expect(eventually(within: holdingPool) { ranOnItsQueue.value == 1 })
            #expect(started.value < n, "the handlers were to be still blocked")
            #expect(cf_firing_debug_started() <= cf_firing_threads())
        }
        #expect(eventually { finished.value == n })
        #expect(cf_firing_debug_started() <= cf_firing_threads())
    }

    @Test func aHandlerWaitingOnThePoolForALaterFiringHandsItsBatchBack() {
        // Every pool thread is held while 300 firings queue up, so that the
        // threads, once free, take them in batches. The first firing's
        // handler waits for what the second's sets: blocking in wait(), it
        // hands the rest of its batch back, and another thread runs the
        // second. (Kept, it would wait for its own batch forever.)
        let threads = Int(cf_firing_threads())
        let holding = Counter(), hold = DispatchSemaphore(value: 0)
        // Handlers that find their token already cancelled (a slow machine)
        // run here, and must not block this thread: they hold nothing.
        let holders = (0..<threads).map { _ in CancelTokenSource(cancellingAfter: .milliseconds(50)) }
        for h in holders {
            h.token.whenCancelled(on: .completingThread) {
                guard cf_firing_on_pool_thread() != 0 else { return }
                holding.increment()
                hold.wait()
            }
        }
        let n = 300
        let second = FutureSource<Int>(), giveUp = CancelTokenSource()
        let got = Locked<Int?>(nil)
        do {
            // Held briefly: other tests' timers wait for the pool meanwhile.
            defer { for _ in 0..<threads { hold.signal() } }
            _ = eventually(within: holdingPool) { holding.value == threads }
            let due = ContinuousClock.now + .milliseconds(100)
            let sources = (0..<n).map { _ in CancelTokenSource(cancellingAfter: max(.zero, due - .now)) }
            sources[0].token.whenCancelled(on: .completingThread) {
                guard cf_firing_on_pool_thread() != 0 else { return got.withLock { $0 = 7 } }   // nothing to show here
                let v = try? second.future.unless(giveUp.token).wait()
                got.withLock { $0 = v }
            }
            sources[1].token.whenCancelled(on: .completingThread) { second.trySetResult(7) }
            for s in sources.dropFirst(2) { s.token.whenCancelled(on: .completingThread) {} }
            _ = eventually(within: holdingPool) { sources.allSatisfy { $0.token.isCancelled } }
            withExtendedLifetime(sources) {}
        }
        let answered = eventually { got.withLock { $0 } != nil }
        giveUp.cancel()
        #expect(answered)
        #expect(got.withLock { $0 } == 7)
        withExtendedLifetime(holders) {}
    }

    @Test func deadlinesOfOneTickFireInTheOrderTheyWereArmed() async {
        // Same duration, armed one after another: many share a tick. The
        // transitions, seen through handlers on one serial queue (which the
        // driver sends them to in firing order), must put those of one tick
        // in the order armed. (Across ticks the order is the ticks' unless
        // the driver is behind: then what comes due meanwhile goes first,
        // and other suites' bursts may run at the same time as this one.)
        let n = 5_000
        let order = Locked<[Int]>([])
        let queue = DispatchQueue(label: "order")
        let sources = (0..<n).map { i in
            let s = CancelTokenSource(cancellingAfter: .milliseconds(15))
            s.token.whenCancelled(on: queue) { order.withLock { $0.append(i) } }
            return s
        }
        #expect(await eventually { order.withLock { $0.count } == n })
        var lastOfTick: [UInt64: Int] = [:]
        var misordered = 0
        for i in order.withLock({ $0 }) {
            let tick = sources[i]._deadline!.dueTick
            if let before = lastOfTick[tick], before > i { misordered += 1 }
            lastOfTick[tick] = i
        }
        #expect(misordered == 0)
        #expect(lastOfTick.count < n, "no two deadlines shared a tick: nothing was checked")
    }

    @Test func aSourceReleasedOnceItsDeadlinePassedLeavesACancelledToken() async throws {
        // Many deadlines due at one instant keep the driver busy; sources
        // released just after that instant, whether or not the driver has
        // fired them yet, have passed: their tokens end cancelled.
        let n = 100_000, released = 300
        let due = ContinuousClock.now + .milliseconds(1_500)
        var sources: [CancelTokenSource] = []
        sources.reserveCapacity(n)
        for _ in 0..<n { sources.append(CancelTokenSource(cancellingAfter: max(.zero, due - .now))) }
        let tokens = sources.suffix(released).map(\.token)
        try await Task.sleep(until: due + .milliseconds(2), clock: .continuous)
        sources.removeLast(released)
        #expect(tokens.allSatisfy { $0.state == .cancelled })
        withExtendedLifetime(sources) {}
    }

    @Test func userCodeNeverRunsOnTheWheelsThread() async throws {
        let onDriver = Counter(), ran = Counter()
        @Sendable func check() {
            if cf_wheel_on_driver_thread() != 0 { onDriver.increment() }
            ran.increment()
        }
        let deadline = CancelTokenSource(cancellingAfter: .milliseconds(1))
        deadline.token.whenCancelled { check() }
        _ = Future.delayed(1, by: .milliseconds(1)).then { _ in check() }
        _ = FutureSource<Int>().future.timeout(.milliseconds(1)).catch { _ in check(); return 0 }
        let tries = Counter()
        _ = Future<Int>.retrying(upTo: 2, delay: .milliseconds(1)) { _ in
            check()
            tries.increment()
            return .failed(TestError())
        }
        _ = Future<Int>.retrying(upTo: 2, baseTimeout: .milliseconds(1)) { _ in
            check()
            return FutureSource<Int>().future
        }
        #expect(await eventually { ran.value == 7 })
        #expect(onDriver.value == 0)
        withExtendedLifetime(deadline) {}
    }
}

@Suite struct ScaledTimeouts {
    @Test func aScaledTimeoutIsExactToTheNanosecond() async {
        #expect(_Delay.scaled(.milliseconds(9), by: 3) == .milliseconds(27))
        #expect(_Delay.scaled(.milliseconds(5), by: 0.7) == .microseconds(3_500))
        #expect(_Delay.scaled(.milliseconds(11), by: 5) == .milliseconds(55))
        #expect(_Delay.nanoseconds(.milliseconds(27)) == 27_000_000)
        // Below a nanosecond: rounded up, never armed short.
        #expect(_Delay.nanoseconds(.nanoseconds(3) + .seconds(1) / 1_000_000_000_000) == 4)
        let out = Future<Int>.retrying(upTo: 2, baseTimeout: .milliseconds(9), backoff: 3) { _ in
            FutureSource<Int>().future
        }
        do {
            _ = try await out.get()
            Issue.record("succeeded")
        } catch {
            #expect((error as? TimeoutError)?.duration == .milliseconds(27))
        }
    }
}
