/// Starts `operation` in a new Task as `Task.init` does, and hands its
/// outcome to `done` in that task when it ends.
///
/// `isolation` is the caller's (its `#isolation`). When `operation` is
/// isolated to it (it inherited the caller's actor: always on a global actor
/// such as the main actor; on an actor instance only when it captures that
/// actor), the wrapper closure uses `isolation`, which makes the closure
/// isolated to it, so `Task.init` enqueues the task on the caller's actor
/// directly, as it does for `Task { }`: tasks made in order there start in
/// order, and the operation runs without a hop. Otherwise the wrapper does
/// not mention `isolation`: it is nonisolated, as `Task { }`'s closure would
/// be, and holds nothing of the caller's actor, so a `[weak self]` operation
/// started in an actor does not keep that actor alive while it runs (the
/// cycle `Task(until:)` exists to avoid), and a nonisolated operation
/// started on the main actor neither starts nor reports there.
///
/// `cancelledBy`: a token already cancelled when the task starts cancels it
/// before `operation` runs (the registration that cancels the task may come
/// only after a worker thread has started it).
///
/// (Swift 6.3.1's compiler crashes on each shorter spelling tried: the two
/// wrappers' four lines moved into a function taking the `@isolated(any)`
/// operation, `withUnsafeCurrentTask` written inside them, and
/// `operation.isolation` read here rather than in `_isIsolated`.)
@discardableResult
func _startTask<T: Sendable>(isolation: isolated (any Actor)?, priority: TaskPriority?,
                             cancelledBy token: CancelToken,
                             _ operation: sending @escaping @isolated(any) () async throws -> T,
                             done: @escaping @Sendable (Result<T, any Error>) -> Void) -> Task<T, any Error> {
    if _isIsolated(operation, to: isolation) {
        return Task(priority: priority) {
            _ = isolation   // isolates this closure to the caller's actor
            _cancelCurrentTask(if: token)
            let r: Result<T, any Error>
            do { r = .success(try await operation()) } catch { r = .failure(error) }
            done(r)
            return try r.get()
        }
    }
    return Task(priority: priority) {
        _cancelCurrentTask(if: token)
        let r: Result<T, any Error>
        do { r = .success(try await operation()) } catch { r = .failure(error) }
        done(r)
        return try r.get()
    }
}

private func _isIsolated<T>(_ operation: @isolated(any) () async throws -> T, to actor: (any Actor)?) -> Bool {
    operation.isolation === actor
}

private func _cancelCurrentTask(if token: CancelToken) {
    guard token.isCancelled else { return }
    withUnsafeCurrentTask { task in task?.cancel() }
}
