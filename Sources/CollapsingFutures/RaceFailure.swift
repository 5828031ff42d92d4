#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The failure of `Future.race` when every operation failed: each failure,
/// in the order of the operations.
public struct RaceFailure: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// Every operation's failure, in the order of the operations.
    public let failures: [any Error]

    /// "Every operation of the race failed: …", listing each failure.
    public var description: String {
        if failures.isEmpty { return "The race had no operations." }
        return "Every operation of the race failed: " + failures.map { "\($0)" }.joined(separator: "; ")
    }
    /// The same text, for `localizedDescription`.
    public var errorDescription: String? { description }
}
