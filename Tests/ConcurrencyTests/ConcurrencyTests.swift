@_spi(Testing) import CollapsingFutures
import Foundation
import Synchronization
import Testing
import TestSupport

@Suite struct FutureGet {
    @Test func getReturnsTheValueOnceSet() async throws {
        let s = FutureSource<Int>()
        Task { try? await Task.sleep(nanoseconds: 1_000_000); s.trySetResult(7) }
        #expect(try await s.future.get() == 7)
    }

    @Test func getThrowsTheFailure() async {
        await #expect(throws: Boom.self) { try await Future<Int>.failed(Boom()).get() }
    }

    @Test func getOnImmortalThrowsAtOnce() async {
        await #expect(throws: FutureError.immortal) { try await Future<Int>.immortal.get() }
    }

    @Test func getThrowsWhenTheFutureBecomesImmortalWhileWaiting() async {
        var s: FutureSource<Int>? = FutureSource<Int>()
        let f = s!.future
        let waiter = Task { try await f.get() }
        try? await Task.sleep(nanoseconds: 5_000_000)
        s = nil
        _ = s
        await #expect(throws: FutureError.immortal) { try await waiter.value }
    }

    @Test func cancellingTheAwaitingTaskThrowsAndLeavesTheFutureUntouched() async throws {
        let s = FutureSource<Int>()
        let waiter = Task { try await s.future.get() }
        try await Task.sleep(nanoseconds: 5_000_000)
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(s.future.state == .pending)
        #expect(s.future.completionToken._linkedNodeCount <= 1)
        s.trySetResult(1)
        #expect(try await s.future.get() == 1)
    }

    /// Cancelling the awaiting task while `get()` / `cancelled()` registers:
    /// exactly one of the body and the cancellation handler removes the
    /// node (one atomic exchanged by both; a flag stored by one and
    /// `Task.isCancelled` loaded could let both miss, and the task waited
    /// for a future that never completes). Each waiter must end, and leave
    /// nothing registered. A spin of random length before the cancel lands
    /// it before, during or after the waiters register (a cancel made at
    /// once nearly always comes first, which the old code handled too).
    @Test func cancelRacingTheRegistrationAlwaysEndsTheWait() async throws {
        let s = FutureSource<Int>(), t = CancelTokenSource()
        let spin = Atomic<Int>(0)
        for _ in 0..<2_000 {
            let waiter = Task { try await s.future.get() }
            let tokenWaiter = Task { await t.token.cancelled() }
            for _ in 0..<Int.random(in: 0..<3_000) { spin.add(1, ordering: .relaxed) }
            waiter.cancel()
            tokenWaiter.cancel()
            await #expect(throws: CancellationError.self) { try await waiter.value }
            #expect(await tokenWaiter.value == false)
        }
        #expect(s.future.completionToken._liveRegistrationCount == 0)
        #expect(t.token._liveRegistrationCount == 0)
    }
}

@Suite struct FutureFromAsync {
    @Test func asyncClosureResultCompletesTheFuture() async throws {
        let f = Future<Int> { 41 + 1 }
        #expect(try await f.get() == 42)
        let g = Future<Int> { throw Boom() }
        await #expect(throws: Boom.self) { try await g.get() }
    }

    @Test func untilTokenCancelsTheTaskAndFailsWithCancel() async {
        let c = CancelTokenSource()
        let sawCancel = Counter()
        let f = Future<Int>(until: c.token) {
            while !Task.isCancelled { try? await Task.sleep(nanoseconds: 1_000_000) }
            sawCancel.increment()
            return 0
        }
        c.cancel()
        #expect(f.hasFailedWithCancel)
        #expect(await eventually { sawCancel.value == 1 })
    }

    /// The token's handler claims the future before it cancels the task:
    /// the cancel lets the operation return at once, and one that noticed
    /// it and returned must not publish its success first. (The operation spins on `Task.isCancelled` on the other
    /// core to hit that window; a cancellation handler cannot widen it: the
    /// task's status lock, held while handlers run, also stops the
    /// operation from leaving its own handler's scope.)
    @Test func untilTokenWinsOverAnOperationThatReturnsWhenCancelled() async {
        var succeeded = 0
        for _ in 0..<500 {
            let c = CancelTokenSource()
            let started = FutureSource<Void>()
            let f = Future<Int>(until: c.token) {
                started.trySetResult(())
                while !Task.isCancelled { await Task.yield() }
                return 7
            }
            _ = try? await started.future.get()
            c.cancel()
            if !f.hasFailedWithCancel { succeeded += 1 }
        }
        #expect(succeeded == 0)
    }

