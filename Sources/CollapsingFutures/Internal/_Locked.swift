// A value behind a pthread mutex, for the few slow paths that need a lock
// (main-queue hops, the waits of `until` sequences, the thread of timers on
// other clocks; and ManualClock, in this package). Not
// Synchronization.Mutex: its lock lives in a prebuilt module whose futex
// operations ThreadSanitizer cannot see, so every use would be reported as
// a race in our sanitizer runs (and in our users').
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

package final class _Locked<T>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: T

    package init(_ value: T) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    package func withLock<R>(_ body: (inout T) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
