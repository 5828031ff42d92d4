import Synchronization

/// Counts down from n; exactly one call sees zero.
final class _Countdown: Sendable {
    let value: Atomic<Int>
    init(_ n: Int) { value = Atomic(n) }
    /// True for the call that reaches zero (acquire-release: that caller
    /// sees every write the other callers made before their tick).
    func tick() -> Bool { value.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 }
}
