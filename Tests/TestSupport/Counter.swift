import Synchronization

/// Counts events (handler runs, deinits) across threads.
public final class Counter: Sendable {
    private let n = Atomic<Int>(0)
    public init() {}
    public func increment() { n.add(1, ordering: .sequentiallyConsistent) }
    public var value: Int { n.load(ordering: .sequentiallyConsistent) }
}
