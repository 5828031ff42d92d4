// A Task bound to a token that a deadline cancels: the timer driver hands
// the task's cancel to the firing pool, which must find the node it runs
// alive. Each case loops, one operation at a time, so that freed and
// reused nodes meet the hop (the way it failed: a use after free). The
// loops block their thread, so they run off Swift's cooperative pool, which
// the bound Tasks need.
import CollapsingFutures
import Foundation
import Testing
import TestSupport

@Suite struct DeadlineBindings {
    static let runs = 1_000

    /// `body` returns what `wait()` gave; each run must end cancelled.
    static func expectEveryRunCancelled(_ body: () -> Result<Int, any Error>) {
        var cancelled = 0
        for _ in 0..<runs {
            if case .failure(let e) = body(), e is CancellationError { cancelled += 1 }
        }
        #expect(cancelled == runs)
    }

    static func futureUntil(_ token: CancelToken) -> Result<Int, any Error> {
        let f = Future<Int>(until: token) { try await Task.sleep(for: .seconds(10)); return 2 }
        return Result { try f.wait() }
    }

    @Test @MainActor func futureUntilADeadlineOnTheMainThread() {
        Self.expectEveryRunCancelled {
            let deadline = CancelTokenSource(cancellingAfter: .milliseconds(1))
            return withExtendedLifetime(deadline) { Self.futureUntil(deadline.token) }
        }
    }

    @Test func futureUntilADeadlineOffTheMainThread() async throws {
        try await offThePool {
            Self.expectEveryRunCancelled {
                let deadline = CancelTokenSource(cancellingAfter: .milliseconds(1))
                return withExtendedLifetime(deadline) { Self.futureUntil(deadline.token) }
            }
        }
    }

    @Test func taskUntilADeadline() async throws {
        try await offThePool {
            Self.expectEveryRunCancelled {
                let deadline = CancelTokenSource(cancellingAfter: .milliseconds(1))
                let ended = FutureSource<Int>()
                Task(until: deadline.token) {
                    do { try await Task.sleep(for: .seconds(10)); ended.trySetResult(2) } catch { ended.trySetFailure(error) }
                }
                return withExtendedLifetime(deadline) { Result { try ended.future.wait() } }
            }
        }
    }

    @Test func futureUntilASuspendingClockDeadline() async throws {
        try await offThePool {
            Self.expectEveryRunCancelled {
                let deadline = CancelTokenSource(cancellingAfter: .milliseconds(1), clock: SuspendingClock())
                return withExtendedLifetime(deadline) { Self.futureUntil(deadline.token) }
            }
        }
    }

    @Test func futureUntilAnyOfADeadline() async throws {
        try await offThePool {
            let other = CancelTokenSource()
            Self.expectEveryRunCancelled {
                let deadline = CancelTokenSource(cancellingAfter: .milliseconds(1))
                return withExtendedLifetime(deadline) { Self.futureUntil(.any(deadline.token, other.token)) }
            }
            #expect(!other.token.isCancelled)
        }
    }

    @Test func sequenceUntilADeadline() async throws {
        try await offThePool {
            Self.expectEveryRunCancelled {
                let deadline = CancelTokenSource(cancellingAfter: .milliseconds(1))
                let (stream, continuation) = AsyncStream<Int>.makeStream()
                let ended = Future<Int> {
                    var n = 0
                    for await _ in stream.until(deadline.token) { n += 1 }
                    if deadline.token.isCancelled { throw CancellationError() }
                    return n
                }
                defer { continuation.finish() }
                return Result { try ended.wait() }
            }
        }
    }
}
