/// A task, held so that another thread can cancel it: one waiting in an
/// `until` sequence (`_UntilSequence`, through `_Waiting`), or the task a
/// `withCancelToken` call names (`_TaskCancelledTokens`).
struct _UnsafeTaskHandle: @unchecked Sendable { let task: UnsafeCurrentTask }
