// Every kind of registration under every kind of cancellation (API.md,
// "Registrations that stop mattering"): one table of registration kinds,
// one of cancellations, and every pair of them run as one cell.
//
// Each cell registers under a token `t`, which the cancellation then
// cancels or makes immortal, and checks that the registration ends once, as
// API.md says for that pair, that nothing it ran ran twice, and that what it
// captured is freed (counted by deinit).
import CollapsingFutures
import CollapsingFuturesTesting
import Foundation
import Synchronization
import Testing
import TestSupport

/// What a registration captures: its deinit and its runs are counted.
final class Probe: Sendable {
    let deinits: Counter
    let runs: Counter
    init(_ deinits: Counter, _ runs: Counter) { self.deinits = deinits; self.runs = runs }
    deinit { deinits.increment() }
    func ran() { runs.increment() }
}

/// How a registration's output ended.
enum Ending: Hashable, CustomStringConvertible {
    case value(Int), cancelled, timedOut, immortal, failed

    init?(_ f: Future<Int>) {
        if f.state == .immortal { self = .immortal; return }
        switch f.result {
        case nil: return nil
        case .success(let v): self = .value(v)
        case .failure(let e) where e is CancellationError: self = .cancelled
        case .failure(let e) where e is TimeoutError: self = .timedOut
        case .failure: self = .failed
        }
    }

    var description: String {
        switch self {
        case .value(let v): "value(\(v))"
        case .cancelled: "CancellationError"
        case .timedOut: "TimeoutError"
        case .immortal: "immortal"
        case .failed: "another failure"
        }
    }
}

/// A registration made under `t`: its outcome as a future, and what
/// completes what it waits on besides `t` (its input, its operation, its
/// own clock), which a cell calls when `t` does not stop it, and once more
/// at its end (changing nothing by then).
struct Registered: Sendable {
    let output: Future<Int>
    let finish: @Sendable () -> Void
}

/// A kind of registration. `waitsOnToken`: a handler of `t`, which a cancel
/// runs (`value(1)`) and immortality discards (`immortal`). Otherwise `t` is
/// its `unless`/`until`: a cancel stops it (`whenStopped`), and under an
/// immortal `t` it ends as it would without one once finished (`value(1)`).
struct RegistrationKind: Sendable, CustomTestStringConvertible {
    let name: String
    let waitsOnToken: Bool
    let whenStopped: Ending
    let register: @Sendable (_ t: CancelToken, _ probe: Probe) -> Registered
    var testDescription: String { name }

    /// A handler of `t`: it sets its output, which its release unrun makes
    /// immortal.
    static func handler(_ name: String, _ register: @escaping @Sendable (CancelToken, Probe, FutureSource<Int>) -> Void) -> Self {
        Self(name: name, waitsOnToken: true, whenStopped: .value(1)) { t, p in
            let s = FutureSource<Int>()
            register(t, p, s)
            return Registered(output: s.future) {}
        }
    }

    /// A registration on a pending input, which `finish` sets to 1.
    static func onInput(_ name: String, whenStopped: Ending = .cancelled,
                        failing: Bool = false,
                        _ register: @escaping @Sendable (Future<Int>, CancelToken, Probe) -> Future<Int>) -> Self {
        Self(name: name, waitsOnToken: false, whenStopped: whenStopped) { t, p in
            let input = FutureSource<Int>()
            let output = register(input.future, t, p)
            return Registered(output: output) { failing ? input.trySetFailure(TestError()) : input.trySetResult(1) }
        }
    }

    /// An operation (its token, its probe, and a gate `finish` sets to 1)
    /// under a combinator on a clock of its own, which `finish` never
    /// advances.
    static func operation(_ name: String,
                          _ register: @escaping @Sendable (CancelToken, ManualClock,
                                                           @escaping @Sendable (CancelToken) -> Future<Int>) -> Future<Int>) -> Self {
        Self(name: name, waitsOnToken: false, whenStopped: .cancelled) { t, p in
            let gate = FutureSource<Int>()
            let gateFuture = gate.future
            let output = register(t, ManualClock()) { token in
                p.ran()
                return gateFuture.unless(token)
            }
            return Registered(output: output) { gate.trySetResult(1) }
        }
    }

