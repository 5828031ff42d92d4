import ExampleKit
import Foundation
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

    /// Main-thread stickiness needs a real main thread, so this runs the
    /// built `Examples` executable (next to this test binary) as a process.
    @Test func handlerRegisteredOnTheMainThreadRunsOnTheMainQueue() throws {
        let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let exe = dir.appendingPathComponent("Examples")
        let p = Process()
        p.executableURL = exe
        p.arguments = ["main-queue"]
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(p.terminationStatus == 0)
        #expect(lines == ["== main-queue", "registered on main thread: true", "handler ran on main thread: true"])
    }
}
