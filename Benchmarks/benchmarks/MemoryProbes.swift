// Memory figures. Each is measured in a fresh process (this executable run
// as `benchmarks --memory-probe NAME`), so memory one figure freed cannot
// absorb another's growth: resident memory grown while the probe's
// structure is alive, divided by its items.
import CollapsingFutures
import Foundation
import NIOCore
import NIOEmbedded

struct MemoryProbe: Sendable {
    let name: String
    let impl: String
    /// What one item is, for the report ("bytes per level").
    let item: String
    let items: Int
    /// Builds the structure and returns the resident bytes it grew by.
    let grow: @Sendable (Int) -> Int

    static func all(quick: Bool) -> [MemoryProbe] {
        let deep = quick ? 100_000 : 1_000_000
        return [
            MemoryProbe(name: "tail-recursive flatten chain", impl: "lockfree", item: "level", items: deep) {
                flattenChainGrowth(depth: $0, viaCatch: false)
            },
            MemoryProbe(name: "catch retry chain", impl: "lockfree", item: "level", items: deep) {
                flattenChainGrowth(depth: $0, viaCatch: true)
            },
            MemoryProbe(name: "retry loop over synchronous failures", impl: "lockfree", item: "level", items: deep,
                        grow: synchronousRetryGrowth),
            MemoryProbe(name: "flatten chain built outwards", impl: "lockfree", item: "level", items: deep,
                        grow: outwardChainGrowth),
            MemoryProbe(name: "pending future with one then", impl: "lockfree", item: "future", items: deep,
                        grow: pendingThenGrowth),
            MemoryProbe(name: "pending future with one then", impl: "nio", item: "future", items: deep,
                        grow: nioPendingMapGrowth),
            MemoryProbe(name: "pending operation under a 30 s timeout", impl: "lockfree", item: "operation", items: deep,
                        grow: pendingTimeoutGrowth),
            MemoryProbe(name: "pending operation under a 30 s timeout", impl: "nio", item: "operation", items: deep,
                        grow: nioPendingTimeoutGrowth),
            MemoryProbe(name: "handler registered on a token", impl: "lockfree", item: "handler", items: deep,
                        grow: tokenHandlerGrowth),
            MemoryProbe(name: "handler registered on a token", impl: "nio", item: "handler", items: deep,
                        grow: nioCallbackGrowth),
        ]
    }

    var id: String { "\(name)/\(impl)" }

    /// Runs this probe in a fresh process (`quick` as the parent was run);
    /// resident bytes grown per item, NaN if the child failed.
    func measureInChild(quick: Bool) -> Double {
        let out = childOutput(["--memory-probe", id] + (quick ? ["--quick"] : []))
        let grown = out.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? -1
        return grown >= 0 ? Double(grown) / Double(items) : .nan
    }
}

/// Runs this executable again with `arguments`, in a fresh process: what it
/// prints, or nil if it could not start or did not exit with 0.
func childOutput(_ arguments: [String]) -> String? {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    p.arguments = arguments
    let out = Pipe()
    p.standardOutput = out
    guard (try? p.run()) != nil else { return nil }
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return p.terminationStatus == 0 ? String(decoding: data, as: UTF8.self) : nil
}

/// Resident memory now (/proc/self/statm: size resident shared ..., in pages).
func residentBytes() -> Int {
    let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
    let fields = statm.split(separator: " ")
    return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
}

/// The chain tail-recursive retry code makes (each continuation returns the
/// next, still pending, future), driven from the innermost level out; the
/// growth when the innermost level is reached (every level still alive is
/// alive then). `viaCatch`: each level is a failed attempt whose collapsing
/// `catch` returns the next (the README's `fetchWithRetry`); otherwise a
/// succeeded step whose collapsing `then` does.
@Sendable func flattenChainGrowth(depth: Int, viaCatch: Bool) -> Int {
    final class Steps: @unchecked Sendable { var pending: [FutureSource<Int>] = []; var deepest = 0 }
    let steps = Steps()  // holds at most the one pending level
    let error: any Error = CancellationError()
    let before = residentBytes()
    @Sendable func loop(_ n: Int) -> Future<Int> {
        if n == 0 { steps.deepest = residentBytes(); return .succeeded(depth) }
        let s = FutureSource<Int>()
        steps.pending.append(s)
        return viaCatch ? s.future.catch { (_: any Error) -> Future<Int> in loop(n - 1) }
                        : s.future.then { (_: Int) -> Future<Int> in loop(n - 1) }
    }
    let f = loop(depth)
    while let s = steps.pending.popLast() { if viaCatch { s.trySetFailure(error) } else { s.trySetResult(0) } }
    precondition(f.forceGetResult() == depth)
    return steps.deepest - before
}

