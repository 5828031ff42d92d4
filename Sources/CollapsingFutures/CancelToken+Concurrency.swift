import CCollapsingFutures
import Synchronization

extension CancelToken {
    /// Waits until the token settles.
    ///
    /// - Returns: `true` once cancelled; `false` if it is or becomes immortal,
    ///   or if the calling task is cancelled first (its handler is removed).
    ///   Where one cancellation causes the other, the token counts:
    ///   `withCancelToken`'s token, awaited in the task that called it,
    ///   returns `true` when that task is cancelled, and a `Task(until:)`
    ///   awaiting its own token returns `true` when the token is cancelled.
    ///   (A child task, `async let` or in a group, is cancelled before its
    ///   parent's handlers run, so there a wait for the parent's
    ///   `withCancelToken` token may end `false` when the parent is
    ///   cancelled.)
    public func cancelled() async -> Bool {
        guard let owner = _owner else { return false }
        switch state {
        case .cancelled: return true
        case .immortal: return false
        case .stillCancellable: break
        }
        let node = _ResumeNode<Bool>(onRun: { .success(true) }, onDiscard: _Uninhabited(), onRemove: .success(false))
        return (try? await node.await(on: owner, taskCancelEnds: !_TaskCancelledTokens.include(owner))) ?? false
    }
}
