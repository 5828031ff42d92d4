// Timed APIs on any Clock: ContinuousClock and SuspendingClock deadlines on
// the wheel of their own OS clock; any other clock (ManualClock here)
// through its own sleep, so tests advance time instead of waiting for it;
// and CancelToken.deadline.
@_spi(Testing) @testable import CollapsingFutures
import CCollapsingFutures
import Clocks
import CollapsingFuturesTesting
import Foundation
import Testing
import TestSupport

/// An operation that never answers on its own: it fails once its token is
/// cancelled (as a well-behaved operation does).
@Sendable func answersOnlyWhenCancelled(_ token: CancelToken) -> Future<Int> {
    let source = FutureSource<Int>(until: token)
    return source.future
}

@Suite struct TimedAPIsOnAManualClock {
    @Test func retryingWithGrowingTimeoutsTimesOutEachTryAtItsExactInstant() async {
        let clock = ManualClock()
        let tries = Log<ManualClock.Instant>()
        let result = Future<Int>.retrying(upTo: 10, baseTimeout: .seconds(1), backoff: 2, clock: clock) { token in
            tries.append(clock.now)
            return answersOnlyWhenCancelled(token)
        }
        var expectedStart = clock.now
        for i in 0..<10 {
            // Try i's timer is armed just before the try runs, and its sleep
            // may begin first: wait for both.
            await clock.waitUntilSleeping()
            #expect(await eventually { tries.all.count == i + 1 })
            let timeout = Duration.seconds(1 << i)
            #expect(tries.all.count == i + 1 && tries.all[i] == expectedStart)
            #expect(clock.nextDeadline == expectedStart.advanced(by: timeout))
            clock.advance(to: clock.nextDeadline!)
            expectedStart = expectedStart.advanced(by: timeout)
        }
        await #expect(throws: TimeoutError(after: .seconds(512))) { try await result.get() }
        #expect(clock.now == ManualClock.Instant(offset: .seconds(1023)))
        #expect(clock.sleepers == 0)
    }

    @Test func delayedWaitsForTheClockAndGoesWhenCancelled() async {
        let clock = ManualClock()
        let value = Future.delayed(7, by: .seconds(5), clock: clock)
        await clock.waitUntilSleeping()
        clock.advance(by: .seconds(4))
        #expect(value.state == .pending)
        clock.advance(by: .seconds(1))
        #expect((try? await value.get()) == 7)

        let stop = CancelTokenSource()
        let stopped = Future.delayed(7, by: .seconds(5), unless: stop.token, clock: clock)
        await clock.waitUntilSleeping()
        stop.cancel()
        #expect(stopped.hasFailedWithCancel)
        #expect(await eventually { clock.sleepers == 0 })
        #expect(stop.token._liveRegistrationCount == 0)
    }

    @Test func bothTimeoutFormsAndTimeoutFireAtTheirInstant() async {
        let clock = ManualClock()
        let unlessStyle = Future<Int>.withTimeout(.seconds(3), clock: clock, answersOnlyWhenCancelled)
        let until = CancelTokenSource()
        let untilStyle = Future<Int>.withTimeout(.seconds(3), until: until.token, clock: clock, answersOnlyWhenCancelled)
        let pending = FutureSource<Int>()
        let waited = pending.future.timeout(.seconds(3), clock: clock)
        await clock.waitUntilSleeping(3)
        #expect(clock.nextDeadline == ManualClock.Instant(offset: .seconds(3)))
        clock.advance(by: .seconds(2))
        #expect(unlessStyle.state == .pending && untilStyle.state == .pending && waited.state == .pending)
        clock.advance(by: .seconds(1))
        for f in [unlessStyle, untilStyle, waited] {
            await #expect(throws: TimeoutError(after: .seconds(3))) { try await f.get() }
        }
        #expect(pending.future.completionToken._liveRegistrationCount == 0)
        #expect(until.token._liveRegistrationCount == 0)
    }