    @Test func untilAnImmortalTokenJustRunsTheOperation() async throws {
        // `.immortal` has no state word to register on: nothing is registered.
        #expect(try await Future<Int>(until: .immortal) { 7 }.get() == 7)
    }

    @Test func untilRegistrationIsRemovedWhenTheFutureCompletes() async throws {
        let long = CancelTokenSource()
        for _ in 0..<50 { _ = try await Future<Int>(until: long.token) { 1 }.get() }
        #expect(long.token._linkedNodeCount <= 32)
    }
}

@Suite struct TokenCancelledAsync {
    @Test func returnsTrueOnceCancelled() async {
        let s = CancelTokenSource()
        Task { try? await Task.sleep(nanoseconds: 1_000_000); s.cancel() }
        #expect(await s.token.cancelled())
        #expect(await CancelToken.cancelled.cancelled())
    }

    @Test func returnsFalseForImmortal() async {
        #expect(await CancelToken.immortal.cancelled() == false)
        var s: CancelTokenSource? = CancelTokenSource()
        let t = s!.token
        let waiter = Task { await t.cancelled() }
        try? await Task.sleep(nanoseconds: 5_000_000)
        s = nil
        _ = s
        #expect(await waiter.value == false)
    }

    @Test func returnsFalseWhenTheTaskIsCancelledAndRemovesItsHandler() async {
        let s = CancelTokenSource()
        let waiter = Task { await s.token.cancelled() }
        try? await Task.sleep(nanoseconds: 5_000_000)
        waiter.cancel()
        #expect(await waiter.value == false)
        #expect(s.token.canStillBeCancelled)
    }

    /// A `Task(until:)`'s token cancels the task: the token came first, so
    /// a wait for it in that task ends `true`, whenever the cancel lands
    /// (before the task starts, while it registers, or while it waits).
    @Test func aTaskCancelledByTheTokenItAwaitsSeesItCancelled() async throws {
        let spin = Atomic<Int>(0)
        for _ in 0..<1_000 {
            let s = CancelTokenSource()
            let task = Task(until: s.token) { await s.token.cancelled() }
            for _ in 0..<Int.random(in: 0..<3_000) { spin.add(1, ordering: .relaxed) }
            s.cancel()
            #expect(try await task.value)
        }
    }

    /// `withCancelToken`'s token is cancelled by the task's cancellation:
    /// a wait for it (or for an enclosing call's token) in that task ends
    /// `true`, not `false` as a wait for an unrelated token does.
    @Test func cancellingATaskEndsAWaitForItsOwnTokenWithTrue() async {
        let spin = Atomic<Int>(0)
        let unrelated = CancelTokenSource()
        for _ in 0..<1_000 {
            let task = Task {
                await withCancelToken { outer in
                    await withCancelToken { inner in
                        [await inner.cancelled(), await outer.cancelled(), await unrelated.token.cancelled()]
                    }
                }
            }
            for _ in 0..<Int.random(in: 0..<3_000) { spin.add(1, ordering: .relaxed) }
            task.cancel()
            #expect(await task.value == [true, true, false])
        }
        #expect(unrelated.token._liveRegistrationCount == 0)
    }

    /// Another task inherits the task-local that marks the token, but its
    /// cancellation does not cancel the token: its wait ends `false`.
    @Test func anotherTasksCancellationDoesNotCountAsTheTokens() async {
        let (waited, stillCancellable) = await withCancelToken { token in
            let other = Task { await token.cancelled() }
            other.cancel()
            return (await other.value, token.canStillBeCancelled)
        }
        #expect(waited == false)
        #expect(stillCancellable)
    }
}

@Suite struct WithCancelToken {
    @Test func tokenIsCancelledWhenTheTaskIs() async {
        let started = Counter(), ran = Counter()
        let task = Task {
            await withCancelToken { token in
                token.whenCancelled { ran.increment() }
                started.increment()
                while !Task.isCancelled { try? await Task.sleep(nanoseconds: 1_000_000) }
                return token.isCancelled
            }
        }
        #expect(await eventually { started.value == 1 })
        task.cancel()
        #expect(await task.value == true)
        #expect(ran.value == 1)
    }

    @Test func nothingStaysRegisteredAfterReturn() async {
        let deinits = Counter()
        let token = await withCancelToken { token -> CancelToken in
            let obj = Tracked(deinits)
            token.whenCancelled { _ = obj }
            return token
        }
        #expect(deinits.value == 1)
        #expect(token.state == .immortal)
    }
}

