// The operation-program interpreter behind the fuzz harness, the corpus
// replay test and the stress test.
//
// Fuzz bytes decode into a program over a small pool of token sources,
// future sources and registrations. A sequential set-up phase creates the
// pools; the body then runs on 1 to 3 threads. Afterwards every observation
// is checked against the rules of the API (the reference model below), then
// everything is dropped and every captured object must have been freed.
@_spi(Testing) import CollapsingFutures
import CollapsingFuturesTesting
import Foundation
import TestSupport
import Synchronization

/// A violated invariant, with the program that produced it.
public struct FuzzFailure: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// Counts deinits of objects captured by handlers.
final class Deinits: Sendable {
    let created = Atomic<Int>(0)
    let freed = Atomic<Int>(0)
}

final class Captured: Sendable {
    let d: Deinits
    /// Set to 1 when this object is freed (for checks made before the end).
    let released: Cell?
    init(_ d: Deinits, released: Cell? = nil) { self.d = d; self.released = released; d.created.add(1, ordering: .relaxed) }
    deinit { d.freed.add(1, ordering: .relaxed); released?.store(1) }
}

/// What one handler saw. Written by the handler and the registering thread,
/// read after all threads joined.
final class HandlerRecord: @unchecked Sendable {
    let token: Int           // index of the token it is registered on
    let unless: Int?         // index of its unless token
    let thread: Int
    let async: Bool          // registered with `on:` (runs later, on a queue)
    let registeredAt: Int    // global step when registered
    let runs = Atomic<Int>(0)
    let runStep = Atomic<Int>(-1)
    var registration: CancelRegistration?
    var removedOK = false    // a remove() returned true before it could run
    var removeSaidRan = false
    init(token: Int, unless: Int?, thread: Int, async: Bool, registeredAt: Int) {
        self.token = token; self.unless = unless; self.thread = thread; self.async = async
        self.registeredAt = registeredAt
    }
}

/// A deadline source (`CancelTokenSource(cancellingAfter:clock:)`) on the
/// program's manual clock, with one handler, and what happened to it:
/// armed, cancelled or released by any thread while an advance of the
/// clock may fire it. `hasUnless`: the handler
/// was registered with a pool token as `unless:`, which may remove it
/// while the firing pool has it queued.
final class DeadlineRecord: @unchecked Sendable {
    let duration: Duration
    var hasUnless = false
    let fires: Bool          // a duration the final advance reaches
    let token: CancelToken
    let created: ManualClock.Instant
    let runs = Cell(0)
    let early = Cell(0)
    let ranAfterCancelWon = Cell(0)   // 1: tryCancel() returned true and the handler had run on return
    let cancelWon = Cell(0)
    let cancelTried = Cell(0)   // set before any tryCancel: its run is no firing
    private let lock = NSLock()
    private var _source: CancelTokenSource?
    init(_ kind: Int, on clock: ManualClock) {
        let durations: [Duration] = [.zero, .microseconds(1), .microseconds(200), .milliseconds(2),
                                     .seconds(3600), .seconds(100 * 365 * 86_400)]
        duration = durations[kind % durations.count]
        fires = duration < .seconds(1)
        created = clock.now
        let s = CancelTokenSource(cancellingAfter: duration, clock: clock)
        _source = s
        token = s.token
    }
    /// tryCancel from any thread (nothing once released).
    func cancel() {
        guard let s = lock.withLock({ _source }) else { return }
        cancelTried.store(1)
        if s.tryCancel() {
            cancelWon.store(1)
            if runs.load() == 1 { ranAfterCancelWon.store(1) }
        }
    }
    /// Releases the source: its deadline goes, its token becomes immortal
    /// unless it was cancelled first.
    func release() {
        let old = lock.withLock { () -> CancelTokenSource? in defer { _source = nil }; return _source }
        _ = old
    }
    var released: Bool { lock.withLock { _source == nil } }
}

/// A shareable atomic integer.
final class Cell: Sendable {
    let v: Atomic<Int>
    init(_ x: Int) { v = Atomic(x) }
    func load() -> Int { v.load(ordering: .relaxed) }
    func store(_ x: Int) { v.store(x, ordering: .relaxed) }
    func add() { v.add(1, ordering: .relaxed) }
}

/// A `then` continuation: out = src + 1; `unless` is a token index, or nil;
/// `released` is set when the function's captures are freed.
struct ThenRecord { let src: Int; let unless: Int?; let out: Future<Int>; let ran: Cell; let released: Cell }

