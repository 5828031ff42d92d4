// cf_node_pool.c — the per-thread free lists of cf_node_pool.h: their
// storage, freeing them when their thread exits, and the ThreadSanitizer
// annotations of their reuse.
#include "cf_node_pool.h"
#include "cf_upcalls.h"

#include <pthread.h>

__thread cf_node_pool cf_node_pool_here;

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CF_TSAN 1
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#endif
#endif

// The annotations name the byte after the node's state word, not the word
// itself: TSan already orders the word's own atomics, and a sync object of
// their own keeps these from standing in for them.
void cf_node_fields_released(const cf_node *n) {
#ifdef CF_TSAN
    __tsan_release((char *)n + 1);
#else
    (void)n;
#endif
}

void cf_node_fields_acquired(const cf_node *n) {
#ifdef CF_TSAN
    __tsan_acquire((char *)n + 1);
#else
    (void)n;
#endif
}

static pthread_key_t exit_key;
static int exit_key_made;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

// Runs as a thread that kept nodes exits. Freeing a node runs no handler
// (its fields were cleared when it was kept), so nothing is kept meanwhile.
// Nodes kept by later destructors of other keys watch anew, and pthreads
// calls this again, up to PTHREAD_DESTRUCTOR_ITERATIONS rounds in all.
static void free_pools(void *unused) {
    (void)unused;
    cf_node_pool *pool = &cf_node_pool_here;
    pool->watched = 0;
    for (int slot = 0; slot < CF_POOL_SLOTS; slot++) {
        const void *cls = pool->lists[slot].cls;
        cf_node *n;
        while (cls && (n = cf_node_pool_take(cls))) cf_upcalls_in_use->node_free(n);
    }
}

static void make_exit_key(void) { exit_key_made = pthread_key_create(&exit_key, free_pools) == 0; }

int cf_node_pool_watch(void) {
    // pthread_once orders exit_key_made for every thread that passes it.
    pthread_once(&exit_key_once, make_exit_key);
    // Any non-NULL value: the destructor runs only for those.
    if (!exit_key_made || pthread_setspecific(exit_key, &cf_node_pool_here) != 0) return 0;
    cf_node_pool_here.watched = 1;
    return 1;
}
