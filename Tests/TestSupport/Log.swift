import Foundation

/// Thread-safe ordered log (NSLock: ThreadSanitizer sees pthread mutexes,
/// not Synchronization.Mutex's futex).
public final class Log<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    public init() {}
    public func append(_ x: T) { lock.withLock { items.append(x) } }
    public var all: [T] { lock.withLock { items } }
}
