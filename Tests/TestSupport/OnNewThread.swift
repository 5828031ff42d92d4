import Foundation

/// A thread's body, handed to pthread_create.
private final class ThreadBody: @unchecked Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// Runs `body` on a new thread and returns once that thread has exited.
/// What the thread kept for reuse (cf_node_pool.h) is freed by then, so a
/// test that holds a weak reference to a node can see it freed, and no node
/// outlives the process with a weak-reference side table (LeakSanitizer
/// cannot follow the runtime's encoded pointer to that table).
public func onNewThread(_ body: @escaping @Sendable () -> Void) {
    let arg = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    #if canImport(Darwin)
    var thread: pthread_t? = nil
    let started = pthread_create(&thread, nil, { arg in
        Unmanaged<ThreadBody>.fromOpaque(arg).takeRetainedValue().run()
        return nil
    }, arg)
    precondition(started == 0, "pthread_create failed: \(started)")
    pthread_join(thread!, nil)
    #else
    var thread = pthread_t()
    let started = pthread_create(&thread, nil, { arg in
        Unmanaged<ThreadBody>.fromOpaque(arg!).takeRetainedValue().run()
        return nil
    }, arg)
    precondition(started == 0, "pthread_create failed: \(started)")
    pthread_join(thread, nil)
    #endif
}
