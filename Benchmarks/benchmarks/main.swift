// swift run -c release benchmarks [--quick] [--format json] [--filter SUBSTRING] [--impl NAME] [--svg PATH]
//                                  [--count SCENARIO IMPL ITERATIONS]
//
// One run compares, per scenario: `lockfree` (CollapsingFutures), the same
// API under a lock per token (`dispatch-lock`: serial DispatchQueue as the
// original's @synchronized; `mutex`: Synchronization.Mutex), swift-nio
// promises, Swift concurrency where it has a counterpart, and `c-floor`: the C
// core alone with a no-op C handler, measured in a process of its own (the
// core calls up through one table per process, cf_upcalls.h). Times are medians of repetitions (with
// min–max); allocations are counted by a malloc interposer linked into this
// executable, in a separate pass; ratios are peer / lockfree in this run.
// The contended scenarios run at 1, 2, 4, … threads up to the core count;
// memory figures come from fresh processes (MemoryProbes.swift); every
// report names the machine (Machine.swift); `--svg` also draws the ratios
// (RatioChart.swift).
import BenchBodiesDL
import BenchBodiesLF
import BenchBodiesMX
import BenchBodiesOC
import BenchKit
import CBenchSupport
import CCollapsingFutures
import CollapsingFutures
import Dispatch
import Foundation
import NIOCore
import NIOEmbedded
import NIOPosix
import Synchronization

// MARK: options

var quick = false, json = false, filter: String?, implFilter: String?, memoryProbe: String?, svgPath: String?
var floorScenario: String?
/// `--count`: one body run for a fixed count (`make budget`).
var countRun: (scenario: String, impl: String, iterations: Int)?
do {
    var args = CommandLine.arguments.dropFirst()
    while let a = args.popFirst() {
        switch a {
        case "--quick": quick = true
        case "--format": json = args.popFirst() == "json"
        case "--filter": filter = args.popFirst()
        case "--impl": implFilter = args.popFirst()
        case "--memory-probe": memoryProbe = args.popFirst()
        case "--c-floor": floorScenario = args.popFirst()
        case "--svg": svgPath = args.popFirst()
        case "--count":
            guard let s = args.popFirst(), let i = args.popFirst(), let n = args.popFirst().flatMap({ Int($0) }) else { exit(2) }
            countRun = (s, i, n)
        case "-h", "--help":
            print("usage: benchmarks [--quick] [--format text|json] [--filter SCENARIO-SUBSTRING] [--impl NAME] [--svg PATH]")
            print("       benchmarks --count SCENARIO IMPL ITERATIONS")
            exit(0)
        default:
            FileHandle.standardError.write("unknown argument \(a)\n".data(using: .utf8)!)
            exit(2)
        }
    }
}

// A child process measuring one memory figure: prints the bytes grown.
if let id = memoryProbe {
    guard let probe = MemoryProbe.all(quick: quick).first(where: { $0.id == id }) else { exit(2) }
    print(probe.grow(probe.items))
    exit(0)
}

// A child process measuring one scenario's C floor: the core's callbacks are
// the floor's here, given before any token is used.
if floorScenario != nil || countRun?.impl == "c-floor" { cfb_floor_use() }

// glibc skips atomics while a process has a single thread: keep a second one alive.
let keepAlive = DispatchSemaphore(value: 0)
Thread.detachNewThread { keepAlive.wait() }

// MARK: measurement

let impls = ["lockfree", "dispatch-lock", "mutex", "nio", "opencombine", "swift-concurrency", "c-floor"]

struct Scenario {
    let name: String
    let summary: String
    let opsPerIteration: Int
    /// Iterations per timed repetition (full run); quick runs use a tenth.
    let iterations: Int
    let bodies: [String: Body]
    var extra: [String: String] = [:]
}

struct Figure {
    let scenario: String, impl: String
    let median: Double, min: Double, max: Double
    let allocs: Double
}

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

