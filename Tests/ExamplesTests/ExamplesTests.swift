import ExampleKit
import Testing

@Suite struct Examples {
    @Test func addressBookWrapsBothCallbackPaths() async {
        #expect(await Example.addressBook.run() == ["granted: Ada, Alan", "denied: AccessDenied"])
    }

    @Test func pipelineRunsItsStepsAndStopsWhenTheConnectionDrops() async {
        #expect(await Example.pipeline.run() == [
            "connect done", "handshake done", "fetch done", "fetched 42",
            "connect done", "connection dropped: cancelled",
        ])
    }

    @Test func retryGrowsTimeoutsUntilTheThirdAttemptSucceeds() async {
        #expect(await Example.retry.run() == ["attempt 1", "attempt 2", "attempt 3", "result: payload"])
    }

    @Test func raceTakesTheFastMirrorAndCancelsTheSlowOne() async {
        #expect(await Example.race.run() == ["winner: fast mirror", "slow mirror cancelled: true"])
    }

    @Test func controllerEndsItsTaskAndStreamWhenDropped() async {
        let lines = await Example.controller.run()
        #expect(lines.first == "event 1")
        #expect(lines.contains("controller deinit"))
        #expect(lines.contains("task ended"))
        #expect(lines.last == "producer terminated: true")
    }
}
