import CollapsingFutures
import Testing
import TestSupport

/// A main-actor view model: the closures below only compile because
/// `Task(until:)`, `Future { }` and `Future(until:) { }` inherit the main
/// actor, as `Task.init` does; `[weak self]` keeps them from retaining it.
@MainActor final class TitleModel {
    var title = ""
    var isolatedRuns = 0
    let lifetime = CancelTokenSource()
    let deinits: Counter
    init(_ deinits: Counter) { self.deinits = deinits }
    deinit { deinits.increment() }

    func show(_ value: Future<String>) -> Task<Void, any Error> {
        Task(until: lifetime.token) { [weak self] in
            let v = try await value.get()
            self?.title = v
            if #isolation === MainActor.shared { self?.isolatedRuns += 1 }
        }
    }

    func load() -> Future<Int> {
        Future { [weak self] in
            self?.title = "loaded"
            return #isolation === MainActor.shared ? 1 : 0
        }
    }

    /// An async `then` written here runs on the main actor too.
    func titled(_ value: Future<String>) -> Future<Int> {
        value.then { [weak self] v async in
            self?.title = v
            return #isolation === MainActor.shared ? 1 : 0
        }
    }

    func load(until token: CancelToken) -> Future<Int> {
        Future(until: token) { [weak self] in
            self?.title = "loaded until"
            return #isolation === MainActor.shared ? 1 : 0
        }
    }
}

/// An actor (not a global one) that starts work bound to its lifetime.
/// `#isolation` in its methods is the actor itself.
actor Feed {
    let lifetime = CancelTokenSource(cancelOnDeinit: true)
    let deinits: Counter
    var count = 0
    init(_ deinits: Counter) { self.deinits = deinits }
    deinit { deinits.increment() }
    func noop() {}

    /// `[weak self]`: not isolated to the actor (as with `Task { }`), and
    /// nothing may keep the actor alive while it waits.
    func follow(_ value: Future<Int>) -> Task<Void, any Error> {
        Task(until: lifetime.token) { [weak self] in
            _ = try await value.get()
            await self?.noop()
        }
    }

    func load(_ value: Future<Int>) -> Future<Int> {
        Future(until: lifetime.token) { [weak self] in
            let v = try await value.get()
            await self?.noop()
            return v
        }
    }

    func loadUnbound(_ value: Future<Int>) -> Future<Int> {
        Future { [weak self] in
            let v = try await value.get()
            await self?.noop()
            return v
        }
    }

    /// Isolated to another actor (the main actor): that one, not this actor.
    func followOnMain(_ value: Future<Int>) -> Task<Void, any Error> {
        Task(until: lifetime.token) { @MainActor [weak self] in
            _ = try await value.get()
            _ = self
        }
    }

    /// A strong capture isolates the operation to the actor (it compiles
    /// only because the operation touches `count` synchronously): it runs
    /// there, as `Task { self... }` would.
    func bump() -> Future<Int> {
        Future { self.count += 1; return self.count }
    }
}

@globalActor actor Elsewhere {
    static let shared = Elsewhere()
}

@Suite struct ActorInheritance {
    /// Started in an actor method, the task's wrapper does not hold the
    /// actor (the caller's isolation): a `[weak self]` task leaves its actor
    /// free to die, so one bound to the actor's own lifetime ends. Holding it
    /// would be the cycle `Task(until:)` exists to avoid.
    @Test func weakSelfWorkStartedInAnActorDoesNotKeepItAlive() async throws {
        let deinits = Counter()
        let never = FutureSource<Int>()
        var feed: Feed? = Feed(deinits)
        let task = await feed!.follow(never.future)
        let onMain = await feed!.followOnMain(never.future)
        let loaded = await feed!.load(never.future)
        let unbound = await feed!.loadUnbound(never.future)
        feed = nil
        let freed = await eventually { deinits.value == 1 }
        #expect(freed, "the actor outlives its lifetime-bound task")
        // (Let the leaked work end rather than hang the test.)
        guard freed else { never.trySetResult(0); task.cancel(); onMain.cancel(); return }
        // Its lifetime was cancelled by its deinit: what it bound ends.
        await #expect(throws: CancellationError.self) { try await task.value }
        await #expect(throws: CancellationError.self) { try await onMain.value }
        await #expect(throws: CancellationError.self) { try await loaded.get() }
        #expect(unbound.state == .pending)   // bound to nothing: it waits
        never.trySetResult(3)
        #expect(try await unbound.get() == 3)
    }

