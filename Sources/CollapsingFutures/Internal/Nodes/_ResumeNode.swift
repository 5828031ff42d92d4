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
    /// Set once the node is registered: only then may the task's cancellation
    /// handler remove it (before, the body itself checks for cancellation).
    let published = Atomic<Bool>(false)

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
    override func _discard() { resume(.failure(onDiscard)) }
    override func _removed(byUnless: Bool) { resume(onRemove) }

    /// Registers on `owner`'s token and suspends until it settles or the
    /// calling task is cancelled (then the registration is removed).
    func await(on owner: AnyObject) async throws -> T {
        let registration = CancelRegistration(owner: owner, node: self)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
                continuation = c   // before publication: the settler reads it after its CAS
                _ = CancelToken(_owner: owner)._add(self, unless: .immortal)
                published.store(true, ordering: .releasing)
                if Task.isCancelled { registration.remove() }
            }
        } onCancel: {
            if published.load(ordering: .acquiring) { registration.remove() }
        }
    }
}
