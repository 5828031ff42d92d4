/// Starts `operation` in a new Task exactly as `Task.init` does, and hands
/// its outcome to `done` when it ends.
///
/// `operation` goes to `Task.init` as it is: when it is isolated to an actor
/// (it inherited the caller's, or names one), the task is enqueued on that
/// actor directly, so tasks made in order there start in order, as with
/// `Task { }`. A wrapper closure would lose that: its isolation is fixed
/// where it is written (nonisolated here), so it would start on the global
/// pool and hop, and tasks made in order on the main actor could start out
/// of order. The outcome is read by a second, nonisolated task awaiting the
/// first (with the same priority, so the bookkeeping does not lag behind). (Only for isolated operations would the wrapper do, but reading
/// `operation.isolation` of a generic function crashes Swift 6.3's SILGen.)
@discardableResult
func _startTask<T: Sendable>(priority: TaskPriority?,
                             _ operation: sending @escaping @isolated(any) () async throws -> T,
                             done: @escaping @Sendable (Result<T, any Error>) -> Void) -> Task<T, any Error> {
    let task = Task(priority: priority, operation: operation)
    Task(priority: priority) { done(await task.result) }
    return task
}
