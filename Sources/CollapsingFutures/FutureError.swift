/// Errors thrown when awaiting a future.
public enum FutureError: Error, Sendable, Hashable {
    /// The awaited future can never complete.
    case immortal
}