    /// A Task bound to `t`, awaiting a gate `finish` sets to 1.
    static func task(_ name: String, _ register: @escaping @Sendable (CancelToken, Probe, Future<Int>) -> Future<Int>) -> Self {
        Self(name: name, waitsOnToken: false, whenStopped: .cancelled) { t, p in
            let gate = FutureSource<Int>()
            return Registered(output: register(t, p, gate.future)) { gate.trySetResult(1) }
        }
    }

    static let all: [RegistrationKind] = [
        // Handlers of the token.
        .handler("whenCancelled") { t, p, s in t.whenCancelled { p.ran(); s.trySetResult(1) } },
        .handler("whenCancelled(on: queue)") { t, p, s in t.whenCancelled(on: .global()) { p.ran(); s.trySetResult(1) } },
        .handler("whenCancelled(weak:)") { t, p, s in
            t.whenCancelled(weak: p) { p in p.ran(); s.trySetResult(1) }
            // The weak object lives as long as the handler could run.
            t.whenCancelled { withExtendedLifetime(p) {} }
        },
        .handler("await cancelled()") { t, p, s in
            Task { if await t.cancelled() { p.ran(); s.trySetResult(1) } }
        },
        .handler("CancelTokenSource(until:)") { t, p, s in
            let leaf = CancelTokenSource(until: t)
            leaf.token.whenCancelled { p.ran(); s.trySetResult(1) }
            // The leaf lives as long as `t` can cancel it.
            t.whenCancelled { withExtendedLifetime(leaf) {} }
        },
        // `t` as `unless`, on a token or a pending input.
        Self(name: "whenCancelled(unless:)", waitsOnToken: false, whenStopped: .immortal) { t, p in
            let s = FutureSource<Int>()
            let other = CancelTokenSource()
            other.token.whenCancelled(unless: t) { p.ran(); s.trySetResult(1) }
            return Registered(output: s.future) { other.cancel() }
        },
        .onInput("then(unless:)") { f, t, p in f.then(unless: t) { p.ran(); return $0 } },
        .onInput("then(unless:) returning a future") { f, t, p in f.then(unless: t) { v -> Future<Int> in p.ran(); return .succeeded(v) } },
        .onInput("catch(unless:)", failing: true) { f, t, p in f.catch(unless: t) { _ in p.ran(); return 1 } },
        .onInput("finally(unless:)") { f, t, p in f.finally(unless: t) { f in p.ran(); return f.forceGetResult() } },
        .onInput("thenDo(unless:)", whenStopped: .immortal) { f, t, p in
            let s = FutureSource<Int>()
            f.thenDo(unless: t) { p.ran(); s.trySetResult($0) }
            return s.future
        },
        .onInput("catchDo(unless:)", whenStopped: .immortal, failing: true) { f, t, p in
            let s = FutureSource<Int>()
            f.catchDo(unless: t) { _ in p.ran(); s.trySetResult(1) }
            return s.future
        },
        .onInput("finallyDo(on: queue, unless:)", whenStopped: .immortal) { f, t, p in
            let s = FutureSource<Int>()
            f.finallyDo(on: .global(), unless: t) { _ in p.ran(); s.trySetResult(1) }
            return s.future
        },
        .onInput("thenDo(weak:unless:)", whenStopped: .immortal) { f, t, p in
            let s = FutureSource<Int>()
            f.thenDo(unless: t, weak: p) { p, v in p.ran(); s.trySetResult(v) }
            f.thenDo { _ in withExtendedLifetime(p) {} }
            return s.future
        },
        .onInput("always(unless:)") { f, t, p in f.always(unless: t) { _ in p.ran() } },
        .onInput("unless(_:)") { f, t, p in f.unless(t).then { p.ran(); return $0 } },
        .onInput("and(_:unless:)") { f, t, p in f.and(Future<Int>.succeeded(0), unless: t).then { p.ran(); return $0.0 } },
        .onInput("all(unless:)") { f, t, p in Future.all([f], unless: t).then { p.ran(); return $0[0] } },
        .onInput("allSettled(unless:)") { f, t, p in
            Future.allSettled([f], unless: t).then { p.ran(); return $0[0].forceGetResult() }
        },
        .onInput("allSettledResults(unless:)") { f, t, p in
            Future.allSettledResults([f], unless: t).then { p.ran(); return try $0[0].get() }
        },
        .onInput("orderedByCompletion(unless:)") { f, t, p in [f].orderedByCompletion(unless: t)[0].then { p.ran(); return $0 } },
        .onInput("timeout(_:unless:)") { f, t, p in f.timeout(.seconds(1), unless: t, clock: ManualClock()).then { p.ran(); return $0 } },
        Self(name: "FutureSource(until:)", waitsOnToken: false, whenStopped: .cancelled) { t, p in
            let s = FutureSource<Int>(until: t)
            return Registered(output: s.future.then { p.ran(); return $0 }) { s.trySetResult(1) }
        },
        Self(name: "delayed(by:unless:)", waitsOnToken: false, whenStopped: .cancelled) { t, p in
            let clock = ManualClock()
            let output = Future.delayed(1, by: .seconds(1), unless: t, clock: clock).then { p.ran(); return $0 }
            return Registered(output: output) { clock.advance(by: .seconds(1)) }
        },
        // Operations under combinators, `t` as `until`/`unless`.
        .operation("withTimeout(until:)") { t, clock, op in Future.withTimeout(.seconds(1), until: t, clock: clock, op) },
        .operation("withTimeout(unless:)") { t, clock, op in Future.withTimeout(.seconds(1), unless: t, clock: clock, op) },
        .operation("race(until:)") { t, _, op in Future.race([op], until: t) },
        .operation("retrying(baseTimeout:until:)") { t, clock, op in
            Future.retrying(upTo: 2, baseTimeout: .seconds(1), until: t, clock: clock, op)
        },
        .operation("retrying(delay:until:)") { t, clock, op in
            Future.retrying(upTo: 2, delay: .seconds(1), until: t, clock: clock, op)
        },
        // The four Task bindings, and an await in each.
        .task("Future(until:)") { t, p, gate in
            Future(until: t) { p.ran(); return try await gate.get() }
        },
        .task("Task(until:)") { t, p, gate in
            let s = FutureSource<Int>()
            Task(until: t) {
                p.ran()
                do { s.trySetResult(try await gate.get()) } catch { s.trySetFailure(error) }
            }
            return s.future
        },
        .task("withCancelToken") { t, p, gate in
            Future(until: t) {
                try await withCancelToken { token in
                    p.ran()
                    return try await Future(until: token) { try await gate.get() }.get()
                }
            }
        },
        Self(name: "sequence.until", waitsOnToken: false, whenStopped: .cancelled) { t, p in
            let (stream, continuation) = AsyncStream<Int>.makeStream()
            let output = Future<Int> {
                var last = 0
                for await v in stream.until(t) { last = v }
                p.ran()
                if last == 0 { throw CancellationError() }
                return last
            }
            return Registered(output: output) { continuation.yield(1); continuation.finish() }
        },
    ]
}

