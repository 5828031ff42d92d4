import FuzzKit
import Foundation
import Testing

@Suite struct FuzzCorpusReplay {
    /// Every file of the committed corpus (minimised by libFuzzer) runs
    /// through the same interpreter and checks as under the fuzzer.
    @Test func everyCorpusProgramSatisfiesTheInvariants() throws {
        // Tests/Fuzz/corpus: the corpus `make fuzz` starts from, minimised by
        // libFuzzer (`make fuzz-merge`) after a long run.
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("corpus")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(files.count >= 20, "the committed corpus is missing")
        for f in files {
            let bytes = try [UInt8](Data(contentsOf: dir.appendingPathComponent(f)))
            // Each program runs several times: the threaded ones interleave differently.
            // Without Task bindings (op 11): in this process other tests hold
            // Swift's cooperative pool, which their Tasks need, for minutes
            // under ThreadSanitizer. `make fuzz` and `make stress` run them.
            for _ in 0..<3 { try runProgram(bytes, bindingTasks: false) }
        }
    }
}
