/// Starts `operation` in a new Task as `Task.init` does, and hands its
/// outcome to `done` in that task when it ends (for an operation isolated
/// to another actor, in a second task just after it ends).
///
/// `isolation` is the caller's (its `#isolation`). Where the task starts
/// follows the operation's own isolation, as `Task { }` does:
/// - Isolated to the caller's actor (it inherited it: always on a global
///   actor such as the main actor; on an actor instance only when it
///   captures that actor): the wrapper closure uses `isolation`, which
///   isolates it there too, so `Task.init` enqueues the task on that actor
///   directly: tasks made in order there start in order, and the operation
///   runs without a hop.
/// - Nonisolated: the wrapper does not mention `isolation`, so it is
///   nonisolated too and holds nothing of the caller's actor. A
///   `[weak self]` operation started in an actor does not keep that actor
///   alive while it runs (the cycle `Task(until:)` exists to avoid), and a
///   nonisolated operation started on the main actor neither starts nor
///   reports there.
/// - Isolated to another actor: the operation itself is the task, enqueued
///   on its actor directly (in creation order, as `Task { @A in }` is), and
///   a second, nonisolated task hands its outcome to `done`. Neither holds
///   the caller's actor.
///
/// `cancelledBy`: a token already cancelled when the task starts cancels it
/// before `operation` runs (the registration that cancels the task may come
/// only after a worker thread has started it). A token already cancelled
/// when this is called takes the nonisolated wrapper whatever the
/// operation's isolation, so that holds for an operation isolated to
/// another actor too.
///
/// (Swift 6.3.1's compiler crashes on each shorter spelling tried: the two
/// wrappers' four lines moved into a function taking the `@isolated(any)`
/// operation, `withUnsafeCurrentTask` written inside them, and
/// `operation.isolation` read here rather than in `_isolation(of:)`.)
@discardableResult
func _startTask<T: Sendable>(isolation: isolated (any Actor)?, priority: TaskPriority?,
                             cancelledBy token: CancelToken,
                             _ operation: sending @escaping @isolated(any) () async throws -> T,
                             done: @escaping @Sendable (Result<T, any Error>) -> Void) -> Task<T, any Error> {
    let operationIsolation = _isolation(of: operation)
    if operationIsolation === isolation {
        return Task(priority: priority) {
            _ = isolation   // isolates this closure to the caller's actor
            _cancelCurrentTask(if: token)
            let r: Result<T, any Error>
            do { r = .success(try await operation()) } catch { r = .failure(error) }
            done(r)
            return try r.get()
        }
    }
    // Also for a token already cancelled: this wrapper cancels the task
    // before the operation starts (then start order does not matter).
    if operationIsolation == nil || token.isCancelled {
        return Task(priority: priority) {
            _cancelCurrentTask(if: token)
            let r: Result<T, any Error>
            do { r = .success(try await operation()) } catch { r = .failure(error) }
            done(r)
            return try r.get()
        }
    }
    let task = Task(priority: priority, operation: operation)
    Task(priority: priority) { done(await task.result) }
    return task
}

private func _isolation<T>(of operation: @isolated(any) () async throws -> T) -> (any Actor)? {
    operation.isolation
}

private func _cancelCurrentTask(if token: CancelToken) {
    guard token.isCancelled else { return }
    withUnsafeCurrentTask { task in task?.cancel() }
}
