extension AsyncSequence where Self: Sendable, Element: Sendable {
    /// The same elements, ending (returning `nil`) once `token` is cancelled.
    ///
    /// If the token is cancelled while the iteration waits inside the base
    /// sequence, the iterating task is cancelled to interrupt that wait (the
    /// base sequence must honour cancellation, as `AsyncStream` does). The
    /// registration exists only while a `next()` is waiting, so an iteration
    /// that ends early leaves nothing registered.
    public func until(_ token: CancelToken) -> some AsyncSequence<Element, Failure> {
        _UntilSequence(base: self, token: token)
    }
}
