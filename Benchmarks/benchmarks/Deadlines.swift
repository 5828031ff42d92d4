// Deadlines: timeouts and deadline sources against the peers that do the
// same job. nio: a promise with `scheduleTask` and its cancel, run on the
// promise's own loop (a binary heap, no wake-up); Swift concurrency: a task
// group racing the operation with `Task.sleep`; Dispatch: a bare
// `DispatchSourceTimer` created, scheduled, activated and cancelled.
import BenchKit
import CBenchSupport
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

/// Ours: `withTimeout` whose operation returns a completed future (a cache hit).
func lockfreeTimeoutCompleted(_ it: Int) {
    for i in 0..<it {
        let f = Future<Int>.withTimeout(benchTimeout) { _ in .succeeded(i) }
        precondition(f.hasResult)
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
        Scenario(name: "timeout, operation already complete",
                 summary: "withTimeout(30 s) whose operation returns a completed future (a cache hit); nio-loop and swift-concurrency as above (their result is there at once)",
                 opsPerIteration: 1, iterations: 200_000,
                 bodies: ["lockfree": lockfreeTimeoutCompleted, "nio-loop": nioTimeoutAnswered(extraMaps: 0),
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
                          "nio-loop": nioScheduleCancelled, "c-floor": { it in cfb_deadline_arm_cancel(it) }]),
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

/// `n` deadlines due at the same instant: how fast they fire, and how
/// late; a deadline armed while they fire (the probe); the process's
/// threads at their peak.
struct BurstFigures {
    let deadlines: Int
    /// How long each handler blocks (the firing pool's threads with it).
    let blocking: Duration
    /// Handlers run per second from the due instant to the last; nil when
    /// handlers block (the run stops them once the probe is in).
    let firedPerSecond: Double?
    let lateMedianMs: Double, lateP99Ms: Double, lateMaxMs: Double
    let early: Int
    /// The probe (20 ms, armed 5 ms into the burst): how late its token was
    /// seen cancelled, and how late its handler ran on a queue of its own.
    let probeCancelLateMs: Double, probeHandlerLateMs: Double
    let peakThreads: Int

    var summary: String {
        func ms(_ x: Double) -> String { String(format: "%.2f ms", x) }
        var parts = ["\(deadlines.formatted()) deadline sources due at one instant, a handler each on the firing thread"
                     + (blocking > .zero ? " that blocks for \(blocking)" : "") + " (lockfree)"]
        if let rate = firedPerSecond {
            parts.append("\(String(format: "%.0f", rate)) fired per second")
            parts.append("handlers late by \(ms(lateMedianMs)) median, \(ms(lateP99Ms)) p99, \(ms(lateMaxMs)) at most; \(early) early")
        }
        parts.append("a 20 ms deadline armed during it: cancelled \(ms(probeCancelLateMs)) late, its handler on its own queue \(ms(probeHandlerLateMs)) late")
        parts.append("peak threads of the process \(peakThreads) (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
        return parts.joined(separator: "; ")
    }
}

/// Threads of this process now (Linux: /proc/self/task; elsewhere 0).
func processThreads() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
}

func milliseconds(_ d: Duration) -> Double {
    Double(d.components.seconds) * 1e3 + Double(d.components.attoseconds) / 1e15
}

func deadlineBurst(_ n: Int, blocking: Duration = .zero) -> BurstFigures {
    let lateness = UnsafeMutableBufferPointer<Int64>.allocate(capacity: n)
    defer { lateness.deallocate() }
    let index = Atomic<Int>(0)
    let stopBlocking = Atomic<Bool>(false)
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
        // On the firing thread: the firing pool's.
        s.token.whenCancelled(on: .completingThread) {
            let late = clock.now - due
            let i = index.add(1, ordering: .relaxed).newValue - 1
            let (sec, atto) = late.components
            slots.buffer[i] = sec * 1_000_000_000 + atto / 1_000_000_000
            if blocking > .zero && !stopBlocking.load(ordering: .relaxed) { Thread.sleep(forTimeInterval: milliseconds(blocking) / 1e3) }
            if i == n - 1 { done.signal() }
        }
        sources.append(s)
    }
    // The probe, 5 ms into the burst.
    var peak = processThreads()
    while clock.now < due + .milliseconds(5) { usleep(500) }
    let probeWait = Duration.milliseconds(20)
    let probeDue = clock.now + probeWait
    let probe = CancelTokenSource(cancellingAfter: probeWait)
    let probeRan = DispatchSemaphore(value: 0)
    let probeHandlerLate = Atomic<Int64>(0)
    probe.token.whenCancelled(on: DispatchQueue(label: "bench.probe")) {
        let (sec, atto) = (clock.now - probeDue).components
        probeHandlerLate.store(sec * 1_000_000_000 + atto / 1_000_000_000, ordering: .relaxed)
        probeRan.signal()
    }
    while !probe.token.isCancelled {
        usleep(200)
        peak = max(peak, processThreads())
    }
    let probeCancelLate = clock.now - probeDue
    probeRan.wait()
    if blocking > .zero {
        // Handlers keep blocking for a while: the threads at their peak.
        let until = clock.now + .milliseconds(500)
        while clock.now < until { usleep(1_000); peak = max(peak, processThreads()) }
        stopBlocking.store(true, ordering: .relaxed)
    }
    done.wait()
    let fired = clock.now
    peak = max(peak, processThreads())
    let sorted = lateness.sorted()
    let span = fired - due
    return BurstFigures(deadlines: n, blocking: blocking,
                        firedPerSecond: blocking > .zero ? nil : Double(n) / max(milliseconds(span) / 1e3, 1e-9),
                        lateMedianMs: Double(sorted[n / 2]) / 1e6, lateP99Ms: Double(sorted[n * 99 / 100]) / 1e6,
                        lateMaxMs: Double(sorted[n - 1]) / 1e6, early: sorted.filter { $0 < 0 }.count,
                        probeCancelLateMs: milliseconds(probeCancelLate),
                        probeHandlerLateMs: Double(probeHandlerLate.load(ordering: .relaxed)) / 1e6,
                        peakThreads: peak)
}

struct UnsafeSendableBuffer: @unchecked Sendable { let buffer: UnsafeMutableBufferPointer<Int64> }
