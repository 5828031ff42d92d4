// libFuzzer driver: `make fuzz` builds it with -sanitize=fuzzer,address and
// -DLIBFUZZER, and runs it against Tests/Fuzz/corpus. SwiftPM points `main`
// at `fuzz_main`, which hands control to libFuzzer's own driver. In an
// ordinary build it replays the files named on the command line instead.
import FuzzKit
import Foundation

#if LIBFUZZER

@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

@_cdecl("fuzz_main")
func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in
        let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        do {
            try runProgram(bytes)
        } catch {
            FileHandle.standardError.write("invariant violated: \(error)\n".data(using: .utf8)!)
            abort()
        }
        return 0
    }
}
#else
@main
struct Replay {
    static func main() throws {
        for path in CommandLine.arguments.dropFirst() {
            try runProgram([UInt8](Data(contentsOf: URL(fileURLWithPath: path))))
            print("ok \(path)")
        }
    }
}
#endif