@MainActor func measure(_ s: Scenario, _ impl: String, _ body: Body) -> Figure {
    let iterations = max(1, quick ? s.iterations / 10 : s.iterations)
    let reps = quick ? 3 : 7
    body(max(1, iterations / 10))   // warm up
    var samples: [Double] = []
    for _ in 0..<reps {
        let t0 = now()
        body(iterations)
        let t1 = now()
        samples.append(Double(t1 - t0) / Double(iterations * s.opsPerIteration))
    }
    samples.sort()
    // Allocations: a separate, counted pass.
    let allocIterations = max(1, min(iterations, 2000))
    cfb_count_allocs(1)
    body(allocIterations)
    cfb_count_allocs(0)
    let allocs = Double(cfb_alloc_count()) / Double(allocIterations * s.opsPerIteration)
    return Figure(scenario: s.name, impl: impl, median: samples[samples.count / 2],
                  min: samples.first!, max: samples.last!, allocs: allocs)
}

/// Runs `body` inside a Task and waits for it (for async counterparts).
func blockingAsync(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task.detached { await body(); done.signal() }
    done.wait()
}


// MARK: peers

let embedded = EmbeddedEventLoop()
let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let loop = group.next()

func nioThenSet(steps: Int) -> Body {
    { it in
        for i in 0..<it {
            let p = embedded.makePromise(of: Int.self)
            var f = p.futureResult
            for _ in 0..<steps { f = f.map { $0 + 1 } }
            f.whenSuccess { _ in }
            p.succeed(i)
        }
    }
}

let nioPromise: Body = { it in
    for i in 0..<it {
        let p = embedded.makePromise(of: Int.self)
        p.futureResult.whenSuccess { _ in }
        p.succeed(i)
    }
}

let nioInLoop: Body = { it in
    try! loop.submit {
        for i in 0..<it {
            let p = loop.makePromise(of: Int.self)
            p.futureResult.whenSuccess { _ in }
            p.succeed(i)
        }
    }.wait()
}

let nioFlatten: Body = { it in
    for i in 0..<it {
        let p = embedded.makePromise(of: Int.self), inner = embedded.makePromise(of: Int.self)
        let f = p.futureResult.flatMap { _ in inner.futureResult }
        f.whenSuccess { _ in }
        p.succeed(i)
        inner.succeed(i)
    }
}

let nioCatchStep: Body = { it in
    let error: any Error = CancellationError()
    for i in 0..<it {
        let p = embedded.makePromise(of: Int.self), inner = embedded.makePromise(of: Int.self)
        let f = p.futureResult.flatMapError { _ in inner.futureResult }
        f.whenSuccess { _ in }
        p.fail(error)
        inner.succeed(i)
    }
}

/// Promises made on the loop, completed from this thread: each callback hops.
let nioOffLoop: Body = { it in
    let done = DispatchSemaphore(value: 0)
    let remaining = Atomic<Int>(it)
    let promises = (0..<it).map { _ in loop.makePromise(of: Int.self) }
    for p in promises {
        p.futureResult.whenSuccess { _ in
            if remaining.subtract(1, ordering: .relaxed).newValue == 0 { done.signal() }
        }
    }
    for (i, p) in promises.enumerated() { p.succeed(i) }
    done.wait()
}

/// Ours for the same shape: completed from this thread, continuation on a queue.
let offLoopQueue = DispatchQueue(label: "bench.offloop")
let lockfreeOffThread: Body = { it in
    let done = DispatchSemaphore(value: 0)
    let remaining = Atomic<Int>(it)
    let sources = (0..<it).map { _ in FutureSource<Int>() }
    for s in sources {
        s.future.thenDo(on: offLoopQueue) { _ in
            if remaining.subtract(1, ordering: .relaxed).newValue == 0 { done.signal() }
        }
    }
    for (i, s) in sources.enumerated() { s.trySetResult(i) }
    done.wait()
}

let continuationResume: Body = { it in
    blockingAsync {
        for i in 0..<it {
            let v = await withCheckedContinuation { (c: CheckedContinuation<Int, Never>) in c.resume(returning: i) }
            precondition(v == i)
        }
    }
}

