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

    @Test func deadlinesFireOffTheWheelsThreadOnQueuesOfTheirOwn() async {
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
        #expect(await eventually { cf_wheel_debug_held() >= n })
        sources.removeAll()
        #expect(await eventually { cf_wheel_debug_held() < Int(CF_WHEEL_SWEEP_MIN) })
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