/// A token under test and what cancels it (or lets it become immortal).
final class Trigger: Sendable {
    let token: CancelToken
    let fire: @Sendable () -> Void
    /// Its sources, held until the cell ends (but for a released one).
    let holds: [AnyObject & Sendable]
    init(_ token: CancelToken, holding holds: [AnyObject & Sendable], fire: @escaping @Sendable () -> Void = {}) {
        self.token = token
        self.holds = holds
        self.fire = fire
    }
}

struct Cancellation: Sendable, CustomTestStringConvertible {
    enum Effect { case cancels, releases, racesCompletion }
    let name: String
    let effect: Effect
    let make: @Sendable () -> Trigger
    var testDescription: String { name }

    /// A source cancelled by hand.
    static func byHand(_ name: String, _ effect: Effect = .cancels,
                       _ fire: @escaping @Sendable (CancelTokenSource) -> Void) -> Self {
        Self(name: name, effect: effect) {
            let s = CancelTokenSource()
            return Trigger(s.token, holding: [s]) { fire(s) }
        }
    }

    static func deadline(_ name: String, _ effect: Effect = .cancels, _ make: @escaping @Sendable () -> CancelTokenSource,
                         then fire: @escaping @Sendable () -> Void = {}) -> Self {
        Self(name: name, effect: effect) {
            let s = make()
            return Trigger(s.token, holding: [s], fire: fire)
        }
    }

