// `make stress`: random programs on every core under ThreadSanitizer.
import FuzzKit
import Foundation
import Testing
import TestSupport

@Suite struct Stress {
    /// Random programs on every core for CF_STRESS_SECONDS (`make stress`,
    /// under TSan); off in the default run.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["CF_STRESS_SECONDS"] != nil))
    func randomProgramsOnAllCores() async throws {
        let seconds = Double(ProcessInfo.processInfo.environment["CF_STRESS_SECONDS"] ?? "0") ?? 0
        // Off the cooperative pool: a program blocks while its Tasks run.
        let (programs, ops) = try await offThePool {
            let deadline = Date().addingTimeInterval(seconds)
            var rng = SystemRandomNumberGenerator()
            var programs = 0, ops = 0
            while Date() < deadline {
                let n = Int.random(in: 8...400, using: &rng)
                var bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
                bytes[0] = UInt8.random(in: 1...2)   // 2 or 3 threads
                try runProgram(bytes)
                programs += 1
                ops += n / 3
            }
            return (programs, ops)
        }
        print("stress: \(programs) programs, ~\(ops) operations in \(Int(seconds)) s")
        #expect(programs > 0)
    }
}
