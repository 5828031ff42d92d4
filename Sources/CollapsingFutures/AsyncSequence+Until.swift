extension AsyncSequence where Self: Sendable, Element: Sendable {
    /// The same elements, ending (returning `nil`) once `token` is cancelled.
    ///
    /// If the token is cancelled while the iteration waits inside the base
    /// sequence, the iterating task is cancelled to interrupt that wait (the
    /// base sequence must honour cancellation, as `AsyncStream` does). If the
    /// base sequence reacts by throwing (a `CancellationError` from
    /// `Task.sleep`, say), the iteration still ends with `nil`: the token was
    /// cancelled, and that is what ended it. Swift cannot undo a task's
    /// cancellation, so that task stays cancelled afterwards; iterate in a
    /// child task (`async let`, a task group) when the rest of the task must
    /// go on. The registration exists only while a `next()` is waiting, so an
    /// iteration that ends early leaves nothing registered.
    public func until(_ token: CancelToken) -> some AsyncSequence<Element, Failure> {
        _UntilSequence(base: self, token: token)
    }
}
