/// The failure of `Future.race` when every operation failed: each failure,
/// in the order of the operations.
public struct RaceFailure: Error, Sendable {
    /// Every operation's failure, in the order of the operations.
    public let failures: [any Error]
}
