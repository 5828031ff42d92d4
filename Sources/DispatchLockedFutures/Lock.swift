// The lock of the baseline: a faithful port of the original's @synchronized,
// as a serial DispatchQueue per object (`sync`). Compiled a second time with
// MUTEX_LOCK as MutexLockedFutures, the same design with Synchronization.Mutex.
import Dispatch
import Foundation
import Synchronization
import CCollapsingFutures

#if MUTEX_LOCK
final class _Lock: Sendable {
    private let m = Mutex<Void>(())
    init() {}
    @inline(__always)
    func sync<R>(_ body: () throws -> R) rethrows -> R { try m.withLock { _ in try body() } }
}
#else
final class _Lock: Sendable {
    private let q = DispatchQueue(label: "cf.locked")
    init() {}
    @inline(__always)
    func sync<R>(_ body: () throws -> R) rethrows -> R { try q.sync(execute: body) }
}
#endif

/// Cascades of handlers run from a per-thread queue drained by the outermost
/// settle (the same no-recursion rule as the lock-free core).
final class _Drain {
    var pending: [() -> Void] = []
    var head = 0
    var draining = false

    nonisolated(unsafe) static var key: pthread_key_t = {
        var k = pthread_key_t()
        pthread_key_create(&k) { p in if let p { Unmanaged<_Drain>.fromOpaque(p).release() } }
        return k
    }()

    static var current: _Drain {
        if let p = pthread_getspecific(key) { return Unmanaged<_Drain>.fromOpaque(p).takeUnretainedValue() }
        let d = _Drain()
        pthread_setspecific(key, Unmanaged.passRetained(d).toOpaque())
        return d
    }

    /// Runs `batch` in order after whatever this thread is already running.
    static func run(_ batch: [() -> Void]) {
        let d = current
        d.pending.append(contentsOf: batch)
        guard !d.draining else { return }
        d.draining = true
        while d.head < d.pending.count {
            let f = d.pending[d.head]
            d.head += 1
            f()
        }
        d.pending.removeAll(keepingCapacity: true)
        d.head = 0
        d.draining = false
    }
}

/// The same cached check the lock-free version uses (Foundation's makes two
/// system calls per call on Linux, which would slow the baseline unfairly).
@inline(__always) func _isMainThread() -> Bool { cf_is_main_thread() != 0 }
