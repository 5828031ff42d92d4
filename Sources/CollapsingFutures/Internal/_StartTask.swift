/// Starts `operation` in a new Task as `Task.init` does, and hands its
/// outcome to `done` in that task when it ends.
///
/// `isolation` is the caller's (its `#isolation`): the wrapper closure below
/// uses it, which makes the closure isolated to it, so `Task.init` enqueues
/// the task on the caller's actor directly, as it does for `Task { }`:
/// tasks made in order there start in order. (A wrapper that did not use it
/// would be nonisolated: it would start on the global pool and hop, and
/// tasks made in order on the main actor could start out of order.) An
/// operation that inherited the caller's actor then runs without a hop; one
/// isolated elsewhere hops, as it would from `Task { }`.
@discardableResult
func _startTask<T: Sendable>(isolation: isolated (any Actor)?, priority: TaskPriority?,
                             _ operation: sending @escaping @isolated(any) () async throws -> T,
                             done: @escaping @Sendable (Result<T, any Error>) -> Void) -> Task<T, any Error> {
    Task(priority: priority) {
        _ = isolation   // isolates this closure to the caller's actor
        let r: Result<T, any Error>
        do { r = .success(try await operation()) } catch { r = .failure(error) }
        done(r)
        return try r.get()
    }
}
