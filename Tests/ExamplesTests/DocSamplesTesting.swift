// The sample of the DocC article "Testing code that waits", compiled and run
// here verbatim (it needs CollapsingFuturesTesting; DocSamplesTests checks
// that the block appears here).
import CollapsingFutures
import CollapsingFuturesTesting
import Testing

@Test func retriesWithGrowingTimeouts() async throws {
    let clock = ManualClock()
    let result = Future<Int>.retrying(upTo: 10, baseTimeout: .seconds(1), backoff: 2, clock: clock) { token in
        FutureSource<Int>(until: token).future   // a call that never answers
    }
    var start = clock.now
    for i in 0..<10 {
        await clock.waitUntilSleeping()                         // try i armed its timeout
        let timeout = Duration.seconds(1 << i)
        #expect(clock.nextDeadline == start.advanced(by: timeout))
        clock.advance(to: start.advanced(by: timeout))          // it times out, exactly then
        start = start.advanced(by: timeout)
    }
    await #expect(throws: TimeoutError(after: .seconds(512))) { try await result.get() }
    #expect(clock.sleepers == 0)
}
