// The lock of the baseline: a faithful port of the original's @synchronized,
// as a serial DispatchQueue per object (`sync`), compiled with DISPATCH_LOCK
// as DispatchLockedFutures; compiled a second time with MUTEX_LOCK as
// MutexLockedFutures, the same design with Synchronization.Mutex. Neither
// links the lock-free core it is measured against.
import Dispatch
import Foundation
import Synchronization

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
/// settle (the same no-recursion rule and order as the lock-free core: what
/// a handler starts runs right after it returns, before its later siblings).
final class _Drain {
    /// Started by the running handler (or the outermost call), in order.
    var started: [() -> Void] = []
    /// Waiting siblings, as a stack: the next to run is last.
    var rest: [() -> Void] = []
    var draining = false
    /// Inline runs nested on this thread now (the lock-free core's
    /// `cf_inline_depth`): from `maxInlineDepth` on, a handler found
    /// runnable queues here instead of recursing.
    var inlineDepth = 0
    static let maxInlineDepth = 16
    /// Whether this is the main thread, asked once per thread.
    let isMain = Thread.isMainThread

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

    /// Whether a handler found runnable now must wait behind work the running
    /// handler has already started (so it cannot overtake earlier ones), or
    /// because too many inline runs are nested already (bounded stack).
    static var mustQueue: Bool {
        let d = current
        return (d.draining && !d.started.isEmpty) || d.inlineDepth >= maxInlineDepth
    }

    /// Runs `body` here and now as one counted inline run.
    static func runInline(_ body: () -> Void) {
        let d = current
        d.inlineDepth += 1
        body()
        d.inlineDepth -= 1
    }

    /// Runs `batch` in order right after the running handler returns (at
    /// once, outside any handler).
    static func run(_ batch: [() -> Void]) {
        let d = current
        d.started.append(contentsOf: batch)
        guard !d.draining else { return }
        d.draining = true
        let depth = d.inlineDepth
        while true {
            if !d.started.isEmpty {
                d.rest.append(contentsOf: d.started.reversed())
                d.started.removeAll(keepingCapacity: true)
            }
            guard let f = d.rest.popLast() else { break }
            d.inlineDepth = 0
            f()
        }
        d.draining = false
        d.inlineDepth = depth
    }
}

/// Cached per thread, as the lock-free version's check is (Foundation's
/// `Thread.isMainThread` makes system calls on Linux on every call, which
/// would slow the baseline unfairly); off the main thread, whether this is
/// the main queue, drained by another thread (the lock-free version's rule).
@inline(__always) func _isMainThread() -> Bool {
    _Drain.current.isMain || DispatchQueue.getSpecific(key: _mainQueueKey) != nil
}

/// Marks the main queue (see `_isMainThread`).
let _mainQueueKey: DispatchSpecificKey<Bool> = {
    let key = DispatchSpecificKey<Bool>()
    DispatchQueue.main.setSpecific(key: key, value: true)
    return key
}()
