// Shared by the behaviour suites of the three implementations (the lock-free
// CollapsingFutures, DispatchLockedFutures and MutexLockedFutures): the same
// test sources are compiled into three test targets, one per module,
// selected by DISPATCH_LOCK / MUTEX_LOCK.
#if DISPATCH_LOCK
import DispatchLockedFutures
#elseif MUTEX_LOCK
import MutexLockedFutures
#else
import CollapsingFutures
#endif
import TestSupport

/// A consumer that stores a token or future and registers handlers capturing
/// itself: the seed cycle `self -> token -> handler -> self`.
final class Consumer: @unchecked Sendable {
    let deinits: Counter
    var token: CancelToken?
    var future: Future<Int>?
    let ran = Counter()
    init(_ deinits: Counter) { self.deinits = deinits }
    deinit { deinits.increment() }
}
