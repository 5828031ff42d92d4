import CCollapsingFutures
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The executor of the tasks that timers on other clocks sleep in
/// (`_SleepingTimer`): one thread of the library's own, started on first
/// use, which runs their jobs in the order they come. A clock's sleep
/// resumes its task here, and the timer's transition runs here, so nothing
/// on Swift's cooperative pool (which tests and servers may keep busy) can
/// delay it. Like a wheel's driver, the thread hands what a transition
/// would run of user code to the firing pool (`_RunPolicy.hop`): the jobs
/// only sleep and make transitions, and none blocks.
final class _SleepExecutor: TaskExecutor, @unchecked Sendable {
    static let shared = _SleepExecutor()

    private struct Queue {
        /// Jobs from `next` on are still to run (the ones before it are
        /// dropped once they are half the array: amortized O(1) a job).
        var jobs: [UnownedJob] = []
        var next = 0
        var started = false
        var running = false

        mutating func take() -> UnownedJob {
            let job = jobs[next]
            next += 1
            if next * 2 >= jobs.count {
                jobs.removeFirst(next)
                next = 0
            }
            return job
        }
    }
    private let queue = _Locked(Queue())
    /// Posted once per job queued; the thread waits on it.
    private let ready = DispatchSemaphore(value: 0)

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let start = queue.withLock { q in
            q.jobs.append(unowned)
            defer { q.started = true }
            return !q.started
        }
        if start {
            let error = cf_start_thread({ _ in _SleepExecutor.shared.run(); return nil }, nil)
            if error != 0 { cf_thread_start_failed("the thread of timers on other clocks", error) }
        }
        ready.signal()
    }

    private func run() {
        cf_wheel_mark_driver_thread()
        while true {
            ready.wait()
            let job = queue.withLock { q in
                q.running = true
                return q.take()
            }
            job.runSynchronously(on: asUnownedTaskExecutor())
            queue.withLock { $0.running = false }
        }
    }
}

extension _SleepExecutor {
    /// Whether no job is queued or running: every sleep a clock resumed
    /// before this call has ended, and its timer's transition is made.
    var isIdle: Bool { queue.withLock { $0.next == $0.jobs.count && !$0.running } }
}

/// Tests: blocks until the timers on other clocks that a clock's advance
/// woke have made their transitions (their handlers may still be on the
/// firing pool). After `ManualClock.advance`, whose resumptions queue
/// those timers' jobs before it returns, this makes the firing part of
/// the advance, so a single-threaded program replays exactly.
@_spi(Testing) public func _waitForTimersOnOtherClocks() {
    while !_SleepExecutor.shared.isIdle { sched_yield() }
}
