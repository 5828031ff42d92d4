@_spi(Testing) import CollapsingFutures
import Foundation
import Testing
import TestSupport

/// `wait()` off the main thread (the main-thread cases run the `Examples`
/// executable: see ExamplesTests).
@Suite struct FutureWait {
    @Test func waitReturnsTheValueOrThrowsTheFailureOfACompletedFuture() throws {
        #expect(try Future.succeeded(3).wait() == 3)
        #expect(throws: Boom.self) { try Future<Int>.failed(Boom()).wait() }
        #expect(throws: CancellationError.self) { try Future<Int>.cancelled.wait() }
    }

    @Test func waitBlocksUntilAnotherThreadSetsTheFuture() throws {
        let s = FutureSource<Int>()
        let doubled = s.future.then(on: .completingThread) { $0 * 2 }
        Thread.detachNewThread { usleep(1000); s.trySetResult(21) }
        #expect(try doubled.wait() == 42)
    }

    @Test func waitOnAnImmortalFutureThrowsAtOnce() {
        #expect(throws: FutureError.immortal) { try Future<Int>.immortal.wait() }
        #expect(throws: FutureError.immortal) { try FutureSource<Int>().future.wait() }
    }

    /// The source dies while the thread waits: the wait ends with
    /// `FutureError.immortal`, and what it registered is freed.
    @Test func waitThrowsWhenTheFutureBecomesImmortalMeanwhile() {
        let box = Locked<FutureSource<Int>?>(FutureSource<Int>())
        let f = box.withLock { $0! }.future
        Thread.detachNewThread { usleep(1000); box.withLock { $0 = nil } }
        #expect(throws: FutureError.immortal) { try f.wait() }
        #expect(f.completionToken._linkedNodeCount == 0)
    }

    /// Inside a handler with nothing queued behind it on this thread,
    /// waiting for another thread's work is allowed.
    @Test func waitInsideAHandlerWithNothingQueuedBehindItWaits() {
        let cancel = CancelTokenSource()
        let reply = FutureSource<Int>()
        let seen = Locked<Int?>(nil)
        cancel.token.whenCancelled(on: .completingThread) {
            Thread.detachNewThread { usleep(1000); reply.trySetResult(5) }
            seen.withLock { $0 = try? reply.future.wait() }
        }
        cancel.cancel()
        #expect(seen.withLock { $0 } == 5)
    }

    /// What the waiting thread registered on the future is consumed:
    /// nothing stays on it.
    @Test func waitLeavesNothingRegistered() throws {
        let s = FutureSource<Int>()
        Thread.detachNewThread { usleep(1000); s.trySetResult(1) }
        #expect(try s.future.wait() == 1)
        #expect(s.future.completionToken._linkedNodeCount == 0)
    }
}