@Suite struct TaskUntil {
    @Test func taskIsCancelledWhenTheTokenIs() async {
        let s = CancelTokenSource()
        let task = Task(until: s.token) { () async throws -> Bool in
            while !Task.isCancelled { try? await Task.sleep(nanoseconds: 1_000_000) }
            return true
        }
        s.cancel()
        #expect(try! await task.value)
    }

    /// With a token already cancelled, the task is cancelled before a worker
    /// thread can start the operation.
    @Test func anAlreadyCancelledTokenCancelsTheTaskBeforeTheOperationRuns() async throws {
        var uncancelled = 0
        for _ in 0..<500 {
            let sawCancelled = try await Task(until: .cancelled) { Task.isCancelled }.value
            if !sawCancelled { uncancelled += 1 }
            // Isolated to another actor (which would be enqueued there
            // directly): the same.
            let elsewhere = try await Task(until: .cancelled) { @Elsewhere in Task.isCancelled }.value
            if !elsewhere { uncancelled += 1 }
        }
        #expect(uncancelled == 0)
    }

    @Test func registrationIsRemovedWhenTheTaskEnds() async throws {
        let long = CancelTokenSource()
        for i in 0..<100 { _ = try await Task(until: long.token) { i }.value }
        #expect(long.token._linkedNodeCount <= 32)
    }

    @Test func immortalTokenRetainsNothing() async throws {
        let deinits = Counter()
        var s: CancelTokenSource? = CancelTokenSource()
        let gate = CancelTokenSource()
        let task: Task<Void, any Error>
        do {
            let obj = Tracked(deinits)
            task = Task(until: s!.token) { _ = await gate.token.cancelled(); _ = obj }
        }
        s = nil
        _ = s
        gate.cancel()
        try await task.value
        #expect(await eventually { deinits.value == 1 })
    }
}

@Suite struct AsyncSequenceUntil {
    @Test func iterationEndsWhenTheTokenIsCancelledAndTheProducerTerminates() async {
        let terminated = Counter()
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        continuation.onTermination = { _ in terminated.increment() }
        let s = CancelTokenSource()
        let received = Counter()
        let consumer = Task {
            for await _ in stream.until(s.token) { received.increment() }
        }
        continuation.yield(1)
        #expect(await eventually { received.value == 1 })
        s.cancel()
        await consumer.value
        #expect(await eventually { terminated.value == 1 })
    }

    @Test func alreadyCancelledTokenYieldsNothing() async {
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        continuation.yield(1)
        var n = 0
        for await _ in stream.until(.cancelled) { n += 1 }
        #expect(n == 0)
    }

    @Test func iterationEndingEarlyLeavesNothingRegistered() async {
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        for i in 0..<10 { continuation.yield(i) }
        let s = CancelTokenSource()
        var n = 0
        for await x in stream.until(s.token) {
            n += 1
            if x == 4 { break }
        }
        #expect(n == 5)
        #expect(s.token._linkedNodeCount <= 32)
        #expect(s.token.canStillBeCancelled)
    }

    /// A base sequence that waits with `Task.sleep` throws when the token's
    /// cancel interrupts it: the iteration still ends with `nil`. It says
    /// when it starts waiting (the `until` registration is made before).
    struct Sleeper: AsyncSequence, Sendable {
        let entered: AsyncStream<Void>.Continuation
        struct AsyncIterator: AsyncIteratorProtocol {
            let entered: AsyncStream<Void>.Continuation
            mutating func next() async throws -> Int? {
                entered.yield()
                try await Task.sleep(for: .seconds(3600))
                return 1
            }
        }
        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(entered: entered) }
    }

    @Test func aBaseThatThrowsWhenInterruptedStillEndsTheIteration() async throws {
        let s = CancelTokenSource()
        let (entered, signal) = AsyncStream<Void>.makeStream()
        let consumer = Task { () throws -> Int in
            var n = 0
            for try await _ in Sleeper(entered: signal).until(s.token) { n += 1 }
            return n
        }
        for await _ in entered { break }
        #expect(s.token._liveRegistrationCount == 1)
        s.cancel()
        let n = try await consumer.value
        #expect(n == 0)
        #expect(s.token._liveRegistrationCount == 0)
    }
}

@Suite struct WeakHandlers {
    final class Target: Sendable { let hits = Counter() }

    @Test func weakTokenHandlerRunsWhileTheObjectLives() {
        let s = CancelTokenSource(), t = Target()
        s.token.whenCancelled(weak: t) { $0.hits.increment() }
        s.cancel()
        #expect(t.hits.value == 1)
    }

