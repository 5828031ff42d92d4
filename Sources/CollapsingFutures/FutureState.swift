/// The state of a `Future`.
public enum FutureState: Sendable, Hashable {
    /// Not yet set.
    case pending
    /// Set to another future that has not completed yet (collapsing).
    case flattening
    /// Completed with a value.
    case succeeded
    /// Completed with an error.
    case failed
    /// Can never complete: its source died unset, it flattened into an
    /// immortal future, or it was part of a flattening cycle.
    case immortal
}
