// Small helpers the library's types share, each a few lines.
import Synchronization

/// The discard outcome of `CancelToken.cancelled()` (mapped to `false`).
struct _Uninhabited: Error {}

/// A task, held so that another thread can cancel it: one waiting in an
/// `until` sequence (`_UntilSequence`, through `_Waiting`), or the task a
/// `withCancelToken` call names (`_TaskCancelledTokens`).
struct _UnsafeTaskHandle: @unchecked Sendable { let task: UnsafeCurrentTask }

/// A weak reference to `object`, to hand across concurrency domains.
final class _Weak<O: AnyObject & Sendable>: Sendable {
    weak let object: O?
    init(_ o: O) { object = o }
}

/// A flag claimed once, by exactly one caller.
final class _Once: Sendable {
    private let flag = Atomic<Bool>(false)
    func claim() -> Bool { !flag.exchange(true, ordering: .acquiringAndReleasing) }
}

/// Counts down from n; exactly one call sees zero.
@usableFromInline
final class _Countdown: Sendable {
    let value: Atomic<Int>
    @usableFromInline init(_ n: Int) { value = Atomic(n) }
    /// True for the call that reaches zero (acquire-release: that caller
    /// sees every write the other callers made before their tick).
    @usableFromInline func tick() -> Bool { value.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 }
}
