import Foundation

/// A lock-guarded value shared by reference, with `Mutex`'s `withLock`.
/// NSLock (a pthread mutex), not Synchronization.Mutex, whose futex-based
/// lock ThreadSanitizer cannot see: two threads using one `Mutex` at once
/// read as a race in `make test-tsan`.
public final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    public init(_ v: T) { value = v }
    public func withLock<R>(_ body: (inout T) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
