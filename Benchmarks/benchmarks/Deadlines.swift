// Deadlines: timeouts and deadline sources against the peers that do the
// same job. nio: a promise with `scheduleTask` and its cancel, run on the
// promise's own loop (a binary heap, no wake-up); Swift concurrency: a task
// group racing the operation with `Task.sleep`; Dispatch: a bare
// `DispatchSourceTimer` created, scheduled, activated and cancelled.
import BenchKit
import CollapsingFutures
import Dispatch
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// nio's loop for the timer scenarios (its own, so that no other
/// scenario's work sits in its heap).
let timerGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let timerLoop = timerGroup.next()

/// The timeout every scenario arms: long enough never to fire while measured.
let benchTimeout: Duration = .seconds(30)

struct BenchTimeoutError: Error {}

/// nio's timeout around an operation that answers at once, on its loop:
/// promise, `scheduleTask`, the task cancelled when the promise completes,
/// then `extraMaps` maps (the request shape), then the answer.
func nioTimeoutAnswered(extraMaps: Int) -> Body {
    { it in
        try! timerLoop.submit {
            for i in 0..<it {
                let p = timerLoop.makePromise(of: Int.self)
                let task = timerLoop.scheduleTask(in: .seconds(30)) { p.fail(BenchTimeoutError()) }
                var f = p.futureResult
                f.whenComplete { _ in task.cancel() }
                for _ in 0..<extraMaps { f = f.map { $0 + 1 } }
                f.whenSuccess { _ in }
                p.succeed(i)
            }
        }.wait()
    }
}

/// Ours: `withTimeout` around a pending future, then `thens` thens, then set.
func lockfreeTimeoutAnswered(thens: Int) -> Body {
    { it in
        for i in 0..<it {
            let s = FutureSource<Int>()
            var f = Future<Int>.withTimeout(benchTimeout) { _ in s.future }
            for _ in 0..<thens { f = f.then { $0 + 1 } }
            s.trySetResult(i)
            precondition(f.hasResult)
        }
    }
}

func lockfreeFutureTimeout(_ it: Int) {
    for i in 0..<it {
        let s = FutureSource<Int>()
        let f = s.future.timeout(benchTimeout)
        s.trySetResult(i)
        precondition(f.hasResult)
    }
}

func taskGroupTimeout(_ it: Int) {
    blockingAsync {
        for i in 0..<it {
            let v = try! await withThrowingTaskGroup(of: Int.self) { g in
                g.addTask { i }
                g.addTask { try await Task.sleep(for: benchTimeout); throw BenchTimeoutError() }
                let first = try await g.next()!
                g.cancelAll()
                return first
            }
            precondition(v == i)
        }
    }
}

func deadlineSourceCreated(_ it: Int) {
    for _ in 0..<it { _ = CancelTokenSource(cancellingAfter: benchTimeout) }
}

let dispatchTimerQueue = DispatchQueue(label: "bench.timers")
func dispatchTimerCreated(_ it: Int) {
    for _ in 0..<it {
        let t = DispatchSource.makeTimerSource(queue: dispatchTimerQueue)
        t.schedule(deadline: .now() + .seconds(30))
        t.setEventHandler {}
        t.activate()
        t.cancel()
    }
}

func nioScheduleCancelled(_ it: Int) {
    try! timerLoop.submit {
        for _ in 0..<it { timerLoop.scheduleTask(in: .seconds(30)) {}.cancel() }
    }.wait()
}

/// Deadlines kept pending (an hour away) while a scenario measures, so its
/// cost can be compared at different wheel sizes.
final class PendingDeadlines: @unchecked Sendable {
    private var held: [CancelTokenSource] = []
    func fill(_ n: Int) {
        if held.count > n { held.removeLast(held.count - n) }
        while held.count < n { held.append(CancelTokenSource(cancellingAfter: .seconds(3600))) }
    }
}
let pendingDeadlines = PendingDeadlines()

