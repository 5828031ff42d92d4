// Built with the package's NIO trait (`make test` enables it).
#if NIO
@_spi(Testing) import CollapsingFutures
import CollapsingFuturesNIO
import Dispatch
import NIOCore
import NIOPosix
import Testing
import TestSupport

/// Blocks until `f` completes (within `patience`: the bound only keeps a
/// hang from stopping the suite; a bridge that hangs fails `#expect`s here).
func outcome<T>(_ f: EventLoopFuture<T>) -> Result<T, any Error>? {
    let done = DispatchSemaphore(value: 0)
    let box = Locked<Result<T, any Error>?>(nil)
    f.whenComplete { r in box.withLock { $0 = r }; done.signal() }
    _ = done.wait(timeout: patienceDeadline())
    return box.withLock { $0 }
}

@Suite struct NIOBridges {
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)

    @Test func aFutureFromAnEventLoopFutureHasItsOutcome() throws {
        let loop = Self.group.next()
        let ok = loop.makePromise(of: Int.self)
        let failing = loop.makePromise(of: Int.self)
        let f = Future(ok.futureResult), g = Future(failing.futureResult)
        #expect(f.state == .pending)
        ok.succeed(4)
        failing.fail(Boom(code: 3))
        #expect(try f.wait() == 4)
        #expect(throws: Boom(code: 3)) { try g.wait() }
        #expect(try Future(loop.makeSucceededFuture(9)).wait() == 9)
    }

    @Test func anEventLoopFutureFromAFutureHasItsOutcomeOnTheLoop() {
        let loop = Self.group.next()
        let s = FutureSource<Int>()
        let elf = s.future.eventLoopFuture(on: loop)
        let onLoop = Locked<Bool?>(nil)
        elf.whenComplete { _ in onLoop.withLock { $0 = loop.inEventLoop } }
        s.trySetResult(5)
        #expect((try? outcome(elf)?.get()) == 5)
        #expect(onLoop.withLock { $0 } == true)
        let failed = Future<Int>.failed(Boom(code: 1)).eventLoopFuture(on: loop)
        guard case .failure(let e)? = outcome(failed) else { Issue.record("not failed"); return }
        #expect(e as? Boom == Boom(code: 1))
    }

    /// Never a hang: the future's source dies, and NIO's future fails.
    @Test func anImmortalFutureFailsItsEventLoopFuture() throws {
        let loop = Self.group.next()
        var source: FutureSource<Int>? = FutureSource<Int>()
        let pending = source!.future.eventLoopFuture(on: loop)
        let already = Future<Int>.immortal.eventLoopFuture(on: loop)
        source = nil
        _ = source
        for elf in [pending, already] {
            guard case .failure(let e)? = outcome(elf) else { Issue.record("not failed"); continue }
            #expect(e as? FutureError == .immortal)
        }
    }

    /// What the bridge registered goes with the outcome: nothing of it stays
    /// on the future, and a value held only by it is released.
    @Test func theBridgeKeepsNothingOnceDone() {
        let loop = Self.group.next()
        let deinits = Counter()
        let s = FutureSource<Tracked>()
        do {
            let elf = s.future.eventLoopFuture(on: loop)
            s.trySetResult(Tracked(deinits))
            #expect(outcome(elf) != nil)
        }
        #expect(s.future.completionToken._linkedNodeCount == 0)
        // A future from a NIO promise that is never completed is held only
        // by NIO's callback; dropping the promise's future frees both.
        let promise = loop.makePromise(of: Int.self)
        let f = Future(promise.futureResult)
        #expect(f.state == .pending)
        promise.succeed(1)
        #expect((try? f.wait()) == 1)
    }

    /// Round trip, many times, from several threads: every outcome arrives.
    @Test func aThousandRoundTripsFromManyThreads() {
        let results = Locked<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 1000) { i in
            let loop = Self.group.next()
            let s = FutureSource<Int>()
            let back = Future(s.future.eventLoopFuture(on: loop))
            s.trySetResult(i)
            if let v = try? back.wait() { results.withLock { $0.append(v) } }
        }
        #expect(results.withLock { $0.sorted() } == Array(0..<1000))
    }
}
#endif