    @Test func weakTokenHandlerIsSkippedOnceTheObjectIsGoneAndNeverKeepsIt() {
        let s = CancelTokenSource()
        let ran = Counter()
        weak var w: Target?
        do {
            let t = Target()
            w = t
            s.token.whenCancelled(weak: t) { _ in ran.increment() }
        }
        #expect(w == nil)
        s.cancel()
        #expect(ran.value == 0)
    }

    @Test func weakThenDoSkipsAGoneObject() {
        let s = FutureSource<Int>()
        let alive = Target()
        s.future.thenDo(weak: alive) { o, v in if v == 3 { o.hits.increment() } }
        let ran = Counter()
        do {
            let t = Target()
            s.future.thenDo(weak: t) { _, _ in ran.increment() }
        }
        s.trySetResult(3)
        #expect(alive.hits.value == 1)
        #expect(ran.value == 0)
    }

    /// On a long-lived token a weak handler can be removed — by its `unless`
    /// or through the registration it returns — and then holds nothing.
    @Test func weakHandlersTakeUnlessAndCanBeRemoved() {
        let long = CancelTokenSource(), u = CancelTokenSource()
        let ran = Counter()
        weak var w: Target?
        do {
            let t = Target()
            w = t
            long.token.whenCancelled(unless: u.token, weak: t) { _ in ran.increment() }
            long.token.whenCancelled(weak: t) { _ in ran.increment() }.remove()
        }
        #expect(w == nil)
        #expect(long.token._liveRegistrationCount == 1)
        u.cancel()
        #expect(long.token._liveRegistrationCount == 0)
        let s = FutureSource<Int>(), u2 = CancelTokenSource(), alive = Target()
        s.future.thenDo(unless: u2.token, weak: alive) { o, _ in o.hits.increment() }
        u2.cancel()
        #expect(s.future.completionToken._liveRegistrationCount == 0)
        s.trySetResult(1)
        long.cancel()
        #expect(alive.hits.value == 0)
        #expect(ran.value == 0)
    }
}

// The controller/Task/AsyncStream leak in plain Swift concurrency, and the
// same controller bound to a lifetime with CollapsingFutures.

/// Plain Swift: keeps a long-running Task in a property and cancels it in
/// deinit. The Task captures `self`, so deinit never runs.
final class PlainController: @unchecked Sendable {
    let deinits: Counter
    let received = Counter()
    var task: Task<Void, Never>?
    init(events: AsyncStream<Int>, deinits: Counter) {
        self.deinits = deinits
        task = Task { for await e in events { self.handle(e) } }
    }
    func handle(_ e: Int) { received.increment() }
    deinit { task?.cancel(); deinits.increment() }
}

/// CollapsingFutures: the controller owns a source that cancels on deinit;
/// the task is bound to its token and the stream ends with it.
final class Controller: Sendable {
    let deinits: Counter
    let lifetime = CancelTokenSource(cancelOnDeinit: true)
    let received = Counter()
    init(events: AsyncStream<Int>, deinits: Counter) {
        self.deinits = deinits
        let token = lifetime.token
        Task(until: token) { [weak self] in
            for await _ in events.until(token) { self?.received.increment() }
        }
    }
    deinit { deinits.increment() }
}

@Suite struct ControllerLifetime {
    @Test func plainSwiftControllerWithTaskInPropertyLeaks() async {
        let deinits = Counter(), terminated = Counter()
        let (events, producer) = AsyncStream<Int>.makeStream()
        producer.onTermination = { _ in terminated.increment() }
        var c: PlainController? = PlainController(events: events, deinits: deinits)
        let received = c!.received
        producer.yield(1)
        #expect(await eventually { received.value == 1 })
        c = nil
        _ = c
        try? await Task.sleep(nanoseconds: 20_000_000)
        #expect(deinits.value == 0, "the Task keeps the controller alive")
        #expect(terminated.value == 0, "and the producer never learns")
        producer.finish()   // clean up the leak for the rest of the suite
        #expect(await eventually { deinits.value == 1 })
    }

    @Test func controllerBoundToATokenDeinitsCancelsItsTaskAndEndsTheProducer() async {
        let deinits = Counter(), terminated = Counter()
        let (events, producer) = AsyncStream<Int>.makeStream()
        producer.onTermination = { _ in terminated.increment() }
        var c: Controller? = Controller(events: events, deinits: deinits)
        let received = c!.received
        producer.yield(1)
        #expect(await eventually { received.value == 1 })
        c = nil
        _ = c
        #expect(deinits.value == 1)
        #expect(await eventually { terminated.value == 1 })
    }
}
