import CCollapsingFutures
import Dispatch

/// Marks the main queue, so that code it runs counts as "on the main thread"
/// in the threading rule even where another thread drains it: on Linux an
/// async `main` (or `dispatchMain()`) retires the main thread, and worker
/// threads drain the main queue, so the main actor runs off the main thread
/// (as it does under `swift test`).
let _mainQueueKey: DispatchSpecificKey<Bool> = {
    let key = DispatchSpecificKey<Bool>()
    DispatchQueue.main.setSpecific(key: key, value: true)
    return key
}()

/// Whether the caller is on the main thread or running on the main queue:
/// the threading rule's "main thread". On the main thread this is a cached
/// thread-local read; elsewhere Dispatch is asked too (about 9 ns).
@inline(__always) func _isOnMain() -> Bool {
    cf_is_main_thread() != 0 || DispatchQueue.getSpecific(key: _mainQueueKey) != nil
}
