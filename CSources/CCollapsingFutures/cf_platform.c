// cf_platform.c — what differs between platforms, kept out of the lock-free
// core (cf_core.c): which thread is the process's main thread; starting
// the library's own threads (cf_thread.h); and a debug count of futures
// per thread for tests.
#include "cf_platform.h"
#include "cf_thread.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__APPLE__)
#include <unistd.h>
#include <sys/syscall.h>
#endif

// Per thread: 0 unknown, 1 main, 2 not main. A thread's answer never
// changes, so it is computed once (the check is on every registration; its
// inline fast path is in cf_platform.h).
__thread int cf_main_thread_cache;

int cf_is_main_thread_compute(void) {
#if defined(__APPLE__)
    // Darwin: thread ids are not process ids; ask pthreads.
    cf_main_thread_cache = pthread_main_np() ? 1 : 2;
#else
    // Linux: the main thread's kernel thread id is the process id.
    cf_main_thread_cache = (syscall(SYS_gettid) == getpid()) ? 1 : 2;
#endif
    return cf_main_thread_cache == 1;
}

// Futures created minus freed on this thread (debug builds of the Swift layer).
__thread long cf_debug_futures_alive;

int cf_start_thread(void *_Nullable (*_Nonnull body)(void *_Nullable), void *_Nullable arg) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    int error = pthread_create(&thread, &attr, body, arg);
    pthread_attr_destroy(&attr);
    return error;
}

void cf_thread_start_failed(const char *what, int error) {
    fprintf(stderr, "CollapsingFutures: cannot start %s (pthread_create: %s)\n", what, strerror(error));
    abort();
}
