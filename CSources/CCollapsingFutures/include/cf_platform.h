// cf_platform.h — what the Swift layer asks of the platform, per thread:
// whether this is the main thread, and (debug builds) how many futures it
// keeps alive. Thread-local, so no atomics (cf_platform.c).
#ifndef CF_PLATFORM_H
#define CF_PLATFORM_H

#pragma clang assume_nonnull begin

#ifdef __cplusplus
extern "C" {
#endif

/// This thread's answer to cf_is_main_thread: 0 not computed yet, 1 main,
/// 2 not main (cf_platform.c). Thread-local, so no atomics.
extern __thread int cf_main_thread_cache;
/// Computes and caches this thread's answer (cf_platform.c).
int cf_is_main_thread_compute(void);

/// Debug builds of the Swift layer: futures created on this thread minus
/// futures freed on it (cf_platform.c), so a test run on one thread can
/// count the futures a chain keeps alive. Thread-local, so no atomics.
extern __thread long cf_debug_futures_alive;
static inline void cf_debug_futures_add(long delta) { cf_debug_futures_alive += delta; }
static inline long cf_debug_futures_count(void) { return cf_debug_futures_alive; }

/// 1 on the process's main thread, cached per thread (cf_platform.c:
/// pthread_main_np() on Darwin, gettid() == getpid() on Linux). Inline: the
/// Swift layer asks on every registration and every run.
static inline int cf_is_main_thread(void) {
    int c = cf_main_thread_cache;
    return c != 0 ? c == 1 : cf_is_main_thread_compute();
}

#ifdef __cplusplus
}
#endif

#pragma clang assume_nonnull end

#endif
