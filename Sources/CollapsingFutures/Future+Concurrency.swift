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
        let c = continuation
        continuation = nil
        c?.resume(with: r)
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

/// The discard outcome of `CancelToken.cancelled()` (mapped to `false`).
private struct _Uninhabited: Error {}

extension Future {
    /// Waits for the outcome.
    ///
    /// - Throws: the failure; `FutureError.immortal` at once, or the moment
    ///   the future becomes immortal, so no task waits forever;
    ///   `CancellationError` if the awaiting task is cancelled first (its
    ///   handler is removed; the future is untouched).
    public func get() async throws -> Value {
        if let r = result { return try r.get() }
        if _word & _wImmortal != 0 { throw _immortal() }
        let node = _ResumeNode<Value>(onRun: { self._result! }, onDiscard: FutureError.immortal,
                                      onRemove: .failure(CancellationError()))
        do {
            return try await node.await(on: self)
        } catch FutureError.immortal {
            throw _immortal()
        }
    }

    /// `FutureError.immortal`; debug builds also say on standard error where
    /// the source that let this future become immortal was created.
    func _immortal() -> FutureError {
        #if DEBUG
        let note = _immortalNote
        if !note.isEmpty {
            _debugLog("CollapsingFutures: get() threw FutureError.immortal: the future can never complete\(note)")
        }
        #endif
        return .immortal
    }

    /// A future completed by `operation`, run in a new Task.
    ///
    /// Like `Task.init`, `operation` inherits the caller's actor: written in
    /// a `@MainActor` type it runs on the main actor, and `[weak self]`
    /// works. (Unlike `Task.init`, `self` is not captured implicitly: a
    /// strong capture stays visible in the code.)
    public convenience init(@_inheritActorContext _ operation: sending @escaping @isolated(any) () async throws -> Value) {
        self.init()
        Task { [self] in
            do { self._trySet(.success(try await operation())) } catch { self._trySet(.failure(error)) }
        }
    }

    /// A future completed by `operation`, run in a new Task that `token`
    /// cancels; then the future fails with `CancellationError` at once. The
    /// registration on `token` is removed when the future completes.
    ///
    /// `operation` inherits the caller's actor, as with `init(_:)`.
    public convenience init(until token: CancelToken,
                            @_inheritActorContext _ operation: sending @escaping @isolated(any) () async throws -> Value) {
        self.init()
        if token.isCancelled {
            _trySet(.failure(CancellationError()))
            return
        }
        let task = Task { [self] in
            do { self._trySet(.success(try await operation())) } catch { self._trySet(.failure(error)) }
        }
        token._whenCancelledInline(unless: completionToken, removeOnUnlessImmortal: true) { [self] in
            task.cancel()
            self._trySet(.failure(CancellationError()))
        }
    }
}

extension CancelToken {
    /// Waits until the token settles.
    ///
    /// - Returns: `true` once cancelled; `false` if it is or becomes immortal,
    ///   or if the calling task is cancelled first (its handler is removed).
    public func cancelled() async -> Bool {
        guard let owner = _owner else { return false }
        switch state {
        case .cancelled: return true
        case .immortal: return false
        case .stillCancellable: break
        }
        let node = _ResumeNode<Bool>(onRun: { .success(true) }, onDiscard: _Uninhabited(), onRemove: .success(false))
        return (try? await node.await(on: owner)) ?? false
    }
}