    @Test func aStrongCaptureRunsOnTheActor() async throws {
        let feed = Feed(Counter())
        #expect(try await feed.bump().get() == 1)
        #expect(try await feed.bump().get() == 2)
    }


    @Test @MainActor func taskUntilRunsOnTheCallersActorAndHoldsSelfWeakly() async throws {
        let deinits = Counter()
        var model: TitleModel? = TitleModel(deinits)
        let value = FutureSource<String>()
        let task = model!.show(value.future)
        value.trySetResult("hello")
        try await task.value
        #expect(model!.title == "hello")
        #expect(model!.isolatedRuns == 1)
        model = nil
        #expect(deinits.value == 1)
    }

    @Test @MainActor func futureFromAnAsyncClosureRunsOnTheCallersActor() async throws {
        let deinits = Counter()
        var model: TitleModel? = TitleModel(deinits)
        #expect(try await model!.load().get() == 1)
        #expect(model!.title == "loaded")
        #expect(try await model!.load(until: CancelTokenSource().token).get() == 1)
        #expect(model!.title == "loaded until")
        model = nil
        #expect(deinits.value == 1)
    }

    @Test @MainActor func taskUntilWhoseOwnerIsGoneIsCancelledWithItsToken() async {
        let deinits = Counter()
        var model: TitleModel? = TitleModel(deinits)
        let never = FutureSource<String>()
        let task = model!.show(never.future)
        model = nil   // the source of `lifetime` dies with it: its token becomes immortal
        #expect(deinits.value == 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }

    @Test @MainActor func asyncThenRunsOnTheCallersActor() async throws {
        let model = TitleModel(Counter())
        let s = FutureSource<String>()
        let f = model.titled(s.future)
        s.trySetResult("then")
        #expect(try await f.get() == 1)
        #expect(model.title == "then")
    }

    /// As with `Task { }`, tasks made in order on an actor start there in
    /// that order (each is enqueued on the actor itself, not on the global
    /// pool first).
    @Test @MainActor func tasksMadeInOrderOnTheMainActorStartInOrder() async throws {
        final class Log: @unchecked Sendable { var order: [Int] = [] }   // main actor only
        let log = Log()
        let token = CancelTokenSource().token
        var tasks: [Task<Void, any Error>] = []
        var futures: [Future<Void>] = []
        for i in 0..<3_000 {
            switch i % 3 {
            case 0: tasks.append(Task(until: token) { log.order.append(i) })
            case 1: futures.append(Future { log.order.append(i) })
            default: futures.append(Future(until: token) { log.order.append(i) })
            }
        }
        for t in tasks { try await t.value }
        for f in futures { try await f.get() }
        #expect(log.order == Array(0..<3_000))
    }

    /// Operations isolated to another actor run there, and start in the
    /// order they were made, as `Task { @Elsewhere in }` does (each is
    /// enqueued on that actor directly).
    @Test @MainActor func operationsIsolatedToAnotherActorStartThereInOrder() async throws {
        final class Log: @unchecked Sendable { var order: [Int] = [] }   // Elsewhere only
        let log = Log()
        let token = CancelTokenSource().token
        var tasks: [Task<Bool, any Error>] = []
        var futures: [Future<Bool>] = []
        for i in 0..<3_000 {
            switch i % 3 {
            case 0: tasks.append(Task(until: token) { @Elsewhere in log.order.append(i); return #isolation === Elsewhere.shared })
            case 1: futures.append(Future { @Elsewhere in log.order.append(i); return #isolation === Elsewhere.shared })
            default: futures.append(Future(until: token) { @Elsewhere in log.order.append(i); return #isolation === Elsewhere.shared })
            }
        }
        for t in tasks { #expect(try await t.value) }
        for f in futures { #expect(try await f.get()) }
        #expect(log.order == Array(0..<3_000))
    }
}