let cancellationHandler: Body = { it in
    blockingAsync {
        for _ in 0..<it {
            await withTaskCancellationHandler { } onCancel: { }
        }
    }
}

let taskCreateCancel: Body = { it in
    blockingAsync {
        for _ in 0..<it {
            let t = Task { await Task.yield() }
            t.cancel()
            await t.value
        }
    }
}

let cFloorChurn: Body = { it in
    let t = cfb_token_new()
    cfb_churn(t, it)
    cfb_token_free(t)
}

struct TokenPointer: @unchecked Sendable { let p: UnsafeMutablePointer<cf_token> }
func cFloorContended(_ threads: Int) -> Body {
    { it in
        let t = TokenPointer(p: cfb_token_new())
        onThreads(threads + 1) { i in
            if i == threads { usleep(20); cfb_token_cancel(t.p) } else { for _ in 0..<it / threads { cfb_register_noop(t.p) } }
        }
        cfb_token_free(t.p)
    }
}

// MARK: scenarios

let lf = BenchBodiesLF.makeAPI(), dl = BenchBodiesDL.makeAPI(), mx = BenchBodiesMX.makeAPI()

@MainActor func three(_ pick: (API) -> Body) -> [String: Body] {
    ["lockfree": pick(lf), "dispatch-lock": pick(dl), "mutex": pick(mx)]
}

func merge(_ a: [String: Body], _ b: [String: Body]) -> [String: Body] { a.merging(b) { x, _ in x } }

var scenarios: [Scenario] = []
for n in [1, 16, 1024] {
    scenarios.append(Scenario(
        name: "token register+cancel x\(n)", summary: "a new source, \(n) handlers registered, then cancelled (per handler)",
        opsPerIteration: n, iterations: max(100, 200_000 / n),
        bodies: merge(three { $0.registerCancel(n) }, ["c-floor": { it in for _ in 0..<it { cfb_register_cancel(Int32(n)) } }])))
}
var churnPeaks: [String: () -> Int] = [:]
do {
    var bodies: [String: Body] = ["c-floor": cFloorChurn]
    for (name, api) in [("lockfree", lf), ("dispatch-lock", dl), ("mutex", mx)] {
        let (b, peak) = api.churn()
        bodies[name] = b
        churnPeaks[name] = peak
    }
    scenarios.append(Scenario(name: "register/remove churn", summary: "register then remove one handler on a long-lived token (per pair); peak linked nodes reported",
                              opsPerIteration: 1, iterations: 200_000, bodies: bodies))
}
scenarios.append(Scenario(name: "unless churn", summary: "whenCancelled(unless: longLived) then remove (per pair); swift-concurrency: withTaskCancellationHandler, no cancel",
                          opsPerIteration: 1, iterations: 200_000,
                          bodies: merge(three { $0.unlessChurn }, ["swift-concurrency": cancellationHandler])))
scenarios.append(Scenario(name: "future then+set", summary: "source, one then, set (per future); nio: EmbeddedEventLoop promise + map + succeed; swift-concurrency: checked continuation resume",
                          opsPerIteration: 1, iterations: 200_000,
                          bodies: merge(three { $0.thenSet }, ["nio": nioThenSet(steps: 1), "opencombine": OpenCombineBodies.thenSet,
                                                                "swift-concurrency": continuationResume])))
scenarios.append(Scenario(name: "promise+handler+set", summary: "nio: makePromise + whenSuccess + succeed (Embedded; in-loop MTELG as nio-loop); ours: then+set",
                          opsPerIteration: 1, iterations: 200_000,
                          bodies: ["lockfree": lf.thenSet, "nio": nioPromise, "nio-loop": nioInLoop]))
scenarios.append(Scenario(name: "promise+thenDo+set", summary: "source + thenDo + set, no output future (per future); nio: makePromise + whenSuccess + succeed; opencombine: Future + sink",
                          opsPerIteration: 1, iterations: 200_000,
                          bodies: merge(three { $0.thenDoSet }, ["nio": nioPromise, "nio-loop": nioInLoop, "opencombine": OpenCombineBodies.sinkSet])))
