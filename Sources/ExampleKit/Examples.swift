// The examples behind `swift run Examples <name>`; each returns what it
// printed, so Tests/ExamplesTests checks the output in CI.
import CollapsingFutures
import Dispatch
import Foundation
import Synchronization

/// Collects output lines from any thread.
final class Lines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func say(_ s: String) { lock.withLock { lines.append(s) } }
    var all: [String] { lock.withLock { lines } }
}

public enum Example: String, CaseIterable, Sendable {
    case addressBook = "address-book", pipeline, retry, retryFailures = "retry-failures", race, controller
    case viewModel = "view-model"

    public func run() async -> [String] {
        switch self {
        case .addressBook: return await addressBookExample()
        case .pipeline: return await pipelineExample()
        case .retry: return await retryExample()
        case .retryFailures: return await retryFailuresExample()
        case .race: return await raceExample()
        case .controller: return await controllerExample()
        case .viewModel: return await viewModelExample()
        }
    }
}

// MARK: address book — wrapping a callback API that reports success and
// failure on different paths (the original's ABAddressBook case).

struct Contact: Sendable { let name: String }
struct AccessDenied: Error {}

/// A simulated permission API: success arrives on a background queue through
/// one callback, denial through another, and the caller must keep the book.
final class SimulatedAddressBook: Sendable {
    let granted: Bool
    init(granted: Bool) { self.granted = granted }
    func requestAccess(onGranted: @escaping @Sendable ([Contact]) -> Void,
                       onDenied: @escaping @Sendable (any Error) -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(2)) {
            if self.granted { onGranted([Contact(name: "Ada"), Contact(name: "Alan")]) } else { onDenied(AccessDenied()) }
        }
    }
}

func contacts(from book: SimulatedAddressBook) -> Future<[Contact]> {
    let source = FutureSource<[Contact]>()
    book.requestAccess(onGranted: { source.trySetResult($0) }, onDenied: { source.trySetFailure($0) })
    return source.future
}

func addressBookExample() async -> [String] {
    let out = Lines()
    for granted in [true, false] {
        do {
            let people = try await contacts(from: SimulatedAddressBook(granted: granted)).get()
            out.say("granted: " + people.map(\.name).joined(separator: ", "))
        } catch {
            out.say("denied: \(error is AccessDenied ? "AccessDenied" : "\(error)")")
        }
    }
    return out.all
}

// MARK: pipeline — `then` steps bound to a connection's lifetime.

func pipelineExample() async -> [String] {
    let out = Lines()
    @Sendable func step(_ name: String, _ value: Int, until lifetime: CancelToken) -> Future<Int> {
        Future.delayed(value, by: .milliseconds(2), unless: lifetime).then { v in
            out.say("\(name) done")
            return v
        }
    }
    // A connection that stays up.
    let up = CancelTokenSource()
    let result = step("connect", 1, until: up.token)
        .then { _ in step("handshake", 2, until: up.token) }
        .then { _ in step("fetch", 42, until: up.token) }
    out.say("fetched \((try? await result.get()) ?? -1)")
    // A connection that drops during the handshake: the rest never runs.
    let down = CancelTokenSource()
    let dropped = step("connect", 1, until: down.token)
        .then { _ in
            down.cancel()
            return step("handshake", 2, until: down.token)
        }
        .then { _ in step("fetch", 42, until: down.token) }
    do { _ = try await dropped.get() } catch { out.say("connection dropped: \(error is CancellationError ? "cancelled" : "\(error)")") }
    return out.all
}

// MARK: retry — growing timeouts (the original blog post's loop).

func retryExample() async -> [String] {
    let out = Lines()
    let attempts = Atomic<Int>(0)
    let never = FutureSource<String>()
    let result = Future<String>.retrying(upTo: 5, baseTimeout: .milliseconds(5), backoff: 2) { token in
        let n = attempts.add(1, ordering: .relaxed).newValue
        out.say("attempt \(n)")
        // A flaky server: the first two attempts hang until their timeout.
        return n < 3 ? never.future.unless(token) : .succeeded("payload")
    }
    out.say("result: \((try? await result.get()) ?? "failed")")
    return out.all
}