    static let all: [Cancellation] = [
        .byHand("by hand") { $0.cancel() },
        .byHand("by hand on another thread") { s in Thread.detachNewThread { s.cancel() } },
        .deadline("ContinuousClock deadline") { CancelTokenSource(cancellingAfter: .milliseconds(1)) },
        .deadline("SuspendingClock deadline") { CancelTokenSource(cancellingAfter: .milliseconds(1), clock: SuspendingClock()) },
        Self(name: "ManualClock deadline", effect: .cancels) {
            let clock = ManualClock()
            let s = CancelTokenSource(cancellingAfter: .seconds(1), clock: clock)
            return Trigger(s.token, holding: [s, clock]) { clock.advance(by: .seconds(1)) }
        },
        Self(name: "any(deadline, source)", effect: .cancels) {
            let a = CancelTokenSource(cancellingAfter: .milliseconds(1)), b = CancelTokenSource()
            return Trigger(.any(a.token, b.token), holding: [a, b])
        },
        Self(name: "all(source, source on another thread)", effect: .cancels) {
            let a = CancelTokenSource(), b = CancelTokenSource()
            return Trigger(.all(a.token, b.token), holding: [a, b]) {
                a.cancel()
                Thread.detachNewThread { b.cancel() }
            }
        },
        Self(name: "its source released", effect: .releases) {
            let s = Locked<CancelTokenSource?>(CancelTokenSource())
            return Trigger(s.withLock { $0!.token }, holding: [s]) { s.withLock { $0 = nil } }
        },
        .byHand("by hand racing the completion", .racesCompletion) { s in Thread.detachNewThread { s.cancel() } },
        .deadline("deadline racing the completion", .racesCompletion,
                  { CancelTokenSource(cancellingAfter: .microseconds(300)) }, then: { usleep(300) }),
    ]

    /// The endings API.md allows `kind` under this cancellation.
    func endings(of kind: RegistrationKind) -> Set<Ending> {
        let cancelled: Ending = kind.waitsOnToken ? .value(1) : kind.whenStopped
        let lived: Ending = kind.waitsOnToken ? .immortal : .value(1)
        switch effect {
        case .cancels: return [cancelled]
        case .releases: return [lived]
        case .racesCompletion: return kind.waitsOnToken ? [cancelled] : [cancelled, .value(1)]
        }
    }
}

@Suite struct RegistrationCrossProduct {
    /// Runs of each cell: enough for the races to meet different
    /// interleavings, few enough for 300 cells under the sanitizers.
    static let runs = 8

    @Test(arguments: RegistrationKind.all, Cancellation.all)
    func endsOnceAndFreesWhatItCaptured(_ kind: RegistrationKind, _ cancellation: Cancellation) async {
        for _ in 0..<Self.runs {
            let deinits = Counter(), runs = Counter()
            var trigger: Trigger? = cancellation.make()
            let registered = kind.register(trigger!.token, Probe(deinits, runs))
            trigger!.fire()
            if cancellation.effect != .cancels { registered.finish() }
            let output = registered.output
            #expect(await eventually { Ending(output) != nil }, "\(kind.name) under \(cancellation.name): never ended")
            guard let ending = Ending(output) else { return }
            #expect(cancellation.endings(of: kind).contains(ending), "\(kind.name) under \(cancellation.name): \(ending)")
            // What the token stopped may still wait on its input: ending
            // that changes nothing.
            registered.finish()
            #expect(Ending(output) == ending)
            trigger = nil
            #expect(await eventually { deinits.value == 1 }, "\(kind.name) under \(cancellation.name): its capture was not freed")
            #expect(runs.value <= 1, "\(kind.name) under \(cancellation.name): ran \(runs.value) times")
        }
    }
}
