/// Runs `body` with a token that is cancelled when the current Task is.
///
/// Nothing stays registered after it returns: the task cancellation handler
/// is gone, and the token's source dies with the call (an uncancelled token
/// becomes immortal, discarding whatever `body` registered on it). In this
/// task, `await token.cancelled()` returns `true` when the task is
/// cancelled.
public func withCancelToken<R>(
    isolation: isolated (any Actor)? = #isolation,
    _ body: (CancelToken) async throws -> R
) async rethrows -> R {
    try await withCancelToken(cancelling: CancelTokenSource(), isolation: isolation, body)
}

/// `withCancelToken`, with `source`'s token: for a bridge whose token other
/// events cancel too (gRPC's, whose source has the client's deadline).
/// `source` must be the caller's own, held nowhere else after this returns.
@_spi(Bridges)
public func withCancelToken<R>(
    cancelling source: CancelTokenSource,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (CancelToken) async throws -> R
) async rethrows -> R {
    try await withTaskCancellationHandler {
        try await _TaskCancelledTokens.$innermost.withValue(_TaskCancelledTokens(source.token)) {
            try await body(source.token)
        }
    } onCancel: {
        source.cancel()
    }
}

extension Task where Failure == any Error {
    /// Starts a Task that is cancelled when `token` is.
    ///
    /// The registration on `token` is removed when the task finishes (for an
    /// operation isolated to another actor than the caller's, just after); if the
    /// token becomes immortal it is discarded. Neither holds anything the
    /// operation captured after that. (The operation itself must not capture
    /// the owner of the token's source strongly, as with any Task.)
    ///
    /// Like `Task.init`, `operation` inherits the caller's actor: in a
    /// `@MainActor` type it runs on the main actor and `[weak self]` works,
    /// and tasks made in order on an actor and isolated to it (or to any one
    /// other actor) start there in that order. In an
    /// `actor`, it is isolated to the actor only when it captures it (as
    /// with `Task { }`): a `[weak self]` operation runs off the actor and the
    /// task holds nothing of it, so the actor can die while the task waits.
    /// A token already cancelled cancels the task before `operation` runs.
    /// (Unlike `Task.init`, `self` is not captured implicitly, so a strong
    /// capture — the leak this initializer exists to avoid — stays visible.)
    @discardableResult
    public init(isolation: isolated (any Actor)? = #isolation, until token: CancelToken, priority: TaskPriority? = nil,
                @_inheritActorContext operation: sending @escaping @isolated(any) () async throws -> Success) {
        let registration = _TaskRegistration()
        self = _startTask(isolation: isolation, priority: priority, cancelledBy: token, operation) { _ in registration.finish() }
        let task = self
        // Bookkeeping, not a user handler: inline on the cancelling thread
        // (a main-queue hop would never run under a blocked main thread),
        // except the timer driver's: `cancel()` runs the task's cancellation
        // handlers, which are user code.
        registration.attach(token._whenCancelledInline(unless: .immortal) { _runOffTheDriver { task.cancel() } })
    }
}
