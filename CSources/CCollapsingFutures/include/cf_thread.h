// cf_thread.h — how the library starts its own threads (the wheels'
// drivers, the firing pool's threads): detached, never joined.
#ifndef CF_THREAD_H
#define CF_THREAD_H

#pragma clang assume_nonnull begin

#ifdef __cplusplus
extern "C" {
#endif

/// Starts a detached thread running `body(arg)`: 0, or pthread_create's error.
int cf_start_thread(void *_Nullable (*_Nonnull body)(void *_Nullable), void *_Nullable arg);

/// Says on stderr that `what` (a thread the library cannot work without)
/// could not start, with `error`, then aborts.
_Noreturn void cf_thread_start_failed(const char *what, int error);

#ifdef __cplusplus
}
#endif

#pragma clang assume_nonnull end

#endif
