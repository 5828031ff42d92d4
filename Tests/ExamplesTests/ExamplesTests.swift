import ExampleKit
import Foundation
import Testing

@Suite struct Examples {
    @Test func addressBookWrapsBothCallbackPaths() async {
        #expect(await Example.addressBook.run() == ["granted: Ada, Alan", "denied: AccessDenied"])
    }

    @Test func pipelineRunsItsStepsAndStopsWhenTheConnectionDrops() async {
        #expect(await Example.pipeline.run() == [
            "connect done", "handshake done", "fetch done", "fetched 42",
            "connect done", "connection dropped: cancelled",
        ])
    }

    @Test func retryGrowsTimeoutsUntilTheThirdAttemptSucceeds() async {
        #expect(await Example.retry.run() == ["attempt 1", "attempt 2", "attempt 3", "result: payload"])
    }

    @Test func retryFailuresTriesAFlakyCallUntilItAnswers() async {
        #expect(await Example.retryFailures.run() == [
            "try 1", "try 2", "try 3", "result: payload", "gave up: ServiceUnavailable",
        ])
    }

    @Test func raceTakesTheFastMirrorAndCancelsTheSlowOne() async {
        #expect(await Example.race.run() == ["winner: fast mirror", "slow mirror cancelled: true"])
    }

    @Test func mainActorViewModelNeedsNoAssumptionsAndDeinits() async {
        #expect(await Example.viewModel.run() == [
            "title: Ada, status: online", "view model deinit", "task ended: CancellationError",
        ])
    }

    #if NIO
    @Test func nioBridgesNeverHangAndAHandlerAnswersWithAFuture() async {
        #expect(await nioBridgeExample() == [
            "nio got: from the library", "orphan failed with FutureError.immortal: true",
            "library got: from the loop", "handler replied: ADA",
        ])
    }
    #endif

    @Test func controllerEndsItsTaskAndStreamWhenDropped() async {
        let lines = await Example.controller.run()
        #expect(lines.first == "event 1")
        #expect(lines.contains("controller deinit"))
        #expect(lines.contains("task ended"))
        #expect(lines.last == "producer terminated: true")
    }

    /// Main-thread stickiness needs a real main thread, so this runs the
    /// built `Examples` executable (next to this test binary) as a process.
    @Test func handlerRegisteredOnTheMainThreadRunsOnTheMainQueue() throws {
        let (status, lines, _) = try runExamples("main-queue")
        #expect(status == 0)
        #expect(lines == ["== main-queue", "registered on main thread: true", "handler ran on main thread: true"])
    }

    /// Combinators, `unless` and `Task(until:)` made on a main thread that
    /// then blocks still complete: their bookkeeping never hops to the main queue.
    @Test func bookkeepingCompletesWhileTheMainThreadIsBlocked() throws {
        let (status, lines, _) = try runExamples("blocked-main")
        #expect(status == 0)
        #expect(lines == [
            "== blocked-main", "on main thread: true",
            "all: Future(succeeded: [1, 2])", "allSettled: completed",
            "race: Future(succeeded: 2)", "unless: Future(succeeded: 2)",
            "retrying: Future(succeeded: 2)", "orderedByCompletion: Future(succeeded: [2, 1])",
            "task cancelled: true", "reply: pong",
        ])
    }

    /// The client pattern: retries registered on the main thread run on the
    /// main queue, which `wait()` runs while the main thread waits.
    @Test func aClientWaitingWithWaitOnTheMainThreadCompletes() throws {
        let (status, lines, _) = try runExamples("client-wait")
        #expect(status == 0)
        #expect(lines == ["== client-wait", "on main thread: true", "replies: 200, first: reply 0, last: reply 199",
                          "dispatched to main: 5", "waited inside a handler: 3"])
    }

    /// The same client blocking on a semaphore of its own cannot complete;
    /// a debug build says why on standard error instead of hanging silently.
    @Test func aClientBlockingTheMainThreadIsToldWhy() throws {
        let (status, lines, errors) = try runExamples("client-semaphore")
        #expect(status == 0)
        #expect(lines == ["== client-semaphore", "on main thread: true", "completed: false"])
        #expect(errors.contains { $0.contains("bound for the main queue have waited over a second: is the main thread blocked") },
                "stderr: \(errors)")
        #expect(errors.contains { $0.contains("future.wait()") })
    }

    /// A handler that waits for what only a later sibling does is told why
    /// it does not return (in release builds too), instead of hanging
    /// silently; here another thread ends the wait.
    @Test func waitingInAHandlerForALaterSiblingIsExplained() throws {
        let (status, lines, errors) = try runExamples("wait-in-handler")
        #expect(status == 0)
        #expect(lines == ["== wait-in-handler", "gave up: CancellationError", "reply, set by the later sibling: Future(succeeded: 1)"])
        #expect(errors.contains { $0.contains("Future.wait() has blocked for a second inside a handler or continuation while 1 callback(s) queued behind it") },
                "stderr: \(errors)")
    }

    /// Handlers a timer started that all wait, holding every thread of the
    /// firing pool while others wait for one, are told why (in release
    /// builds too), instead of hanging silently; here another thread ends
    /// the waits.
    @Test func waitingOnTheTimersFiringPoolIsExplained() throws {
        let (status, lines, errors) = try runExamples("wait-on-timer-pool")
        #expect(status == 0)
        #expect(lines == ["== wait-on-timer-pool", "handlers that gave up: 200 of 200"])
        #expect(errors.contains { $0.contains("Future.wait() has blocked a thread of the timers' firing pool for a second") },
                "stderr: \(errors)")
    }

    /// The main thread waiting for work that runs on the main actor cannot
    /// see it complete; a debug build says why on standard error instead of
    /// hanging silently. Here another thread ends the wait.
    @Test func waitingOnTheMainThreadForMainActorWorkIsExplained() throws {
        let (status, lines, errors) = try runExamples("wait-for-main-actor")
        #expect(status == 0)
        #expect(lines == ["== wait-for-main-actor", "gave up: CancellationError"])
        #if DEBUG
        #expect(errors.contains { $0.contains("Future.wait() has blocked the main thread for a second") },
                "stderr: \(errors)")
        #endif
    }

    /// Misuse stops the process with a message naming the function and the argument.
    @Test(arguments: [
        ("backoff-nan", "Future.retrying(upTo:baseTimeout:backoff:until:_:): backoff must be finite and not negative (got nan)"),
        ("negative-delay", "Future.delayed(_:by:unless:): delay must not be negative (got -1.0 seconds)"),
        ("force-get-pending", "Future.forceGetResult() requires a future that succeeded, but this one is immortal"),
        // Debug builds say where the source that died unset was created.
        ("force-get-pending", "(its FutureSource, created at ExampleKit/Examples.swift:"),
        ("retry-negative-delay", "Future.retrying(upTo:delay:backoff:until:shouldRetry:_:): delay must not be negative (got -1.0 seconds)"),
    ])
    func misuseIsExplained(_ misuse: String, _ message: String) throws {
        let (status, _, lines) = try runExamples("misuse", misuse)
        #expect(status != 0)
        #expect(lines.contains { $0.contains(message) }, "stderr: \(lines)")
    }
}

/// Runs the built `Examples` executable (next to this test binary); returns
/// its exit status and its standard output and standard error lines.
func runExamples(_ arguments: String...) throws -> (status: Int32, lines: [String], errors: [String]) {
    let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let p = Process()
    p.executableURL = dir.appendingPathComponent("Examples")
    p.arguments = arguments
    var env = ProcessInfo.processInfo.environment
    env["SWIFT_BACKTRACE"] = "enable=no"
    p.environment = env
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    try p.run()
    // A hang is a failure, not a stuck suite: stopped after a minute (the
    // examples end in seconds), it exits with a signal status.
    DispatchQueue.global().asyncAfter(deadline: .now() + 60) { if p.isRunning { p.terminate() } }
    // Standard error is read on another thread, so that neither pipe fills
    // while the other is read; the semaphore orders its write before the read.
    nonisolated(unsafe) var errors = Data()
    let errorsRead = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        errors = err.fileHandleForReading.readDataToEndOfFile()
        errorsRead.signal()
    }
    let output = out.fileHandleForReading.readDataToEndOfFile()
    errorsRead.wait()
    p.waitUntilExit()
    func lines(_ data: Data) -> [String] { String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init) }
    return (p.terminationStatus, lines(output), lines(errors))
}