/// A combinator over pool futures `a` and `b` and what it returned.
enum CombinatorRecord {
    /// `unless` is a token index, or nil.
    case all(a: Int, b: Int, unless: Int?, out: Future<[Int]>)
    case race(a: Int, b: Int, out: Future<Int>)
    /// `unless` is a token index, or nil.
    case ordered(a: Int, b: Int, unless: Int?, outs: [Future<Int>])
    /// Unless-style, with a timeout that never fires: `unless` is token `u`;
    /// `called` counts calls of the operation (none if `u` was already
    /// cancelled when the call was made).
    case timeout(a: Int, u: Int, called: Cell, out: Future<Int>)
    /// Until-style, with a timeout that never fires: `until` is token `u`;
    /// `lifetime` is the token the operation got (none if `u` was already
    /// cancelled when the call was made).
    case untilTimeout(a: Int, u: Int, lifetime: Locked<CancelToken?>, out: Future<Int>)
    /// The collapsing `then`: `out` takes on pool future `b` once `a`
    /// succeeds; `unless` is a token index, or nil; `ran` counts calls.
    case flatThen(a: Int, b: Int, unless: Int?, ran: Cell, out: Future<Int>)
    /// The collapsing `then` returning a fresh collapsing `then` of pool
    /// future `b` that returns a fresh `then` of pool future `c`: outputs
    /// nobody else holds, which the lock-free version links into `out`
    /// (a chain of two: the claim is taken through twice). `viaFinally`:
    /// the middle level is a collapsing `finally` of `b` (it runs whatever
    /// `b`'s outcome, unless immortal) returning a collapsing `catch` of `c`
    /// that recovers a failure with -7.
    case flatThenFresh(a: Int, b: Int, c: Int, viaFinally: Bool, unless: Int?, ran: Cell, out: Future<Int>)
}

/// A Task bound to a token (op 11): `Future(until:)`, `Task(until:)`,
/// `withCancelToken` inside `Future(until:)`, or `sequence.until`, whose
/// operation awaits pool future `input`. The token is a pool token, or a
/// deadline on the continuous clock (the timer driver fires it, and hands
/// the Task's cancel to the firing pool), alone or in `any` with a pool
/// token. `out` ends with the operation's outcome; `runs` counts its runs.
struct TaskBindingRecord {
    let kind: String
    let input: Int
    let token: CancelToken
    /// The deadline source, held until the checks.
    let deadline: CancelTokenSource?
    let runs: Cell
    let out: Future<Int>
}

/// Binds a Task to `token` (`kind` 0...3), its operation awaiting `input`
/// and capturing `cap`.
func bindTask(_ kind: Int, to token: CancelToken, awaiting input: Future<Int>, capturing cap: Captured,
              runs: Cell) -> (String, Future<Int>) {
    switch kind {
    case 0:
        return ("Future(until:)", Future(until: token) { _ = cap; runs.add(); return try await input.get() })
    case 1:
        let s = FutureSource<Int>()
        Task(until: token) {
            _ = cap; runs.add()
            do { s.trySetResult(try await input.get()) } catch { s.trySetFailure(error) }
        }
        return ("Task(until:)", s.future)
    case 2:
        return ("withCancelToken", Future(until: token) {
            try await withCancelToken { t in _ = cap; runs.add(); return try await Future(until: t) { try await input.get() }.get() }
        })
    default:
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        Task {
            if let v = try? await input.get() { continuation.yield(v) }
            continuation.finish()
        }
        return ("sequence.until", Future {
            _ = cap; runs.add()
            var last: Int?
            for await v in stream.until(token) { last = v }
            if let last { return last }
            if token.isCancelled { throw CancellationError() }
            throw FutureError.immortal
        })
    }
}

/// Interprets one program. Throws `FuzzFailure` on a violated invariant.
/// `bindingTasks` false: op 11 binds no Task (it cancels a token instead),
/// for a replay inside a test process whose other tests hold Swift's
/// cooperative pool, which the bound Tasks need to end.
public func runProgram(_ data: [UInt8], bindingTasks: Bool = true) throws {
    let d = Deinits()
    let queue = DispatchQueue(label: "fuzz.on")
    // Off the main thread: handlers registered on the main thread would hop
    // to the main queue (by contract), which nobody drains here.
    final class Outcome: @unchecked Sendable { var error: (any Error)? }
    let outcome = Outcome()
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        do { try runScoped(data, d, queue, bindingTasks: bindingTasks) } catch { outcome.error = error }
        done.signal()
    }
    done.wait()
    if let e = outcome.error { throw e }
    // Everything the program made is gone now: every captured object must be freed.
    queue.sync {}
    // A fired deadline's handler runs on the timers' firing pool and is
    // released there right after: wait for that (bounded) before counting.
    _ = eventually { d.created.load(ordering: .relaxed) == d.freed.load(ordering: .relaxed) }
    let created = d.created.load(ordering: .relaxed), freed = d.freed.load(ordering: .relaxed)
    if created != freed {
        throw FuzzFailure(message: "\(created - freed) of \(created) captured objects leaked [program=\(data)]")
    }
}