scenarios.append(Scenario(name: "then chain x10", summary: "source, 10 chained thens, set (per then step)",
                          opsPerIteration: 10, iterations: 50_000,
                          bodies: merge(three { $0.thenChain10 }, ["nio": nioThenSet(steps: 10), "opencombine": OpenCombineBodies.chain10])))
scenarios.append(Scenario(name: "flatten step", summary: "a continuation returning a pending future, then both set (per step); nio: flatMap",
                          opsPerIteration: 1, iterations: 100_000,
                          bodies: merge(three { $0.flatten }, ["nio": nioFlatten, "opencombine": OpenCombineBodies.flatten])))
scenarios.append(Scenario(name: "catch retry step", summary: "a failed future's catch returning a pending future, then that one set (per step); nio: flatMapError",
                          opsPerIteration: 1, iterations: 100_000,
                          bodies: merge(three { $0.catchStep }, ["nio": nioCatchStep])))
let outwardLevels = 2_000
scenarios.append(Scenario(name: "flatten chain built outwards", summary: "each new future set to the previous one, \(outwardLevels) levels, then the innermost set (per level; quadratic cycle detection shows as growth with depth)",
                          opsPerIteration: outwardLevels, iterations: 20, bodies: three { $0.outwardChain(outwardLevels) }))
scenarios.append(Scenario(name: "off-thread completion", summary: "complete from this thread, continuation on another thread (per future); nio: promise of a loop completed off it",
                          opsPerIteration: 1, iterations: 50_000,
                          bodies: ["lockfree": lockfreeOffThread, "nio": nioOffLoop]))
// How each implementation scales: 1, 2, 4, … threads up to the core count
// (and the core count itself when it is not a power of two).
let threadCounts = Array(Set(sequence(first: 1) { $0 * 2 <= Machine.current.cores ? $0 * 2 : nil } + [Machine.current.cores])).sorted()
for n in threadCounts {
    scenarios.append(Scenario(name: "contended register, \(n) thread\(n == 1 ? "" : "s")",
                              summary: "\(n) thread\(n == 1 ? "" : "s") registering on one token while one more cancels it (per handler)",
                              opsPerIteration: 1, iterations: 200_000,
                              bodies: merge(three { $0.contendedRegister(n) }, ["c-floor": cFloorContended(n)])))
}
for n in threadCounts {
    scenarios.append(Scenario(name: "contended trySetResult, \(n) thread\(n == 1 ? "" : "s")",
                              summary: "\(n) thread\(n == 1 ? "" : "s") racing trySetResult over the same futures (per future)",
                              opsPerIteration: 1, iterations: 100_000, bodies: three { $0.racingSet(n) }))
}
scenarios.append(Scenario(name: "immortalize x16", summary: "source dropped with 16 handlers registered (per handler)",
                          opsPerIteration: 16, iterations: 20_000, bodies: three { $0.immortalize }))
let lockfreeAll: Body = { it in
    for _ in 0..<it {
        let sources = (0..<1000).map { _ in FutureSource<Int>() }
        let all = Future.all(sources.map(\.future))
        for (i, s) in sources.enumerated() { s.trySetResult(i) }
        precondition(all.hasResult)
    }
}
let nioAll: Body = { it in
    for _ in 0..<it {
        let promises = (0..<1000).map { _ in embedded.makePromise(of: Int.self) }
        let all = EventLoopFuture.whenAllSucceed(promises.map(\.futureResult), on: embedded)
        for (i, p) in promises.enumerated() { p.succeed(i) }
        all.whenSuccess { precondition($0.count == 1000) }
    }
}
scenarios.append(Scenario(name: "all x1000", summary: "Future.all over 1,000 futures, then each set (per input future); nio: whenAllSucceed",
                          opsPerIteration: 1000, iterations: 200,
                          bodies: ["lockfree": lockfreeAll, "nio": nioAll]))
scenarios += deadlineScenarios(quick: quick)
#if GRPC
scenarios += grpcScenarios()
#endif
scenarios.append(Scenario(name: "task create+cancel", summary: "swift-concurrency: Task create + cancel + await (reference)",
                          opsPerIteration: 1, iterations: 20_000, bodies: ["swift-concurrency": taskCreateCancel]))