// MARK: retry failures — a flaky call, 3 tries, a growing wait between them.

struct ServiceUnavailable: Error {}

func retryFailuresExample() async -> [String] {
    let out = Lines()
    let attempts = Atomic<Int>(0)
    // Fails twice, then answers: the third try succeeds.
    let flaky = Future<String>.retrying(upTo: 3, delay: .milliseconds(10), backoff: 2) { _ in
        let n = attempts.add(1, ordering: .relaxed).newValue
        out.say("try \(n)")
        return n < 3 ? .failed(ServiceUnavailable()) : .succeeded("payload")
    }
    out.say("result: \((try? await flaky.get()) ?? "failed")")
    // Always down: fails with the last try's error.
    let down = Future<String>.retrying(upTo: 2, delay: .milliseconds(10)) { _ in .failed(ServiceUnavailable()) }
    do { _ = try await down.get() } catch { out.say("gave up: \(type(of: error))") }
    return out.all
}

// MARK: race — two mirrors, the loser is cancelled.

func raceExample() async -> [String] {
    let out = Lines()
    let slowCancelled = Counted()
    let winner = Future<String>.race([
        { token in
            token.whenCancelled { slowCancelled.mark() }
            return Future.delayed("slow mirror", by: .seconds(10), unless: token)
        },
        { _ in Future.delayed("fast mirror", by: .milliseconds(2)) },
    ])
    out.say("winner: \((try? await winner.get()) ?? "none")")
    out.say("slow mirror cancelled: \(slowCancelled.value)")
    return out.all
}

final class Counted: Sendable {
    private let n = Atomic<Bool>(false)
    func mark() { n.store(true, ordering: .sequentiallyConsistent) }
    var value: Bool { n.load(ordering: .sequentiallyConsistent) }
}

// MARK: controller — a Task and an AsyncStream bound to an object's lifetime.

final class Controller: Sendable {
    let lifetime = CancelTokenSource(cancelOnDeinit: true)
    let out: Lines
    init(events: AsyncStream<Int>, out: Lines) {
        self.out = out
        let token = lifetime.token
        Task(until: token) { [weak self] in
            for await e in events.until(token) { self?.out.say("event \(e)") }
            out.say("task ended")
        }
    }
    deinit { out.say("controller deinit") }
}

func controllerExample() async -> [String] {
    let out = Lines()
    let ended = Counted()
    let (events, producer) = AsyncStream<Int>.makeStream()
    producer.onTermination = { _ in ended.mark() }
    var controller: Controller? = Controller(events: events, out: out)
    producer.yield(1)
    for _ in 0..<2000 where !out.all.contains("event 1") { try? await Task.sleep(nanoseconds: 1_000_000) }
    controller = nil
    _ = controller
    for _ in 0..<2000 where !(ended.value && out.all.contains("task ended")) { try? await Task.sleep(nanoseconds: 1_000_000) }
    out.say("producer terminated: \(ended.value)")
    return out.all
}

// MARK: main queue — a handler registered on the main thread runs there.

/// Registers on the calling thread (call it on the main thread), cancels from
/// another thread, and runs the main run loop until the handler has run.
public func mainQueueExample() -> [String] {
    let out = Lines()
    let source = CancelTokenSource()
    out.say("registered on main thread: \(Thread.isMainThread)")
    source.token.whenCancelled { out.say("handler ran on main thread: \(Thread.isMainThread)") }
    Thread.detachNewThread { source.cancel() }   // cancelled elsewhere: the handler hops
    let deadline = Date().addingTimeInterval(10)
    while out.all.count < 2 && Date() < deadline { RunLoop.main.run(until: Date().addingTimeInterval(0.01)) }
    return out.all
}

// MARK: blocked main — a synchronous command-line main: the library's own
// bookkeeping (combinators, `unless`, `Task(until:)`) completes on the
// completing thread, so it never waits for a main queue nobody drains.

