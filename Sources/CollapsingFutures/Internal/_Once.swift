import Synchronization

/// A flag claimed once, by exactly one caller.
final class _Once: Sendable {
    private let flag = Atomic<Bool>(false)
    func claim() -> Bool { !flag.exchange(true, ordering: .acquiringAndReleasing) }
}
