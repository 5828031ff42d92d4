/// The task iterating an `until` sequence, cancellable while it waits.
struct _UnsafeTaskHandle: @unchecked Sendable { let task: UnsafeCurrentTask }