/// The README's retry loop when the call it retries fails synchronously (a
/// cached error, a validation failure): `fetch(attempt)` has failed already
/// until `attempt` reaches `depth`. It runs inline in bounded batches
/// (Threading.md, "Work started inside a handler", rule 4); the growth at the
/// innermost level, where every level still kept is alive.
@Sendable func synchronousRetryGrowth(depth: Int) -> Int {
    final class Deepest: @unchecked Sendable { var bytes = 0 }
    let deepest = Deepest()
    let before = residentBytes()
    @Sendable func fetch(_ attempt: Int) -> Future<Int> {
        if attempt < depth { return .failed(CancellationError()) }
        deepest.bytes = residentBytes()
        return .succeeded(attempt)
    }
    @Sendable func fetchWithRetry(_ attempt: Int) -> Future<Int> {
        fetch(attempt).catch { (_: any Error) -> Future<Int> in fetchWithRetry(attempt + 1) }
    }
    precondition(fetchWithRetry(0).forceGetResult() == depth)
    return deepest.bytes - before
}

/// A chain built outwards (each new future set to the previous one), measured
/// when the outermost level is set, before the innermost completes. Each
/// level's source is released once it has set its future (its producer is
/// done), and the outermost future is held: what stays is what the library
/// keeps per level.
@Sendable func outwardChainGrowth(depth: Int) -> Int {
    let before = residentBytes()
    let root = FutureSource<Int>()
    var outer = root.future
    for _ in 0..<depth {
        let s = FutureSource<Int>()
        s.trySetResult(outer)
        outer = s.future
    }
    let grown = residentBytes() - before
    root.trySetResult(1)
    precondition(outer.forceGetResult() == 1)
    return grown
}

/// `n` pending futures, each with one `then`, kept with their sources.
@Sendable func pendingThenGrowth(_ n: Int) -> Int { pendingGrowth(n) { $0.then { $0 + 1 } } }

/// `n` pending futures, each with what `derive` makes of it, kept with
/// their sources and those outputs.
func pendingGrowth(_ n: Int, _ derive: (Future<Int>) -> Future<Int>) -> Int {
    let before = residentBytes()
    var sources: [FutureSource<Int>] = [], outputs: [Future<Int>] = []
    sources.reserveCapacity(n); outputs.reserveCapacity(n)
    for _ in 0..<n {
        let s = FutureSource<Int>()
        outputs.append(derive(s.future))
        sources.append(s)
    }
    let grown = residentBytes() - before
    withExtendedLifetime((sources, outputs)) {}
    return grown
}

/// The same with nio: `n` promises, each with one `map`, kept with their futures.
@Sendable func nioPendingMapGrowth(_ n: Int) -> Int {
    let loop = EmbeddedEventLoop()
    let before = residentBytes()
    var promises: [EventLoopPromise<Int>] = [], outputs: [EventLoopFuture<Int>] = []
    promises.reserveCapacity(n); outputs.reserveCapacity(n)
    for _ in 0..<n {
        let p = loop.makePromise(of: Int.self)
        outputs.append(p.futureResult.map { $0 + 1 })
        promises.append(p)
    }
    let grown = residentBytes() - before
    for p in promises { p.succeed(0) }
    withExtendedLifetime(outputs) {}
    return grown
}

/// `n` handlers registered on one token (their registrations dropped).
@Sendable func tokenHandlerGrowth(_ n: Int) -> Int {
    let s = CancelTokenSource()
    let before = residentBytes()
    for _ in 0..<n { s.token.whenCancelled {} }
    let grown = residentBytes() - before
    s.cancel()
    return grown
}

/// The same with nio: `n` callbacks on one pending promise.
@Sendable func nioCallbackGrowth(_ n: Int) -> Int {
    let loop = EmbeddedEventLoop()
    let p = loop.makePromise(of: Int.self)
    let before = residentBytes()
    for _ in 0..<n { p.futureResult.whenSuccess { _ in } }
    let grown = residentBytes() - before
    p.succeed(0)
    return grown
}

/// `n` pending operations, each under `withTimeout(30 s)`: the operation's
/// future (its source kept) and the timed output, kept.
@Sendable func pendingTimeoutGrowth(_ n: Int) -> Int {
    pendingGrowth(n) { f in Future.withTimeout(.seconds(30)) { _ in f } }
}

/// The same with nio: `n` promises, each with a 30 s `scheduleTask` that
/// fails it, cancelled when it completes.
@Sendable func nioPendingTimeoutGrowth(_ n: Int) -> Int {
    let loop = EmbeddedEventLoop()
    let before = residentBytes()
    var promises: [EventLoopPromise<Int>] = []
    promises.reserveCapacity(n)
    for _ in 0..<n {
        let p = loop.makePromise(of: Int.self)
        let task = loop.scheduleTask(in: .seconds(30)) { p.fail(BenchTimeoutError()) }
        p.futureResult.whenComplete { _ in task.cancel() }
        promises.append(p)
    }
    let grown = residentBytes() - before
    for p in promises { p.succeed(0) }
    return grown
}
