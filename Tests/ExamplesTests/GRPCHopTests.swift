// Deadlines across processes (built with the package's GRPC trait): a
// client, service A and service B, each a process running the Examples
// executable in a role (ExampleKit's DeadlineHop.swift), over gRPC's HTTP/2
// transport on loopback. On Linux `ContinuousClock` is CLOCK_BOOTTIME, the
// same in every process, so the instants the roles print compare.
//
// Each test starts its own servers, so its cancelled calls (each an
// RST_STREAM) go over connections of their own: swift-nio-http2 closes a
// connection after more than 200 of them in 30 seconds.
#if GRPC
import ExampleKit
import Foundation
import Testing

/// The Examples executable, next to the test bundle.
let examplesExecutable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    .appendingPathComponent("Examples")

/// B and A running, A forwarding to B.
struct Services {
    let a: HopProcess, b: HopProcess, portA: String, portB: String

    init() throws {
        b = try HopProcess(examplesExecutable, ["grpc-b"])
        portB = String(try #require(b.line(startingWith: "port ")).dropFirst(5))
        a = try HopProcess(examplesExecutable, ["grpc-a", portB])
        portA = String(try #require(a.line(startingWith: "port ")).dropFirst(5))
    }

    func stop() {
        a.stop()
        b.stop()
    }

    /// A client process: `calls` calls of `message` to `port`.
    func client(to port: String, _ message: String, deadlineMs: Int?, cancelMs: Int?, calls: Int = 1) throws -> HopProcess {
        let c = try HopProcess(examplesExecutable, ["grpc-client", port, message, deadlineMs.map { "\($0)" } ?? "none",
                                                   cancelMs.map { "\($0)" } ?? "none", "\(calls)"])
        #expect(c.finish(within: 60), "the client did not finish")
        return c
    }
}

/// The instant (nanoseconds) that `line` ends with, or its word at `index`.
func instant(_ line: String?, at index: Int? = nil) -> Int64? {
    guard let words = line?.split(separator: " ") else { return nil }
    return Int64(words[index ?? words.count - 1])
}

let ms: Int64 = 1_000_000

@Suite(.serialized) struct GRPCHopTests {
    @Test func theClientsDeadlineReachesBAndEndsTheCallThere() throws {
        let services = try Services()
        defer { services.stop() }
        let client = try services.client(to: services.portA, "hold", deadlineMs: 300, cancelMs: nil)
        let start = client.output.first { $0.hasPrefix("client start") }
        let deadline = try #require(instant(start))
        let failed = try #require(client.output.first { $0.hasPrefix("client failed") })
        #expect(failed.hasPrefix("client failed deadlineExceeded"), "\(failed)")
        let failedAt = try #require(instant(failed))
        #expect(failedAt >= deadline - 20 * ms && failedAt <= deadline + 100 * ms,
                "failed \((failedAt - deadline) / ms) ms after the deadline")
        // B's deadline is the client's, give or take each hop's transit
        // (gRPC sends what is left, and a hop counts it from its receipt).
        let bDeadline = try #require(instant(services.b.line(startingWith: "b deadline")))
        #expect(abs(bDeadline - deadline) <= 50 * ms, "B's deadline is \((bDeadline - deadline) / ms) ms after the client's")
        let bCancelled = try #require(instant(services.b.line(startingWith: "b cancelled", within: 5)))
        #expect(bCancelled <= deadline + 50 * ms, "B was cancelled \((bCancelled - deadline) / ms) ms after the deadline")
    }

    @Test func aCancelAtTheClientCancelsB() throws {
        let services = try Services()
        defer { services.stop() }
        let client = try services.client(to: services.portA, "hold", deadlineMs: nil, cancelMs: 100)
        let cancelledAt = try #require(instant(client.output.first { $0.hasPrefix("client cancel") }))
        let failed = try #require(client.output.first { $0.hasPrefix("client failed") })
        #expect(failed.hasPrefix("client failed CancellationError"), "\(failed)")
        #expect(services.b.line(startingWith: "b deadline none") != nil)
        let bCancelled = try #require(instant(services.b.line(startingWith: "b cancelled", within: 5)))
        #expect(bCancelled - cancelledAt <= 100 * ms, "B was cancelled \((bCancelled - cancelledAt) / ms) ms after the client's cancel")
    }

    @Test func withoutADeadlineBSeesNone() throws {
        let services = try Services()
        defer { services.stop() }
        let client = try services.client(to: services.portA, "report", deadlineMs: nil, cancelMs: nil)
        #expect(client.output.contains("client reply b saw deadline none"), "\(client.output)")
        #expect(services.a.line(startingWith: "a deadline none") != nil)
    }

    @Test func afterTwoHundredCallsEveryHandlerOnTheServersTokensIsFreed() throws {
        let services = try Services()
        defer { services.stop() }
        let client = try services.client(to: services.portA, "report", deadlineMs: 5_000, cancelMs: nil, calls: 200)
        #expect(client.output.filter { $0.hasPrefix("client reply b saw deadline ") }.count == 200)
        for (port, name) in [(services.portB, "B"), (services.portA, "A")] {
            // Freed as each handler returns: asked again only while the
            // last replies' handlers may still be returning.
            var stats = ""
            for _ in 0..<50 {
                stats = try services.client(to: port, "stats", deadlineMs: nil, cancelMs: nil).output
                    .first { $0.hasPrefix("client reply") } ?? ""
                if stats == "client reply made 200 freed 200" { break }
                usleep(100_000)
            }
            #expect(stats == "client reply made 200 freed 200", "\(name): \(stats)")
        }
    }

    @Test func deadlineHopPrintsWhatEachProcessSaw() throws {
        let (status, lines, _) = try runExamples("deadline-hop")
        #expect(status == 0)
        #expect(lines.contains { $0.hasPrefix("client failed deadlineExceeded") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("a deadline +") } && lines.contains { $0.hasPrefix("b cancelled +") }, "\(lines)")
    }
}
#endif
