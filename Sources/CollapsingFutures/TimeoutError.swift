#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The failure of an operation that timed out.
///
/// Every `TimeoutError` equals every other: `duration` says how long was
/// waited, for people reading the error, and `error as? TimeoutError ==
/// TimeoutError()` keeps meaning "it timed out" whatever the duration.
public struct TimeoutError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// How long the operation was given before it timed out, when known:
    /// set by `withTimeout`, `timeout(_:)` and `retrying(upTo:baseTimeout:)`;
    /// `nil` for `trySetFailedWithTimeout()` and `Future.timedOut`.
    public let duration: Duration?

    /// A timeout whose duration is not known.
    public init() { duration = nil }

    /// A timeout after `duration`.
    public init(after duration: Duration) { self.duration = duration }

    /// "The operation timed out after 0.02 seconds." (or "… timed out."
    /// without a duration).
    public var description: String {
        guard let duration else { return "The operation timed out." }
        return "The operation timed out after \(duration)."
    }
    /// The same text, for `localizedDescription`.
    public var errorDescription: String? { description }

    /// Always true: see the type's documentation.
    public static func == (_: TimeoutError, _: TimeoutError) -> Bool { true }
    /// The same for every value, as `==` requires.
    public func hash(into hasher: inout Hasher) { hasher.combine(0 as UInt8) }
}