// `--count SCENARIO IMPL N`: that body for N iterations after a warm-up of
// fixed size; prints the operations run and the allocations they made
// (the interposer). `make budget` runs it under callgrind at two counts:
// the process's start, the set-up and the warm-up cancel out of the
// difference, which leaves the instructions of the operations alone.
if let run = countRun {
    guard let s = scenarios.first(where: { $0.name == run.scenario }), let body = s.bodies[run.impl] else { exit(2) }
    body(max(1, min(1_000, s.iterations / 10)))
    cfb_count_allocs(1)
    body(run.iterations)
    cfb_count_allocs(0)
    print(run.iterations * s.opsPerIteration, cfb_alloc_count())
    exit(0)
}

if let name = floorScenario {
    guard let s = scenarios.first(where: { $0.name == name }), let body = s.bodies["c-floor"] else { exit(2) }
    let f = measure(s, "c-floor", body)
    print(f.median, f.min, f.max, f.allocs)
    exit(0)
}

/// Measures `s`'s C floor in a child process (`--c-floor`); nil if the
/// child failed.
@MainActor func measureFloorInChild(_ s: Scenario) -> Figure? {
    guard let out = childOutput(["--c-floor", s.name] + (quick ? ["--quick"] : [])) else { return nil }
    let v = out.split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
    guard v.count == 4 else { return nil }
    return Figure(scenario: s.name, impl: "c-floor", median: v[0], min: v[1], max: v[2], allocs: v[3])
}

// MARK: memory, each figure in a fresh process

let memory: [(probe: MemoryProbe, bytesPerItem: Double)] = filter == nil && implFilter == nil
    ? MemoryProbe.all(quick: quick).map { probe in
        if !json { FileHandle.standardError.write("memory: \(probe.id)...\n".data(using: .utf8)!) }
        return (probe, probe.measureInChild(quick: quick))
    }
    : []

// MARK: run and report

let columns = impls + ["nio-loop", "dispatch-timer", "grpc"]
var figures: [Figure] = []
for s in scenarios where filter.map({ s.name.contains($0) }) ?? true {
    for impl in columns where implFilter.map({ impl == $0 }) ?? true {
        guard let body = s.bodies[impl] else { continue }
        if !json { FileHandle.standardError.write("\(s.name) / \(impl)...\n".data(using: .utf8)!) }
        if impl == "c-floor" {
            if let f = measureFloorInChild(s) { figures.append(f) }
        } else {
            figures.append(measure(s, impl, body))
        }
    }
}

// Deadlines due together (a full run only, or when asked for by name).
let burstName = "deadlines expiring together"
let bursts: [BurstFigures] = implFilter == nil && (filter.map { burstName.contains($0) } ?? true)
    ? [(quick ? 100_000 : 1_000_000, Duration.zero), (quick ? 10_000 : 100_000, .zero),
       (quick ? 2_000 : 20_000, .milliseconds(200))].map { n, blocking in
        if !json { FileHandle.standardError.write("\(burstName), \(n)...\n".data(using: .utf8)!) }
        return deadlineBurst(n, blocking: blocking)
    }
    : []

@MainActor func fig(_ s: String, _ i: String) -> Figure? { figures.first { $0.scenario == s && $0.impl == i } }
func fmt(_ x: Double) -> String { x >= 100 ? String(format: "%.0f", x) : String(format: "%.1f", x) }

if let svgPath {
    let date = ISO8601DateFormatter().string(from: Date())
    let chart = RatioChart(scenarios: scenarios.map(\.name), peers: columns.filter { $0 != "lockfree" },
                           ratio: { s, p in fig(s, p).flatMap { f in fig(s, "lockfree").map { f.median / $0.median } } },
                           caption: "\(Machine.current.description), \(date)\(quick ? ", --quick" : "")")
    do {
        try chart.svg.write(toFile: svgPath, atomically: true, encoding: .utf8)
    } catch {
        FileHandle.standardError.write("cannot write \(svgPath): \(error)\n".data(using: .utf8)!)
        exit(1)
    }
}

