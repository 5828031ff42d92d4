#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The failure of an operation that timed out.
public struct TimeoutError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The error.
    public init() {}

    /// "The operation timed out."
    public var description: String { "The operation timed out." }
    /// The same text, for `localizedDescription`.
    public var errorDescription: String? { description }
}
