#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Errors thrown when awaiting a future.
public enum FutureError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The awaited future can never complete: its source was deallocated
    /// without setting it (or it is part of a flattening cycle).
    case immortal

    /// A sentence saying what happened and what usually causes it.
    public var description: String {
        switch self {
        case .immortal:
            return "The future can never complete: it is immortal (its FutureSource was deallocated without "
                + "setting it, or it was set to itself through other futures)."
        }
    }
    /// The same text, for `localizedDescription`.
    public var errorDescription: String? { description }
}
