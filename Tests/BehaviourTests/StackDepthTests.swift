#if DISPATCH_LOCK
import DispatchLockedFutures
#elseif MUTEX_LOCK
import MutexLockedFutures
#else
import CollapsingFutures
#endif
import Testing
import TestSupport

/// Continuations registered on completed futures run inline, but never by
/// native recursion past a small bound: deeper, they wait on the calling
/// thread's drain (Threading.md, "Work started inside a handler", rule 4). The nesting
/// is counted: how many user closures are on the stack at once.
@Suite struct StackDepth {
    struct Unavailable: Error {}

    /// A million levels for the library; the lock baselines, whose every
    /// step takes locks (a debug build's million-step loop there takes a
    /// minute), show the same bound on fewer.
    #if DISPATCH_LOCK || MUTEX_LOCK
    let depth = 50_000
    #else
    let depth = 1_000_000
    #endif

    /// Closures of the test currently on the stack, and the most at once.
    final class Nesting: @unchecked Sendable {
        var now = 0, most = 0
        func enter() { now += 1; most = max(most, now) }
        func exit() { now -= 1 }
    }

    /// The README's retry loop when the call it retries fails synchronously
    /// (a cached error, a validation failure): `fetch(attempt)` has failed
    /// already until `attempt` reaches `succeedAt`.
    func retryLoop(depth: Int, succeedAt: Int, nesting: Nesting) -> Future<Int> {
        @Sendable func fetch(_ attempt: Int) -> Future<Int> {
            attempt >= succeedAt ? .succeeded(attempt) : .failed(Unavailable())
        }
        @Sendable func fetchWithRetry(_ attempt: Int) -> Future<Int> {
            fetch(attempt).catch { (error: any Error) -> Future<Int> in
                nesting.enter()
                defer { nesting.exit() }
                guard attempt < depth else { throw error }
                return fetchWithRetry(attempt + 1)
            }
        }
        return fetchWithRetry(0)
    }

    @Test func aMillionDeepRetryLoopOverSynchronousFailuresSucceeds() {
        let nesting = Nesting()
        let f = retryLoop(depth: depth, succeedAt: depth, nesting: nesting)
        #expect(f.forceGetResult() == depth)
        #expect(nesting.most <= 64)
    }

    @Test func aMillionDeepRetryLoopThatNeverSucceedsFailsWithTheLastError() {
        let nesting = Nesting()
        let f = retryLoop(depth: depth, succeedAt: .max, nesting: nesting)
        #expect(f.forceGetFailure() is Unavailable)
        #expect(nesting.most <= 64)
    }

    @Test func aMillionDeepMapRecursionThroughThenIsBounded() {
        let nesting = Nesting()
        @Sendable func count(_ n: Int) -> Future<Int> {
            Future.succeeded(n).then { (n: Int) -> Future<Int> in
                nesting.enter()
                defer { nesting.exit() }
                return n == 0 ? .succeeded(0) : count(n - 1).then { $0 + 1 }
            }
        }
        #expect(count(depth).forceGetResult() == depth)
        #expect(nesting.most <= 64)
    }

    @Test func handlersRegisteredOnCancelledTokensFromHandlersAreBounded() {
        let nesting = Nesting()
        let total = Counter()
        @Sendable func handler(_ n: Int) {
            nesting.enter()
            defer { nesting.exit() }
            total.increment()
            if n > 0 { CancelToken.cancelled.whenCancelled { handler(n - 1) } }
        }
        CancelToken.cancelled.whenCancelled { handler(depth) }
        #expect(total.value == depth + 1)
        #expect(nesting.most <= 64)
    }

    /// Shallow uses keep their inline result: at once, on this thread.
    @Test func shallowContinuationsOfCompletedFuturesCompleteAtOnce() {
        #expect(Future.succeeded(1).then { $0 + 1 }.result.map { try? $0.get() } == 2)
        var f = Future.succeeded(0)
        for _ in 0..<8 { f = f.then { $0 + 1 } }
        #expect(f.result.map { try? $0.get() } == 8)
        let nested = Future.succeeded(1).then { (v: Int) -> Int in
            Future.succeeded(v).then { $0 + 1 }.forceGetResult()
        }
        #expect(nested.forceGetResult() == 2)
    }
}
