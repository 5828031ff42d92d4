/// The failure of an operation that timed out.
public struct TimeoutError: Error, Sendable, Hashable {
    /// The error.
    public init() {}
}
