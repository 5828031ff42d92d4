// Helpers shared by the test targets of the lock-free module.
import Foundation
import Synchronization

/// Counts events (handler runs, deinits) across threads.
public final class Count: Sendable {
    private let n = Atomic<Int>(0)
    public init() {}
    public func increment() { n.add(1, ordering: .sequentiallyConsistent) }
    public var value: Int { n.load(ordering: .sequentiallyConsistent) }
}

/// An object whose deinit is counted: leak tests capture these.
public final class Tracked: Sendable {
    public let deinits: Count
    public init(_ d: Count) { deinits = d }
    deinit { deinits.increment() }
}

public struct Boom: Error, Equatable {
    public var code: Int
    public init(code: Int = 0) { self.code = code }
}

/// Polls (bounded) until `condition` holds, yielding to other tasks. The bound
/// only stops a broken test from hanging; no test asserts a duration.
public func eventually(_ condition: @Sendable () -> Bool) async -> Bool {
    for _ in 0..<2000 {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 1_000_000)
    }
    return condition()
}