/// Builds combinators on the main thread, completes their inputs from
/// another thread, and blocks the main thread (no run loop) until they are
/// done or 10 s pass; returns what each became.
public func blockedMainExample() -> [String] {
    let out = Lines()
    out.say("on main thread: \(Thread.isMainThread)")
    let a = FutureSource<Int>(), b = FutureSource<Int>()
    let keep = CancelTokenSource()
    let stop = CancelTokenSource()
    // (No `then` here: a continuation the user registers on the main thread
    // runs on the main queue, by contract; only the library's own work is inline.)
    let all = Future.all([a.future, b.future])
    let settled = Future.allSettled([a.future, b.future])
    let race = Future<Int>.race([{ _ in a.future }, { _ in b.future }])
    let unless = b.future.unless(keep.token)
    let retried = Future<Int>.retrying(upTo: 2, baseTimeout: .seconds(10)) { _ in b.future }
    let ordered = Future.all([a.future, b.future].orderedByCompletion())
    let futures: [(String, () -> Bool, () -> String)] = [
        ("all", { all.isIncomplete }, { "\(all)" }),
        ("allSettled", { settled.isIncomplete }, { "\(settled.result.map { _ in "completed" } ?? "\(settled)")" }),
        ("race", { race.isIncomplete }, { "\(race)" }),
        ("unless", { unless.isIncomplete }, { "\(unless)" }),
        ("retrying", { retried.isIncomplete }, { "\(retried)" }),
        ("orderedByCompletion", { ordered.isIncomplete }, { "\(ordered)" }),
    ]
    let task = Task(until: stop.token) { try await Task.sleep(nanoseconds: 60_000_000_000) }
    Thread.detachNewThread {
        b.trySetResult(2)
        a.trySetResult(1)
        stop.cancel()
    }
    let deadline = Date().addingTimeInterval(10)
    while (futures.contains { $0.1() } || !task.isCancelled) && Date() < deadline { usleep(1000) }
    for (name, _, describe) in futures { out.say("\(name): \(describe())") }
    out.say("task cancelled: \(task.isCancelled)")
    // A continuation of the user's own, registered on this main thread, runs
    // on the main queue, which nobody drains here: `.completingThread` runs
    // it where the future completes instead.
    let reply = FutureSource<String>()
    let seen = Lines()
    reply.future.thenDo(on: .completingThread) { seen.say("reply: \($0)") }
    Thread.detachNewThread { reply.trySetResult("pong") }
    let until = Date().addingTimeInterval(10)
    while seen.all.isEmpty && Date() < until { usleep(1000) }
    for line in seen.all { out.say(line) }
    withExtendedLifetime(keep) {}
    return out.all
}

// MARK: wait in a handler — blocking for what a later sibling would do.

/// The first handler waits for what only its later sibling does, which
/// cannot run before it returns; the library says so after a second (on
/// standard error), and this gives up after `seconds` from another thread.
public func waitInHandlerExample(seconds: Int) -> [String] {
    let out = Lines()
    let cancel = CancelTokenSource()
    let giveUp = CancelTokenSource()
    let reply = FutureSource<Int>()
    cancel.token.whenCancelled(on: .completingThread) {
        do { out.say("waited: \(try reply.future.unless(giveUp.token).wait())") } catch { out.say("gave up: \(type(of: error))") }
    }
    cancel.token.whenCancelled(on: .completingThread) { reply.trySetResult(1) }
    Thread.detachNewThread { sleep(UInt32(seconds)); giveUp.cancel() }
    cancel.cancel()
    out.say("reply, set by the later sibling: \(reply.future)")
    return out.all
}

// MARK: wait on the timers' firing pool — blocking the few threads it has.

