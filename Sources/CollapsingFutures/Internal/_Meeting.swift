/// What a registration finds when it meets a token: the one decision of the
/// registration path, taken from one read of the token's word.
@usableFromInline
enum _Meeting {
    /// Still cancellable: build the node and push it (`_pushHandler`).
    case push
    /// Already cancelled: run at once (without a node, unless it hops to a
    /// queue).
    case runNow
    /// Immortal (or `.immortal`): it will never run.
    case neverRuns
    /// The `unless` token is already cancelled: stopped before it started.
    case unlessFirst
}
