#if GRPC
import CollapsingFutures
import GRPCCore

extension CallOptions {
    /// These options with their timeout set to what is left of
    /// `token.deadline`, when that is sooner than the timeout they already
    /// have; unchanged when the token has no deadline and is not cancelled.
    /// A cancelled token, or a deadline already passed, gives a zero timeout
    /// (never a negative one).
    public func limited(by token: CancelToken) -> CallOptions {
        let left: Duration
        if token.isCancelled {
            left = .zero
        } else if let deadline = token.deadline {
            left = max(.zero, ContinuousClock.now.duration(to: deadline))
        } else {
            return self
        }
        if let timeout, timeout <= left { return self }
        var options = self
        options.timeout = left
        return options
    }
}
#endif
