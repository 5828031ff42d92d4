// One source, compiled once per implementation (BenchBodiesLF, -DL, -MX):
// the same scenario code runs against each module, like with like.
#if DISPATCH_LOCK
@_spi(Testing) import DispatchLockedFutures
#elseif MUTEX_LOCK
@_spi(Testing) import MutexLockedFutures
#else
@_spi(Testing) import CollapsingFutures
#endif
import BenchKit
import Foundation
import Synchronization

public func makeAPI() -> API {
    API(
        registerCancel: { n in { it in
            for _ in 0..<it {
                let s = CancelTokenSource()
                for _ in 0..<n { s.token.whenCancelled {} }
                s.cancel()
            }
        } },
        churn: {
            let s = CancelTokenSource()
            let peak = Mutex(0)
            return ({ it in
                var p = 0
                for i in 0..<it {
                    s.token.whenCancelled {}.remove()
                    if i & 1023 == 0 { p = max(p, s.token._linkedNodeCount) }
                }
                peak.withLock { $0 = max($0, p) }
            }, { peak.withLock { $0 } })
        },
        unlessChurn: { it in
            let long = CancelTokenSource(), s = CancelTokenSource()
            for _ in 0..<it { s.token.whenCancelled(unless: long.token) {}.remove() }
        },
        thenSet: { it in
            for i in 0..<it {
                let s = FutureSource<Int>()
                let f = s.future.then { $0 + 1 }
                s.trySetResult(i)
                precondition(f.hasResult)
            }
        },
        thenDoSet: { it in
            for i in 0..<it {
                let s = FutureSource<Int>()
                s.future.thenDo { precondition($0 >= 0) }
                s.trySetResult(i)
            }
        },
        thenChain10: { it in
            for i in 0..<it {
                let s = FutureSource<Int>()
                var f = s.future
                for _ in 0..<10 { f = f.then { $0 + 1 } }
                s.trySetResult(i)
                precondition(f.hasResult)
            }
        },
        flatten: { it in
            for i in 0..<it {
                let s = FutureSource<Int>(), inner = FutureSource<Int>()
                let f: Future<Int> = s.future.then { _ in inner.future }
                s.trySetResult(i)
                inner.trySetResult(i)
                precondition(f.hasResult)
            }
        },
        catchStep: { it in
            let error: any Error = CancellationError()   // boxed once, not per step
            for i in 0..<it {
                let s = FutureSource<Int>(), inner = FutureSource<Int>()
                let f: Future<Int> = s.future.catch { _ in inner.future }
                s.trySetFailure(error)
                inner.trySetResult(i)
                precondition(f.hasResult)
            }
        },
        contendedRegister: { threads in { it in
            let s = CancelTokenSource()
            let ran = Atomic<Int>(0)
            onThreads(threads + 1) { t in
                if t == threads {
                    usleep(20)
                    s.cancel()
                } else {
                    for _ in 0..<it / threads { s.token.whenCancelled { ran.add(1, ordering: .relaxed) } }
                }
            }
            precondition(ran.load(ordering: .relaxed) == it / threads * threads, "a handler was lost")
        } },
        racingSet: { threads in { it in
            let sources = (0..<it).map { _ in FutureSource<Int>() }
            let wins = Atomic<Int>(0)
            onThreads(threads) { t in for s in sources where s.trySetResult(t) { wins.add(1, ordering: .relaxed) } }
            precondition(wins.load(ordering: .relaxed) == it)
        } },
        immortalize: { it in
            for _ in 0..<it {
                var s: CancelTokenSource? = CancelTokenSource()
                for _ in 0..<16 { s!.token.whenCancelled {} }
                s = nil
                _ = s
            }
        },
        outwardChain: { levels in { it in
            for i in 0..<it {
                let root = FutureSource<Int>()
                var outer = root.future
                var sources: [FutureSource<Int>] = []
                sources.reserveCapacity(levels)
                for _ in 0..<levels {
                    let s = FutureSource<Int>()
                    s.trySetResult(outer)
                    sources.append(s)
                    outer = s.future
                }
                root.trySetResult(i)
                precondition(outer.hasResult)
            }
        } }
    )
}
