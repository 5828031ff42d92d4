/// The tokens that enclosing `withCancelToken` calls cancel when the task
/// running them is cancelled, innermost first. A task-local: other tasks
/// (children, and unstructured tasks made inside) see it too, but a
/// cancellation of theirs cancels no token (a child's comes before its
/// parent's handlers run), so each entry names its task.
final class _TaskCancelledTokens: Sendable {
    @TaskLocal static var innermost: _TaskCancelledTokens?

    let token: CancelToken
    let task: _UnsafeTaskHandle?
    let outer: _TaskCancelledTokens?

    /// An entry for `token`, cancelled with the current task.
    init(_ token: CancelToken) {
        self.token = token
        task = withUnsafeCurrentTask { $0.map(_UnsafeTaskHandle.init) }
        outer = Self.innermost
    }

    /// Whether the current task's cancellation cancels the token stored in
    /// `owner`. An entry's task is alive while its token can still be
    /// cancelled (its source dies when `withCancelToken` returns), so an
    /// equal task is that task.
    static func include(_ owner: AnyObject) -> Bool {
        withUnsafeCurrentTask { current in
            var entry = innermost
            while let e = entry {
                if e.token._owner === owner && e.task?.task == current { return true }
                entry = e.outer
            }
            return false
        }
    }
}