    @Test func timeoutsCancelledMidWaitLeaveNoSleepNorRegistration() async {
        let clock = ManualClock()
        let stop = CancelTokenSource()
        let pending = FutureSource<Int>()
        let unlessStyle = Future<Int>.withTimeout(.seconds(3), unless: stop.token, clock: clock, answersOnlyWhenCancelled)
        let untilStyle = Future<Int>.withTimeout(.seconds(3), until: stop.token, clock: clock, answersOnlyWhenCancelled)
        let waited = pending.future.timeout(.seconds(3), unless: stop.token, clock: clock)
        let retried = Future<Int>.retrying(upTo: 3, delay: .seconds(1), until: stop.token, clock: clock) { _ in .failed(Boom()) }
        let timedRetries = Future<Int>.retrying(upTo: 3, baseTimeout: .seconds(1), until: stop.token, clock: clock,
                                                answersOnlyWhenCancelled)
        let source = CancelTokenSource(cancellingAfter: .seconds(3), clock: clock)
        await clock.waitUntilSleeping(6)
        stop.cancel()
        source.cancel()
        for f in [unlessStyle, untilStyle, waited, retried, timedRetries] { #expect(f.hasFailedWithCancel) }
        #expect(await eventually { clock.sleepers == 0 })
        #expect(stop.token._liveRegistrationCount == 0)
        #expect(pending.future.completionToken._liveRegistrationCount == 0)
    }

    @Test func retryingWithDelaysWaitsEachDelayOnTheClock() async {
        let clock = ManualClock()
        let tries = Log<ManualClock.Instant>()
        let result = Future<Int>.retrying(upTo: 4, delay: .seconds(1), backoff: 3, clock: clock) { _ in
            tries.append(clock.now)
            return .failed(Boom())
        }
        for wait in [1, 3, 9] {
            await clock.waitUntilSleeping()
            #expect(clock.nextDeadline == clock.now.advanced(by: .seconds(wait)))
            clock.advance(by: .seconds(wait))
        }
        await #expect(throws: Boom()) { try await result.get() }
        #expect(tries.all.map(\.offset) == [.zero, .seconds(1), .seconds(4), .seconds(13)])
    }

    @Test func aDeadlineSourceOnAManualClock() async {
        let clock = ManualClock()
        let source = CancelTokenSource(cancellingAfter: .seconds(10), clock: clock)
        let at = CancelTokenSource(cancellingAt: ManualClock.Instant(offset: .seconds(20)), clock: clock)
        await clock.waitUntilSleeping(2)
        clock.advance(by: .seconds(10))
        #expect(await eventually { source.token.isCancelled })
        #expect(!at.token.isCancelled)
        at.cancel()
        #expect(await eventually { clock.sleepers == 0 })

        // Released once the clock passed its deadline: cancelled, whether or
        // not its sleep has ended yet.
        var late: CancelTokenSource? = CancelTokenSource(cancellingAfter: .seconds(1), clock: clock)
        let token = late!.token
        clock.advance(by: .seconds(1))
        late = nil
        #expect(token.isCancelled)
        // Released before: immortal, and its sleep goes.
        var early: CancelTokenSource? = CancelTokenSource(cancellingAfter: .seconds(1), clock: clock)
        let earlyToken = early!.token
        await clock.waitUntilSleeping()
        early = nil
        #expect(earlyToken.state == .immortal)
        #expect(await eventually { clock.sleepers == 0 })
        _ = late
    }
}

/// Any other clock works the same: swift-clocks' TestClock.
@Suite struct SwiftClocksTestClock {
    @Test func aTestClockDrivesTimeoutsAndDelays() async {
        let clock = TestClock()
        let value = Future.delayed(1, by: .seconds(5), clock: clock)
        let timed = Future<Int>.withTimeout(.seconds(10), clock: clock, answersOnlyWhenCancelled)
        await clock.advance(by: .seconds(5))
        #expect((try? await value.get()) == 1)
        #expect(timed.state == .pending)
        await clock.advance(by: .seconds(5))
        await #expect(throws: TimeoutError(after: .seconds(10))) { try await timed.get() }

        let stop = CancelTokenSource()
        let stopped = Future.delayed(1, by: .seconds(5), unless: stop.token, clock: clock)
        stop.cancel()
        #expect(stopped.hasFailedWithCancel)
        await clock.run()   // nothing left to wait for: returns at once
    }
}

@Suite struct OSClocks {
    /// Each wheel reads its own OS clock: a deadline's reading lies
    /// between that clock's readings around the arm, plus the duration.
    /// (Without a suspend since boot the two OS clocks agree; on a machine
    /// that has slept they part, and only the right clock brackets it.)
    @Test func eachWheelReadsTheOSClockOfItsSwiftClock() {
        func reading(_ id: clockid_t) -> UInt64 {
            var ts = timespec()
            clock_gettime(id, &ts)
            return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
        }
        let hour: UInt64 = 3_600_000_000_000
        for (clockID, make) in [(CLOCK_BOOTTIME, { CancelTokenSource(cancellingAfter: .seconds(3600)) }),
                                (CLOCK_MONOTONIC, { CancelTokenSource(cancellingAfter: .seconds(3600), clock: SuspendingClock()) })] {
            let before = reading(clockID)
            let source = make()
            let after = reading(clockID)
            let due = (source._storage as! _DeadlineStorage).dueClockNanoseconds
            #expect(before + hour <= due && due <= after + hour)
        }
        let before = reading(CLOCK_BOOTTIME)
        let continuous = cf_clock_now_ns(CF_CLOCK_CONTINUOUS)
        let after = reading(CLOCK_BOOTTIME)
        #expect(before <= continuous && continuous <= after)
    }
}

@Suite struct TokenDeadlines {
    @Test func aDeadlineSourcesTokenKnowsItsDeadline() {
        let start = ContinuousClock.now
        let source = CancelTokenSource(cancellingAfter: .seconds(60))
        let end = ContinuousClock.now
        let deadline = source.token.deadline!
        #expect(start.advanced(by: .seconds(60)) <= deadline + .microseconds(1))
        #expect(deadline <= end.advanced(by: .seconds(60)) + .microseconds(1))
        #expect(source.token.deadline == deadline)   // the same every time
        #expect(CancelTokenSource().token.deadline == nil)
        #expect(CancelToken.immortal.deadline == nil && CancelToken.cancelled.deadline == nil)
        #expect(FutureSource<Int>().future.completionToken.deadline == nil)
    }