/// Handlers that a timer's firing starts on the cancelling thread run on
/// the library's firing pool, a few threads. Each of these waits for a
/// reply that never comes, so every pool thread blocks and the other
/// handlers wait for one; the library says so after a second (in release
/// builds too), and this gives up after `seconds` from another thread.
public func waitOnTimerPoolExample(seconds: Int) -> [String] {
    let out = Lines()
    let giveUp = CancelTokenSource()
    // First: whatever happens below, the waits end.
    Thread.detachNewThread { sleep(UInt32(seconds)); giveUp.cancel() }
    let reply = FutureSource<Int>()
    let n = 200   // more than the pool has threads on any machine (at most 64)
    let finished = DispatchSemaphore(value: 0)
    let lock = NSLock()
    nonisolated(unsafe) var gaveUp = 0
    // All due at one instant, far enough ahead for every handler to be
    // registered first (so each runs on the pool, not here).
    let due = ContinuousClock.now + .milliseconds(500)
    let deadlines = (0..<n).map { _ in CancelTokenSource(cancellingAfter: max(.zero, due - .now)) }
    for deadline in deadlines {
        deadline.token.whenCancelled(on: .completingThread) {
            if (try? reply.future.unless(giveUp.token).wait()) == nil { lock.withLock { gaveUp += 1 } }
            finished.signal()
        }
    }
    for _ in 0..<n { finished.wait() }
    out.say("handlers that gave up: \(lock.withLock { gaveUp }) of \(n)")
    withExtendedLifetime(deadlines) {}
    return out.all
}

// MARK: wait for main-actor work — blocking the main thread it needs.

/// On the main thread, waits for a future whose work runs on the main actor,
/// which cannot run while the main thread blocks; debug builds say so after
/// a second (on standard error), and this gives up after `seconds` from
/// another thread.
public func waitForMainActorExample(seconds: Int) -> [String] {
    let out = Lines()
    let giveUp = CancelTokenSource()
    let answer = Future<Int>(until: giveUp.token) { @MainActor in 42 }
    Thread.detachNewThread { sleep(UInt32(seconds)); giveUp.cancel() }
    do { out.say("waited: \(try answer.wait())") } catch { out.say("gave up: \(type(of: error))") }
    return out.all
}

// MARK: misuse — what a programming error prints (in release builds too:
// the library stops with `fatalError`, whose message survives -O).

/// Commits the named misuse; it never returns.
public func misuseExample(_ name: String) -> Never {
    switch name {
    case "backoff-nan":
        _ = Future<Int>.retrying(upTo: 3, baseTimeout: .seconds(1), backoff: .nan) { _ in .succeeded(1) }
    case "negative-delay":
        _ = Future.delayed(1, by: .seconds(-1))
    case "force-get-pending":
        _ = FutureSource<Int>().future.forceGetResult()
    case "retry-negative-delay":
        _ = Future<Int>.retrying(upTo: 3, delay: .seconds(-1)) { _ in .succeeded(1) }
    default:
        break
    }
    fatalError("unknown misuse \(name)")
}

// MARK: view model — UI code on the main actor: no `assumeIsolated`, no
// strong `self` in a Task, the view model deinitializes when dropped.

/// A profile screen's view model. Everything it starts ends with `lifetime`.
@MainActor final class ProfileViewModel {
    var title = "loading"
    var status = ""
    /// Cancelled (not made immortal) when the view model goes: what it
    /// started is stopped, not just forgotten.
    let lifetime = CancelTokenSource(cancelOnDeinit: true)
    let out: Lines
    init(out: Lines) { self.out = out }
    deinit { out.say("view model deinit") }

    /// Shows the name when it arrives (a continuation on the main actor),
    /// and polls a status in a Task bound to the view model's lifetime.
    func bind(name: Future<String>, status: Future<String>) -> Task<Void, any Error> {
        name.thenDo(on: MainActor.shared, unless: lifetime.token) { [weak self] in self?.title = $0 }
        return Task(until: lifetime.token) { [weak self] in
            let s = try await status.get()
            self?.status = s   // inherits the main actor, like Task { }
        }
    }
}

@MainActor func viewModelExample() async -> [String] {
    let out = Lines()
    var model: ProfileViewModel? = ProfileViewModel(out: out)
    let name = FutureSource<String>(), status = FutureSource<String>()
    let task = model!.bind(name: name.future, status: status.future)
    name.trySetResult("Ada")
    status.trySetResult("online")
    _ = try? await task.value
    for _ in 0..<1000 where model!.title != "Ada" { await Task.yield() }
    out.say("title: \(model!.title), status: \(model!.status)")
    let never = FutureSource<String>()
    let pending = model!.bind(name: never.future, status: never.future)
    model = nil   // dropping the view model ends its lifetime: the task is cancelled
    do { try await pending.value; out.say("task finished") } catch { out.say("task ended: \(type(of: error))") }
    return out.all
}
