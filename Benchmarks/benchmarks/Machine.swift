// What the figures were measured on: ratios between implementations differ
// between CPUs (swift-nio gains more than this library on some), so every
// report names the CPU model, the core count and the compiler.
import Foundation

struct Machine {
    let cpu: String
    let cores: Int
    let swift: String

    static let current = Machine(cpu: cpuModel(), cores: ProcessInfo.processInfo.activeProcessorCount,
                                 swift: compilerVersion())

    var description: String { "\(cpu), \(cores) cores, Swift \(swift)" }
    var json: [String: Any] { ["cpu": cpu, "cores": cores, "swift": swift] }

    /// /proc/cpuinfo's first `model name` (x86); else its `Hardware` or
    /// `Model` line, where ARM boards name the chip.
    private static func cpuModel() -> String {
        guard let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "unknown CPU" }
        for key in ["model name", "Hardware", "Model"] {
            for line in info.split(separator: "\n") where line.hasPrefix(key) {
                if let colon = line.firstIndex(of: ":") {
                    return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return "unknown CPU"
    }

    /// The compiler that built this binary (the one whose code is measured).
    private static func compilerVersion() -> String {
        #if compiler(>=6.4)
        return "6.4 or later"
        #elseif compiler(>=6.3.1)
        return "6.3.1"
        #elseif compiler(>=6.3)
        return "6.3"
        #elseif compiler(>=6.2)
        return "6.2"
        #elseif compiler(>=6.1)
        return "6.1"
        #else
        return "6.0"
        #endif
    }
}
