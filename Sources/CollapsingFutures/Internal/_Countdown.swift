import Synchronization

/// Counts down from n; exactly one call sees zero.
@usableFromInline
final class _Countdown: Sendable {
    let value: Atomic<Int>
    @usableFromInline init(_ n: Int) { value = Atomic(n) }
    /// True for the call that reaches zero (acquire-release: that caller
    /// sees every write the other callers made before their tick).
    @usableFromInline func tick() -> Bool { value.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 }
}