if json {
    var out: [[String: Any]] = []
    for f in figures {
        var o: [String: Any] = ["scenario": f.scenario, "impl": f.impl, "ns_per_op": f.median,
                                "ns_min": f.min, "ns_max": f.max, "allocs_per_op": f.allocs]
        if let base = fig(f.scenario, "lockfree") { o["ratio_to_lockfree"] = f.median / base.median }
        if f.scenario == "register/remove churn", let p = churnPeaks[f.impl] { o["peak_linked_nodes"] = p() }
        out.append(o)
    }
    let memoryFigures: [[String: Any]] = memory.map { m in
        ["probe": m.probe.name, "impl": m.probe.impl, "item": m.probe.item, "items": m.probe.items,
         "bytes_per_item": m.bytesPerItem.isNaN ? NSNull() : m.bytesPerItem as Any]
    }
    var document: [String: Any] = ["machine": Machine.current.json, "date": ISO8601DateFormatter().string(from: Date()),
                                   "quick": quick, "figures": out, "memory": memoryFigures]
    document["deadline_bursts"] = bursts.map { b -> [String: Any] in
        ["deadlines": b.deadlines, "blocking_ms": milliseconds(b.blocking),
         "fired_per_second": b.firedPerSecond.map { $0 as Any } ?? NSNull(),
         "late_median_ms": b.lateMedianMs, "late_p99_ms": b.lateP99Ms, "late_max_ms": b.lateMaxMs, "early": b.early,
         "probe_cancel_late_ms": b.probeCancelLateMs, "probe_handler_late_ms": b.probeHandlerLateMs,
         "peak_threads": b.peakThreads]
    }
    let data = try! JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
    print(String(data: data, encoding: .utf8)!)
} else {
    let used = columns.filter { c in figures.contains { $0.impl == c } }
    let names = scenarios.map(\.name).filter { n in figures.contains { $0.scenario == n } }
    @MainActor func table(_ title: String, _ cell: (Figure) -> String) {
        print("\n\(title)")
        let header = ["scenario"] + used
        var rows = [header]
        for n in names { rows.append([n] + used.map { i in fig(n, i).map(cell) ?? "-" }) }
        let widths = header.indices.map { c in rows.map { $0[c].count }.max()! }
        for (k, r) in rows.enumerated() {
            print("| " + r.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: " | ") + " |")
            if k == 0 { print("|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|") }
        }
    }
    print("CollapsingFutures benchmarks — \(ISO8601DateFormatter().string(from: Date())), \(Machine.current.description)\(quick ? ", --quick" : "")")
    table("ns/op, median of repetitions [min–max]") { "\(fmt($0.median)) [\(fmt($0.min))–\(fmt($0.max))]" }
    table("allocations/op (counted by the interposer)") { String(format: "%.2f", $0.allocs) }
    table("ratio to lockfree (peer ns/op ÷ lockfree ns/op; > 1 means lockfree is faster)") { f in
        fig(f.scenario, "lockfree").map { String(format: "%.2f×", f.median / $0.median) } ?? "-"
    }
    if figures.contains(where: { $0.scenario == "register/remove churn" }) {
        print("\npeak linked nodes during register/remove churn: " +
              churnPeaks.keys.sorted().map { "\($0) \(churnPeaks[$0]!())" }.joined(separator: ", "))
    }
    if !memory.isEmpty {
        print("\nresident memory per item (each figure in a fresh process)")
        for m in memory {
            let bytes = m.bytesPerItem.isNaN ? "failed" : "\(String(format: "%.0f", m.bytesPerItem)) bytes per \(m.probe.item)"
            print("- \(m.probe.name), \(m.probe.items) (\(m.probe.impl)): \(bytes)")
        }
    }
    if !bursts.isEmpty { print("\n\(burstName):") }
    for b in bursts { print("- \(b.summary)") }
    print("\nscenarios:")
    for s in scenarios where names.contains(s.name) { print("- \(s.name): \(s.summary)") }
}
keepAlive.signal()
