import CCollapsingFutures
import Synchronization

/// Resumes an awaiting task when a token settles or the task is cancelled.
/// Exactly one of run / discard / remove wins the node, so the continuation
/// is resumed exactly once.
final class _ResumeNode<T: Sendable>: _Node, @unchecked Sendable {
    @exclusivity(unchecked) var continuation: CheckedContinuation<T, any Error>?
    let onRun: @Sendable () -> Result<T, any Error>
    let onDiscard: any Error
    let onRemove: Result<T, any Error>
    /// The handshake between the body and the task's cancellation handler:
    /// 0 at first, 1 once the node is registered, 2 once the task is
    /// cancelled. Each side exchanges its own value in and removes the node
    /// if it finds the other's: exchanges on one atomic are totally ordered,
    /// so exactly one side sees the other and removes. (A store of
    /// "registered" followed by a load of `Task.isCancelled`, against the
    /// handler's load of the flag, could let both loads miss the other's
    /// store — store buffering — and leave the task waiting.)
    let phase = Atomic<UInt8>(0)

    init(onRun: @escaping @Sendable () -> Result<T, any Error>, onDiscard: any Error, onRemove: Result<T, any Error>) {
        self.onRun = onRun
        self.onDiscard = onDiscard
        self.onRemove = onRemove
        super.init()
    }

    private func resume(_ r: Result<T, any Error>) {
        continuation.take()?.resume(with: r)
    }
    override func _run() { resume(onRun()) }
    override func _discard(unless _: AnyObject?) { resume(.failure(onDiscard)) }
    override func _removed(byUnless: Bool) { resume(onRemove) }

    /// Registers on `owner`'s token and suspends until it settles or the
    /// calling task is cancelled. Then the registration is removed, unless
    /// the token is already cancelled (the node runs, or has run: the token
    /// came first, or with the task, as a `Task(until:)`'s token does), or
    /// `taskCancelEnds` is false: the task's cancellation cancels the token
    /// itself (`withCancelToken`'s), so the token ends the wait.
    func await(on owner: AnyObject, taskCancelEnds: Bool = true) async throws -> T {
        let token = CancelToken(_owner: owner)
        @Sendable func taskCancelled() {
            if taskCancelEnds && !token.isCancelled { _ = _removeNode(_NodeRef(_ptr), from: token._owner!, byUnless: false) }
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
                continuation = c   // before publication: the settler reads it after its CAS
                _register(on: owner, .library)
                // Acquiring-and-releasing: publishes the registration to the
                // handler, and orders the handler's cancel before our remove.
                if phase.exchange(1, ordering: .acquiringAndReleasing) == 2 { taskCancelled() }
            }
        } onCancel: {
            // As above; the handler may run before the body (a task
            // cancelled already), then the body removes.
            if phase.exchange(2, ordering: .acquiringAndReleasing) == 1 { taskCancelled() }
        }
    }
}