func deadlineScenarios(quick: Bool) -> [Scenario] {
    let busy = quick ? 100_000 : 1_000_000
    return [
        Scenario(name: "timeout, answered at once",
                 summary: "withTimeout(30 s) around a pending future that is then set; nio-loop: promise + scheduleTask, cancelled on completion, on its loop; swift-concurrency: task-group race with Task.sleep",
                 opsPerIteration: 1, iterations: 200_000,
                 bodies: ["lockfree": lockfreeTimeoutAnswered(thens: 0), "nio-loop": nioTimeoutAnswered(extraMaps: 0),
                          "swift-concurrency": taskGroupTimeout]),
        Scenario(name: "timeout(_:) on a pending future",
                 summary: "future.timeout(30 s), then the future set; nio-loop and swift-concurrency as above",
                 opsPerIteration: 1, iterations: 200_000,
                 bodies: ["lockfree": lockfreeFutureTimeout, "nio-loop": nioTimeoutAnswered(extraMaps: 0),
                          "swift-concurrency": taskGroupTimeout]),
        Scenario(name: "deadline source created+released",
                 summary: "CancelTokenSource(cancellingAfter: 30 s) created and released; dispatch-timer: makeTimerSource + schedule + activate + cancel; nio-loop: scheduleTask + cancel on its loop",
                 opsPerIteration: 1, iterations: 200_000,
                 bodies: ["lockfree": deadlineSourceCreated, "dispatch-timer": dispatchTimerCreated,
                          "nio-loop": nioScheduleCancelled]),
        Scenario(name: "request: timeout + 3 thens",
                 summary: "withTimeout(30 s) around a pending future, three thens, then set; nio-loop: promise + scheduleTask + three maps, on its loop",
                 opsPerIteration: 1, iterations: 200_000,
                 bodies: ["lockfree": lockfreeTimeoutAnswered(thens: 3), "nio-loop": nioTimeoutAnswered(extraMaps: 3)]),
        Scenario(name: "deadline source, 1,000 pending",
                 summary: "a deadline source created and released while 1,000 other deadlines are pending",
                 opsPerIteration: 1, iterations: 200_000,
                 bodies: ["lockfree": { it in pendingDeadlines.fill(1_000); deadlineSourceCreated(it) }]),
        Scenario(name: "deadline source, \(busy.formatted()) pending",
                 summary: "a deadline source created and released while \(busy.formatted()) other deadlines are pending (flat: the same as at 1,000)",
                 opsPerIteration: 1, iterations: 200_000,
                 bodies: ["lockfree": { it in pendingDeadlines.fill(busy); deadlineSourceCreated(it) }]),
    ]
}

/// `n` deadlines due at the same instant: how fast they fire, and how late.
struct BurstFigures {
    let deadlines: Int
    let firedPerSecond: Double
    let lateMedianMs: Double, lateP99Ms: Double, lateMaxMs: Double
    let early: Int

    var summary: String {
        let rate = String(format: "%.0f", firedPerSecond)
        let late = [lateMedianMs, lateP99Ms, lateMaxMs].map { String(format: "%.2f", $0) }
        return "\(deadlines) deadline sources due at one instant, a handler each (lockfree): \(rate) fired per second; "
            + "late by \(late[0]) ms median, \(late[1]) ms p99, \(late[2]) ms at most; \(early) early"
    }
}

func deadlineBurst(_ n: Int) -> BurstFigures {
    let lateness = UnsafeMutableBufferPointer<Int64>.allocate(capacity: n)
    defer { lateness.deallocate() }
    let index = Atomic<Int>(0)
    let done = DispatchSemaphore(value: 0)
    // Long enough to create every source first (about 2 us each, twice
    // over): each deadline must still lie ahead when it is armed.
    let lead: Duration = .milliseconds(500) + .nanoseconds(Int64(n) * 4_000)
    let clock = ContinuousClock()
    let due = clock.now + lead
    let slots = UnsafeSendableBuffer(buffer: lateness)
    var sources: [CancelTokenSource] = []
    sources.reserveCapacity(n)
    for _ in 0..<n {
        // Each deadline counts from its own creation, so `due` is its
        // earliest allowed firing give or take the time to create it.
        let created = clock.now
        precondition(created < due, "the burst's lead is too short to create \(n) deadline sources")
        let s = CancelTokenSource(cancellingAfter: due - created)
        // On the firing thread: the benchmark's main thread is blocked below.
        s.token.whenCancelled(on: .completingThread) {
            let late = clock.now - due
            let i = index.add(1, ordering: .relaxed).newValue - 1
            let (sec, atto) = late.components
            slots.buffer[i] = sec * 1_000_000_000 + atto / 1_000_000_000
            if i == n - 1 { done.signal() }
        }
        sources.append(s)
    }
    done.wait()
    let fired = clock.now
    let sorted = lateness.sorted()
    let span = fired - due
    let seconds = Double(span.components.seconds) + Double(span.components.attoseconds) / 1e18
    return BurstFigures(deadlines: n, firedPerSecond: Double(n) / max(seconds, 1e-9),
                        lateMedianMs: Double(sorted[n / 2]) / 1e6, lateP99Ms: Double(sorted[n * 99 / 100]) / 1e6,
                        lateMaxMs: Double(sorted[n - 1]) / 1e6, early: sorted.filter { $0 < 0 }.count)
}

struct UnsafeSendableBuffer: @unchecked Sendable { let buffer: UnsafeMutableBufferPointer<Int64> }
