/// The state of a `CancelToken`.
///
/// `.stillCancellable` is volatile: another thread may cancel or immortalize
/// the token right after you read it. `.cancelled` and `.immortal` are final.
public enum CancelTokenState: Sendable, Hashable {
    /// Not yet cancelled; its source is alive.
    case stillCancellable
    /// Cancelled: handlers ran (or are running) and new ones run inline.
    case cancelled
    /// Can never be cancelled: its source died without cancelling it.
    /// Handlers were discarded unrun and new ones are released at once.
    case immortal
}
