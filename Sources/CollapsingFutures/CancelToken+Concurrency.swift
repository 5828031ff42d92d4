import CCollapsingFutures
import Synchronization

extension CancelToken {
    /// Waits until the token settles.
    ///
    /// - Returns: `true` once cancelled; `false` if it is or becomes immortal,
    ///   or if the calling task is cancelled first (its handler is removed).
    ///   A token that the task's cancellation cancels, as
    ///   `withCancelToken`'s token (in the task that called it) or a
    ///   `Task(until:)`'s token, returns `true` when either is cancelled.
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