private func runScoped(_ data: [UInt8], _ d: Deinits, _ queue: DispatchQueue, bindingTasks: Bool) throws {
    var bytes = data[...]
    func next() -> Int? { bytes.popFirst().map(Int.init) }
    let threads = 1 + (next() ?? 0) % 3
    let step = Atomic<Int>(0)
    let seq = Atomic<Int>(0)   // order in which handlers ran

    // ---- set-up: pools --------------------------------------------------
    let nTokens = 2 + (next() ?? 0) % 5
    /// A token source slot. Read and written under its lock: the owner
    /// thread cancels or drops it while nested-cancel handlers (op 12) on any
    /// thread cancel it. (Not a `weak` capture: LeakSanitizer cannot see the
    /// weak side table's pointer, which Swift keeps encoded in the object's
    /// refcount word, and reports it as leaked while the object is alive.)
    final class SourceBox: @unchecked Sendable {
        private let lock = NSLock()
        private var _source: CancelTokenSource?
        var source: CancelTokenSource? {
            get { lock.withLock { _source } }
            set { let old = lock.withLock { () -> CancelTokenSource? in defer { _source = newValue }; return _source }; _ = old }
        }
    }
    var boxes: [SourceBox] = []
    var tokens: [CancelToken] = []
    var cancelStep: [Cell] = []
    var sentinels: [HandlerRecord] = []
    for i in 0..<nTokens {
        let kind = (next() ?? 0) % 8
        let box = SourceBox()
        if kind == 0, i > 0 {
            box.source = CancelTokenSource(until: tokens[(next() ?? 0) % i])
        } else if kind == 1, i > 1 {
            // any/all of two earlier tokens: no source; lives as long as its inputs allow.
            let a = tokens[(next() ?? 0) % i], b = tokens[(next() ?? 0) % i]
            tokens.append((next() ?? 0) % 2 == 0 ? .any(a, b) : .all(a, b))
            boxes.append(box)
            cancelStep.append(Cell(-1))
            sentinels.append(HandlerRecord(token: i, unless: nil, thread: -1, async: false, registeredAt: 0))
            continue
        } else {
            box.source = CancelTokenSource()
        }
        boxes.append(box)
        tokens.append(box.source!.token)
        cancelStep.append(Cell(-1))
        sentinels.append(HandlerRecord(token: i, unless: nil, thread: -1, async: false, registeredAt: 0))
    }
    // A sentinel per token records the step at which it was cancelled.
    for i in 0..<nTokens {
        let s = sentinels[i], cs = cancelStep[i]
        tokens[i].whenCancelled {
            let now = step.load(ordering: .relaxed)
            cs.store(now)
            s.runs.add(1, ordering: .relaxed)
        }
    }
    let nFutures = 1 + (next() ?? 0) % 4
    final class FutureBox: @unchecked Sendable { var source: FutureSource<Int>? }
    let fboxes = (0..<nFutures).map { _ in FutureBox() }
    for b in fboxes { b.source = FutureSource<Int>() }
    let futures = fboxes.map { $0.source!.future }

    // ---- the body, split across threads --------------------------------
    var programs = Array(repeating: [UInt8](), count: threads)
    var t = 0
    while let op = next() {
        let arg1 = next() ?? 0, arg2 = next() ?? 0
        programs[t].append(contentsOf: [UInt8(op), UInt8(arg1), UInt8(arg2)])
        t = (t + 1) % threads
    }
    let handlerLog = Locked<[HandlerRecord]>([])
    let combinatorLog = Locked<[CombinatorRecord]>([])
    let thenLog = Locked<[ThenRecord]>([])
    let flattenLog = Locked<[(Int, Int, Bool)]>([])
    let deadlineLog = Locked<[DeadlineRecord]>([])
    let taskLog = Locked<[TaskBindingRecord]>([])
    // The deadlines' clock: time moves only by the program's advances (op
    // 18, variant 1) and the final one, never by waiting.
    let clock = ManualClock()

    let tokensC = tokens, boxesC = boxes
    /// Pool token `i` as an `unless:` argument (`.immortal` for none).
    func unlessToken(_ i: Int?) -> CancelToken { i.map { tokensC[$0] } ?? .immortal }
    func body(_ me: Int) {
        var mine: [HandlerRecord] = []
        let p = programs[me]
        var k = 0
        while k + 2 < p.count {
            let op = Int(p[k]) % 19, variant = Int(p[k]) / 19 % 2, a = Int(p[k + 1]), b = Int(p[k + 2])
            k += 3
            let now = step.add(1, ordering: .relaxed).newValue
            let ti = a % nTokens, ui = b % nTokens
            // The combinators' optional `unless` token (when a & 128).
            let combinatorUnless: Int? = a & 128 != 0 ? (b >> 4) % nTokens : nil
            switch op {
            case 0, 1, 2:   // register plain / unless / on:
                let unless: Int? = op == 1 ? ui : nil
                let rec = HandlerRecord(token: ti, unless: unless, thread: me, async: op == 2, registeredAt: now)
                let cap = Captured(d)
                let h: @Sendable () -> Void = {
                    _ = cap
                    rec.runs.add(1, ordering: .relaxed)
                    rec.runStep.store(seq.add(1, ordering: .relaxed).newValue, ordering: .relaxed)
                }
                rec.registration = tokensC[ti].whenCancelled(on: op == 2 ? queue : nil,
                                                               unless: unlessToken(unless), h)
                mine.append(rec)
            case 3, 4:      // remove one of mine
                guard !mine.isEmpty else { continue }
                let rec = mine[a % mine.count]
                if rec.registration!.remove() { rec.removedOK = true } else { rec.removeSaidRan = true }
            case 5:         // cancel (owner thread only holds the source)
                if ti % threads == me { boxesC[ti].source?.cancel() }
            case 6:         // drop a source: its token becomes immortal
                if ti % threads == me { boxesC[ti].source = nil }
            case 7:         // set a future's result
                let fi = a % nFutures
                if fi % threads == me { fboxes[fi].source?.trySetResult(b) }
            case 8:         // set a future to another (collapse, cycles)
                let fi = a % nFutures, fj = b % nFutures
                if fi % threads == me, let s = fboxes[fi].source {
                    let won = s.trySetResult(futures[fj])
                    flattenLog.withLock { $0.append((fi, fj, won)) }
                }
            case 9 where variant == 1 && a & 128 != 0:  // collapsing then, returning fresh thens (linked)
                let fi = a % nFutures, fj = (b >> 4) % nFutures, fk = (a >> 3) % nFutures
                let ran = Cell(0)
                let cap = Captured(d)
                let unless: Int? = b & 1 == 1 ? (b >> 1) % nTokens : nil
                let inner = futures[fj], innermost = futures[fk], viaFinally = a & 64 != 0
                let out = futures[fi].then(unless: unlessToken(unless)) { (_: Int) -> Future<Int> in
                    _ = cap; ran.add()
                    if viaFinally {
                        return inner.finally { (_: Future<Int>) -> Future<Int> in
                            innermost.catch { (_: any Error) -> Future<Int> in .succeeded(-7) }
                        }
                    }
                    return inner.then { (_: Int) -> Future<Int> in innermost.then { $0 } }
                }
                combinatorLog.withLock { $0.append(.flatThenFresh(a: fi, b: fj, c: fk, viaFinally: viaFinally, unless: unless, ran: ran, out: out)) }
            case 9 where variant == 1:  // collapsing then, returning another pool future
                let fi = a % nFutures, fj = (b >> 4) % nFutures
                let ran = Cell(0)
                let cap = Captured(d)
                let unless: Int? = b & 1 == 1 ? (b >> 1) % nTokens : nil
                let inner = futures[fj]
                let out = futures[fi].then(unless: unlessToken(unless)) { (_: Int) -> Future<Int> in
                    _ = cap; ran.add(); return inner
                }
                combinatorLog.withLock { $0.append(.flatThen(a: fi, b: fj, unless: unless, ran: ran, out: out)) }
            case 9:         // then (with an unless token when b is odd)
                let fi = a % nFutures
                let ran = Cell(0), released = Cell(0)
                let cap = Captured(d, released: released)
                let unless: Int? = b & 1 == 1 ? (b >> 1) % nTokens : nil
                let out = futures[fi].then(unless: unlessToken(unless)) { (x: Int) -> Int in
                    _ = cap; ran.add(); return x + 1
                }
                thenLog.withLock { $0.append(ThenRecord(src: fi, unless: unless, out: out, ran: ran, released: released)) }
            case 10:        // drop a future source: unset -> immortal
                let fi = a % nFutures
                if fi % threads == me { fboxes[fi].source = nil }
            case 11 where bindingTasks:  // a Task bound to a pool token, a deadline, or any of both (b: kind, a: token)
                let fi = (a >> 3) % nFutures, runs = Cell(0)
                var deadline: CancelTokenSource?
                var token = tokensC[ti]
                if variant == 1 {
                    let d = CancelTokenSource(cancellingAfter: [.zero, .microseconds(1), .microseconds(200), .milliseconds(1)][b >> 2 & 3])
                    deadline = d
                    token = b & 16 == 0 ? d.token : .any(d.token, token)
                }
                let (kind, out) = bindTask(b % 4, to: token, awaiting: futures[fi], capturing: Captured(d), runs: runs)
                taskLog.withLock { $0.append(TaskBindingRecord(kind: kind, input: fi, token: token, deadline: deadline, runs: runs, out: out)) }
            case 12:        // a handler that cancels another token (nested settle, drain order)
                let target = boxesC[ui]   // the box, not the source: it may be dropped meanwhile
                let rec = HandlerRecord(token: ti, unless: nil, thread: me, async: false, registeredAt: now)
                let cap = Captured(d)
                rec.registration = tokensC[ti].whenCancelled {
                    _ = cap
                    rec.runs.add(1, ordering: .relaxed)
                    rec.runStep.store(seq.add(1, ordering: .relaxed).newValue, ordering: .relaxed)
                    target.source?.cancel()
                }
                mine.append(rec)
            case 13:        // all (with an unless token when a & 128)
                let fa = a % nFutures, fb = b % nFutures
                let out = Future.all([futures[fa], futures[fb]], unless: unlessToken(combinatorUnless))
                combinatorLog.withLock { $0.append(.all(a: fa, b: fb, unless: combinatorUnless, out: out)) }
            case 14:        // race over operations returning pool futures
                let fa = a % nFutures, fb = b % nFutures
                let fA = futures[fa], fB = futures[fb]
                let out = Future<Int>.race([{ _ in fA }, { _ in fB }])
                combinatorLog.withLock { $0.append(.race(a: fa, b: fb, out: out)) }
            case 15:        // orderedByCompletion (with an unless token when a & 128)
                let fa = a % nFutures, fb = b % nFutures
                let outs = [futures[fa], futures[fb]].orderedByCompletion(unless: unlessToken(combinatorUnless))
                combinatorLog.withLock { $0.append(.ordered(a: fa, b: fb, unless: combinatorUnless, outs: outs)) }
            case 16 where variant == 1:  // until-style withTimeout whose timer never fires
                let fa = a % nFutures
                let fA = futures[fa]
                let lifetime = Locked<CancelToken?>(nil)
                let out = Future<Int>.withTimeout(.seconds(Int64.max), until: tokensC[ui]) { t in
                    lifetime.withLock { $0 = t }
                    return fA
                }
                combinatorLog.withLock { $0.append(.untilTimeout(a: fa, u: ui, lifetime: lifetime, out: out)) }
            case 16:        // unless-style withTimeout whose timer never fires
                let fa = a % nFutures
                let fA = futures[fa]
                let called = Cell(0)
                let out = Future<Int>.withTimeout(.seconds(Int64.max), unless: tokensC[ui]) { _ in called.add(); return fA }
                combinatorLog.withLock { $0.append(.timeout(a: fa, u: ui, called: called, out: out)) }
            case 17:        // a deadline source, with a handler (variant 1: with `unless:`); then cancel it, release it or keep it
                let r = DeadlineRecord(a, on: clock)
                let cap = Captured(d)
                // Not capturing `r`: it holds the source, whose token holds this handler.
                let (created, duration, tried, early, runs) = (r.created, r.duration, r.cancelTried, r.early, r.runs)
                r.hasUnless = variant == 1
                r.token.whenCancelled(unless: variant == 1 ? tokensC[ui] : .immortal) {
                    _ = cap
                    if tried.load() == 0 && created.duration(to: clock.now) < duration { early.add() }
                    runs.add()
                }
                deadlineLog.withLock { $0.append(r) }
                switch b % 4 {
                case 1: r.cancel()
                case 2: r.release()
                default: break   // kept: it fires, or a later op 18 races it
                }
            case 18 where variant == 1:  // advance the program's clock: the deadlines due fire here
                clock.advance(by: [.microseconds(1), .microseconds(200), .milliseconds(2), .seconds(1)][a % 4])
                _waitForTimersOnOtherClocks()
            case 18:        // cancel or release any thread's deadline source
                guard let r = deadlineLog.withLock({ $0.isEmpty ? nil : $0[a % $0.count] }) else { continue }
                if b % 2 == 0 { r.cancel() } else { r.release() }
            default:        // tryCancel
                if ti % threads == me { _ = boxesC[ti].source?.tryCancel() }
            }
        }
        handlerLog.withLock { $0.append(contentsOf: mine) }
    }
    if threads == 1 {
        body(0)
    } else {
        let group = DispatchGroup(), start = DispatchSemaphore(value: 0)
        // The threads hold the box, not the body: a thread that has left
        // the group but not yet exited must not keep the body's captures
        // (every pool and log) alive past the join, or what they hold would
        // be freed at a random later moment (after the leak checks).
        final class Body: @unchecked Sendable { var f: ((Int) -> Void)?; init(_ f: @escaping (Int) -> Void) { self.f = f } }
        let b = Body(body)
        for i in 0..<threads {
            group.enter()
            Thread.detachNewThread { start.wait(); b.f!(i); group.leave() }
        }
        for _ in 0..<threads { start.signal() }
        group.wait()
        b.f = nil
    }
    queue.sync {}   // `on:` handlers already dispatched have run

    // ---- checks ------------------------------------------------------------
    func fail(_ m: String) -> FuzzFailure { FuzzFailure(message: "\(m) [threads=\(threads) program=\(data)]") }
    let records = handlerLog.withLock { $0 }
    var lastRunByToken: [Int: (Int, Int)] = [:]   // token -> (registeredAt, run order)
    for r in records.sorted(by: { $0.registeredAt < $1.registeredAt }) {
        let runs = r.runs.load(ordering: .relaxed)
        let state = tokens[r.token].state
        if runs > 1 { throw fail("handler ran \(runs) times") }
        if runs == 1 && state != .cancelled { throw fail("handler ran but its token is \(state)") }
        if runs == 1 && r.removedOK { throw fail("handler ran after a successful remove") }
        if r.removeSaidRan && runs == 0 && !r.async { throw fail("remove() said the handler ran, but it did not") }
        if state == .immortal && runs != 0 { throw fail("immortal token ran a handler") }
        if threads == 1 && !r.async {
            let tc = cancelStep[r.token].load()
            let uc = r.unless.map { cancelStep[$0].load() } ?? -1
            let unlessFirst = uc >= 0 && (tc < 0 || uc < tc || uc < r.registeredAt)
            let sameStep = uc >= 0 && uc == tc
            let unlessIsSelf = r.unless == r.token
            if state == .cancelled && !r.removedOK && !unlessFirst && !sameStep && !unlessIsSelf && runs == 0 {
                throw fail("handler on a cancelled token neither ran nor was removed")
            }
            if runs == 1 && unlessFirst && !sameStep { throw fail("handler ran although its unless token was cancelled first") }
            if runs == 1 && unlessIsSelf { throw fail("handler with its own token as unless ran") }
            // FIFO per token on a single thread: run order follows registration order.
            if runs == 1 {
                let order = r.runStep.load(ordering: .relaxed)
                if let (_, prev) = lastRunByToken[r.token], order < prev { throw fail("FIFO order violated") }
                lastRunByToken[r.token] = (r.registeredAt, order)
            }
        }
    }
    // Past every short deadline: each kept one fires (its timer's task
    // cancels the token, and its handler runs right after, unless its
    // `unless:` token came first).
    clock.advance(by: .seconds(2))
    _waitForTimersOnOtherClocks()
    for r in deadlineLog.withLock({ $0 }) {
        if r.fires && !r.released && !eventually({ r.token.isCancelled }) {
            throw fail("a \(r.duration) deadline never fired")
        }
        if r.token.isCancelled && !r.hasUnless && !eventually({ r.runs.load() == 1 }) {
            throw fail("a cancelled deadline's handler ran \(r.runs.load()) times")
        }
        let state = r.token.state
        if r.runs.load() > 1 { throw fail("a deadline's handler ran \(r.runs.load()) times") }
        if r.runs.load() == 1 && state != .cancelled || !r.hasUnless && r.runs.load() == 0 && state == .cancelled {
            throw fail("a deadline's handler ran \(r.runs.load()) times, token \(state)")
        }
        if r.early.load() != 0 { throw fail("a \(r.duration) deadline fired early") }
        if r.cancelWon.load() == 1 && !r.hasUnless && r.ranAfterCancelWon.load() != 1 {
            throw fail("tryCancel() won but the handler had not run on its return")
        }
        if r.released && state == .stillCancellable { throw fail("a released deadline source's token is still cancellable") }
        if !r.released && !r.fires && r.cancelWon.load() == 0 && state != .stillCancellable {
            throw fail("a \(r.duration) deadline is \(state) without a cancel")
        }
    }
    for (i, s) in sentinels.enumerated() {
        let runs = s.runs.load(ordering: .relaxed)
        if runs > 1 || (runs == 1) != (tokens[i].state == .cancelled) {
            throw fail("sentinel of token \(i) ran \(runs) times, token is \(tokens[i].state)")
        }
    }
    for r in thenLog.withLock({ $0 }) {
        let src = futures[r.src], ran = r.ran.load()
        if ran > 1 { throw fail("continuation ran \(ran) times") }
        // Once the continuation can no longer run (it ran, its source is
        // settled, or `unless` came first) its function is freed, even while
        // `unless` can still fail the output.
        let over = src.state == .succeeded || src.state == .failed || src.state == .immortal
            || (r.out.hasFailedWithCancel && ran == 0)
        if over && r.released.load() != 1 {
            throw fail("then continuation of a \(src.state) future still holds its function (output \(r.out))")
        }
        if let u = r.unless {
            // `unless` may have come first: the output failed with
            // CancellationError and the continuation never ran. Otherwise as
            // without it; an immortal source's output stays pending while
            // `unless` can still fire.
            let uState = tokens[u].state
            if r.out.hasFailedWithCancel && ran == 0 {
                if uState != .cancelled && src.state != .failed { throw fail("then(unless:) output failed but its unless is \(uState)") }
                continue
            }
            if uState == .cancelled && src.state != .succeeded && src.state != .failed {
                throw fail("then(unless:) output \(r.out) of a \(src.state) future whose unless was cancelled")
            }
            if src.state == .immortal {
                let expected: FutureState = uState == .immortal ? .immortal : .pending
                if r.out.state != expected { throw fail("then(unless:) output \(r.out) of an immortal future, unless \(uState)") }
                continue
            }
        }
        switch src.state {
        case .succeeded:
            if r.out.result.flatMap({ try? $0.get() }) != src.forceGetResult() + 1 || ran != 1 {
                throw fail("then output \(r.out) does not follow \(src)")
            }
        case .failed: if !r.out.hasFailed { throw fail("then output \(r.out) does not follow \(src)") }
        case .immortal: if r.out.state != .immortal { throw fail("then output \(r.out) of an immortal future") }
        case .pending, .flattening:
            if !r.out.isIncomplete || ran != 0 { throw fail("then output \(r.out) of an incomplete future") }
        }
    }
    for (fi, fj, won) in flattenLog.withLock({ $0 }) where won {
        let a = futures[fi], b = futures[fj]
        switch (a.state, b.state) {
        case (.succeeded, .succeeded): if a.forceGetResult() != b.forceGetResult() { throw fail("collapsed value differs") }
        case (.immortal, .immortal), (.failed, .failed), (.flattening, .pending), (.flattening, .flattening): break
        default: throw fail("future set to another is \(a.state) while its target is \(b.state)")
        }
        if fi == fj && a.state != .immortal { throw fail("future set to itself is \(a.state)") }
    }

    // Dropping the pools (this function's locals) must free every capture.
    for b in boxes { b.source = nil }
    for b in fboxes { b.source = nil }

    // Every input is now completed or immortal, every token settled: every
    // combinator output must be too (none may hang), and follow its inputs.
    func value(_ f: Future<Int>) -> Int? { f.result.flatMap { try? $0.get() } }

    // A Task-bound operation ends (its Task does) with its input's outcome,
    // or with CancellationError once its token is cancelled; never twice.
    for r in taskLog.withLock({ $0 }) {
        let input = futures[r.input]
        if r.deadline != nil && !eventually({ r.token.isCancelled }) { throw fail("\(r.kind): a deadline never fired") }
        if !eventually({ !r.out.isIncomplete }) { throw fail("\(r.kind) still \(r.out.state), its input \(input), token \(r.token.state)") }
        if r.runs.load() > 1 { throw fail("\(r.kind) ran its operation \(r.runs.load()) times") }
        let follows = input.hasResult ? value(r.out) == value(input) : r.out.hasFailed && !r.out.hasFailedWithCancel
        if r.out.hasFailedWithCancel {
            if !r.token.isCancelled { throw fail("\(r.kind) failed with CancellationError, its token is \(r.token.state)") }
        } else if !follows {
            throw fail("\(r.kind) is \(r.out), its input \(input), token \(r.token.state)")
        }
    }
    for c in combinatorLog.withLock({ $0 }) {
        switch c {
        case let .all(a, b, u, out):
            let fa = futures[a], fb = futures[b]
            let unlessCancelled = u.map { tokens[$0].isCancelled } ?? false
            switch out.state {
            case .succeeded:
                if out.forceGetResult() != [value(fa), value(fb)].compactMap({ $0 }) || value(fa) == nil || value(fb) == nil {
                    throw fail("all \(out) does not follow \(fa), \(fb)")
                }
            case .failed:
                if !fa.hasFailed && !fb.hasFailed && !(unlessCancelled && out.hasFailedWithCancel) {
                    throw fail("all failed, no input did and its unless was not cancelled: \(fa), \(fb)")
                }
            case .immortal:
                if fa.state != .immortal && fb.state != .immortal { throw fail("all immortal, no input is: \(fa), \(fb)") }
                // Like a continuation of an immortal future: its unless
                // could still fail it, so it had to wait for that token.
                if unlessCancelled { throw fail("all immortal although its unless was cancelled") }
            case .pending, .flattening: throw fail("all still \(out.state) with settled inputs \(fa), \(fb)")
            }
        case let .race(a, b, out):
            let fa = futures[a], fb = futures[b]
            switch out.state {
            case .succeeded: if out.forceGetResult() != value(fa) && out.forceGetResult() != value(fb) { throw fail("race won with \(out), inputs \(fa), \(fb)") }
            case .failed: if !(fa.hasFailed && fb.hasFailed) { throw fail("race failed with inputs \(fa), \(fb)") }
            case .immortal: if fa.hasResult || fb.hasResult || (fa.hasFailed && fb.hasFailed) { throw fail("race immortal with inputs \(fa), \(fb)") }
            case .pending, .flattening: throw fail("race still \(out.state) with settled inputs \(fa), \(fb)")
            }
        case let .ordered(a, b, u, outs):
            let ins = [futures[a], futures[b]]
            if outs.contains(where: { $0.state == .pending || $0.state == .flattening }) { throw fail("orderedByCompletion left \(outs) pending") }
            // Pool futures never fail: a failure is a cancel by `unless`.
            if let firstCancelled = outs.firstIndex(where: { $0.hasFailed }) {
                guard let u, tokens[u].isCancelled else { throw fail("orderedByCompletion \(outs) failed, its unless was not cancelled") }
                if outs.contains(where: { $0.state == .immortal }) { throw fail("orderedByCompletion \(outs) immortal after its unless was cancelled") }
                if outs[firstCancelled...].contains(where: { !$0.hasFailedWithCancel }) {
                    throw fail("orderedByCompletion \(outs) filled a result after one its unless cancelled")
                }
                // The results filled first hold input values, each input's once.
                var left = ins.compactMap(value)
                for v in outs.compactMap(value) {
                    guard let i = left.firstIndex(of: v) else { throw fail("orderedByCompletion \(outs) holds a value no input has: \(ins)") }
                    left.remove(at: i)
                }
                continue
            }
            let inValues = ins.compactMap(value).sorted(), outValues = outs.compactMap(value).sorted()
            let count: ([Future<Int>], FutureState) -> Int = { fs, st in fs.filter { $0.state == st }.count }
            if inValues != outValues || count(ins, .failed) != count(outs, .failed) || count(ins, .immortal) != count(outs, .immortal) {
                throw fail("orderedByCompletion \(outs) does not match \(ins)")
            }
            if outs[0].state == .immortal && outs[1].state != .immortal { throw fail("orderedByCompletion filled a later slot before an earlier one") }
        case let .untilTimeout(a, u, lifetime, out):
            let fa = futures[a], until = tokens[u]
            guard let l = lifetime.withLock({ $0 }) else {
                if !out.hasFailedWithCancel || !until.isCancelled { throw fail("until-style withTimeout did not run its operation, yet is \(out)") }
                continue
            }
            // The operation's result lasts until `until`: its token ends
            // (cancelled) exactly when `until` was cancelled, whatever came
            // first; a result `until` failed is a cancel.
            if l.isCancelled != until.isCancelled {
                throw fail("until-style withTimeout: the operation's token is \(l.state) while until is \(until.state) (result \(out))")
            }
            switch out.state {
            case .succeeded: if value(out) != value(fa) { throw fail("until-style withTimeout \(out) does not deliver \(fa)") }
            case .failed: if !out.hasFailedWithCancel || !until.isCancelled { throw fail("until-style withTimeout \(out) failed, until is \(until.state)") }
            case .immortal: if fa.state != .immortal || until.isCancelled { throw fail("until-style withTimeout immortal with \(fa), until \(until.state)") }
            case .pending, .flattening: throw fail("until-style withTimeout still \(out.state) with settled inputs")
            }
        case let .timeout(a, u, called, out):
            let fa = futures[a]
            if called.load() > 1 { throw fail("withTimeout ran its operation \(called.load()) times") }
            if called.load() == 0 {
                if !out.hasFailedWithCancel || !tokens[u].isCancelled { throw fail("withTimeout did not run its operation, yet is \(out)") }
                continue
            }
            switch (fa.state, out.state) {
            case (.succeeded, .succeeded): if value(fa) != value(out) { throw fail("withTimeout \(out) does not deliver \(fa)") }
            case (.failed, .failed): break
            case (.immortal, .immortal): if tokens[u].isCancelled { throw fail("withTimeout immortal although its unless was cancelled") }
            case (.immortal, .failed): if !out.hasFailedWithCancel || !tokens[u].isCancelled { throw fail("withTimeout \(out) with an immortal operation") }
            default: throw fail("withTimeout \(out) does not follow its operation \(fa)")
            }
        case let .flatThen(a, b, u, ran, out):
            let fa = futures[a], fb = futures[b], runs = ran.load()
            if runs > 1 { throw fail("collapsing then ran \(runs) times") }
            if out.state == .pending || out.state == .flattening { throw fail("collapsing then still \(out.state) with settled inputs \(fa), \(fb)") }
            if runs == 0, let u, out.hasFailedWithCancel {
                // `unless` came first (or the input became immortal and then `unless` fired).
                if !tokens[u].isCancelled { throw fail("collapsing then(unless:) failed with cancel but its unless is \(tokens[u].state)") }
                continue
            }
            switch fa.state {
            case .succeeded:
                if runs != 1 { throw fail("collapsing then of \(fa) ran \(runs) times, output \(out)") }
                if out.state != fb.state || value(out) != value(fb) { throw fail("collapsing then \(out) does not follow the returned \(fb)") }
            case .failed: if !out.hasFailed || runs != 0 { throw fail("collapsing then \(out) of \(fa)") }
            case .immortal: if out.state != .immortal || runs != 0 { throw fail("collapsing then \(out) of an immortal future") }
            case .pending, .flattening: throw fail("pool future \(fa) still \(fa.state)")
            }
        case let .flatThenFresh(a, b, c, viaFinally, u, ran, out):
            let fa = futures[a], fb = futures[b], fc = futures[c], runs = ran.load()
            if runs > 1 { throw fail("collapsing then ran \(runs) times") }
            if out.state == .pending || out.state == .flattening { throw fail("collapsing then still \(out.state) with settled inputs \(fa), \(fb), \(fc)") }
            if runs == 0, let u, out.hasFailedWithCancel {
                if !tokens[u].isCancelled { throw fail("collapsing then(unless:) failed with cancel but its unless is \(tokens[u].state)") }
                continue
            }
            // What `out` takes on: fa's failure or immortality, else fb's
            // (only its immortality via `finally`), else fc's outcome (a
            // failure recovered as -7 via `finally`'s `catch`).
            let decisive = fa.state != .succeeded ? fa
                : viaFinally ? (fb.state == .immortal ? fb : fc)
                : fb.state != .succeeded ? fb : fc
            if (fa.state == .succeeded) != (runs == 1) { throw fail("collapsing then of \(fa) ran \(runs) times, output \(out)") }
            if viaFinally, fa.state == .succeeded, fb.state != .immortal, fc.state == .failed {
                if value(out) != -7 { throw fail("collapsing then \(out) via finally/catch does not recover \(fc) as -7") }
                continue
            }
            switch decisive.state {
            case .succeeded:
                if !out.hasResult || value(out) != value(decisive) { throw fail("collapsing then \(out) does not follow \(fa), \(fb), \(fc)") }
            case .failed:
                if !out.hasFailed { throw fail("collapsing then \(out) does not fail with \(fa), \(fb), \(fc)") }
            case .immortal:
                if out.state != .immortal { throw fail("collapsing then \(out) of immortal \(fa), \(fb), \(fc)") }
            case .pending, .flattening: throw fail("pool future \(decisive) still \(decisive.state)")
            }
        }
    }
}

