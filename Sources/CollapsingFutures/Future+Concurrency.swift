import CCollapsingFutures
import Synchronization

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
        let node = _ResumeNode<Value>(onRun: { self._result }, onDiscard: FutureError.immortal,
                                      onRemove: .failure(CancellationError()))
        do {
            return try await node.await(on: self)
        } catch FutureError.immortal {
            throw _immortal()
        }
    }

    /// `FutureError.immortal`, for `function` to throw; debug builds also say
    /// on standard error where the source that let this future become
    /// immortal was created.
    func _immortal(throwing function: String = "get()") -> FutureError {
        #if DEBUG
        let note = _immortalNote
        if !note.isEmpty {
            _debugLog("CollapsingFutures: \(function) threw FutureError.immortal: the future can never complete\(note)")
        }
        #endif
        return .immortal
    }

    /// A future completed by `operation`, run in a new Task.
    ///
    /// Like `Task.init`, `operation` inherits the caller's actor: written in
    /// a `@MainActor` type it runs on the main actor, and `[weak self]`
    /// works; operations made in order on an actor and isolated to it start
    /// there in that order. In an `actor`, as with `Task { }`, it is isolated
    /// to the actor only when it captures it: a `[weak self]` operation runs
    /// off the actor and holds nothing of it. (Unlike `Task.init`, `self` is
    /// not captured implicitly: a strong capture stays visible in the code.)
    public convenience init(isolation: isolated (any Actor)? = #isolation,
                            @_inheritActorContext _ operation: sending @escaping @isolated(any) () async throws -> Value) {
        self.init()
        _startTask(isolation: isolation, priority: nil, cancelledBy: .immortal, operation) { [self] r in _trySet(r) }
    }

    /// A future completed by `operation`, run in a new Task that `token`
    /// cancels; then the future fails with `CancellationError` at once. The
    /// registration on `token` is removed when the future completes.
    ///
    /// `operation` inherits the caller's actor, as with `init(_:)`.
    public convenience init(isolation: isolated (any Actor)? = #isolation, until token: CancelToken,
                            @_inheritActorContext _ operation: sending @escaping @isolated(any) () async throws -> Value) {
        self.init()
        if token.isCancelled {
            _failCancelled()
            return
        }
        let task = _startTask(isolation: isolation, priority: nil, cancelledBy: token, operation) { [self] r in _trySet(r) }
        // Claim the future before cancelling the task: the cancel resumes
        // the operation at once, and one that catches it and returns must
        // not publish its success first (the token fails the future).
        token._whenCancelledInline(untilSettled: completionToken) { [self] in
            let claimed = _takeClaim()
            if cf_wheel_on_driver_thread() != 0 {
                // The timer driver fails the future now, and leaves the
                // cancel, which runs the task's cancellation handlers (user
                // code), to the firing pool; the claim already stops an
                // answer the operation gives meanwhile.
                claimed?._withUnsafeGuaranteedRef { $0._complete(.failure(CancellationError())) }
                _runOffTheDriver { task.cancel() }
            } else {
                task.cancel()
                claimed?._withUnsafeGuaranteedRef { $0._complete(.failure(CancellationError())) }
            }
        }
    }
}