    @Test func anyTakesTheEarliestAllTheLatestWhenEveryInputHasOne() {
        let soon = CancelTokenSource(cancellingAfter: .seconds(10))
        let later = CancelTokenSource(cancellingAfter: .seconds(20))
        let plain = CancelTokenSource()
        let a = soon.token.deadline!, b = later.token.deadline!
        #expect(CancelToken.any(soon.token, later.token).deadline == a)
        #expect(CancelToken.any(plain.token, later.token).deadline == b)
        #expect(CancelToken.all(soon.token, later.token).deadline == b)
        #expect(CancelToken.all(soon.token, plain.token).deadline == nil)
        #expect(CancelToken.any(plain.token, CancelTokenSource().token).deadline == nil)
        // Nested.
        let nested = CancelToken.all(CancelToken.any(soon.token, plain.token), later.token)
        #expect(nested.deadline == b)
        #expect(CancelToken.any(CancelToken.all(soon.token, later.token), plain.token).deadline == b)
    }

    @Test func aCancelledSourceKeepsItsDeadlineAnImmortalOneHasNone() {
        let cancelled = CancelTokenSource(cancellingAfter: .seconds(10))
        let d = cancelled.token.deadline
        cancelled.cancel()
        #expect(cancelled.token.deadline == d)
        var released: CancelTokenSource? = CancelTokenSource(cancellingAfter: .seconds(10))
        let token = released!.token
        released = nil
        #expect(token.state == .immortal && token.deadline == nil)
        _ = released
    }

    @Test func otherClocksDeadlinesAreOnTheContinuousClock() {
        let clock = ManualClock()
        let start = ContinuousClock.now
        let source = CancelTokenSource(cancellingAfter: .seconds(30), clock: clock)
        let end = ContinuousClock.now
        let d = source.token.deadline!
        #expect(start.advanced(by: .seconds(30)) <= d && d <= end.advanced(by: .seconds(30)))
        let suspending = CancelTokenSource(cancellingAfter: .seconds(30), clock: SuspendingClock())
        #expect(suspending.token.deadline! > d)
    }
}
