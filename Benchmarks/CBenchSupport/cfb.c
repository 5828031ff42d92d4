#include "cfb.h"
#include "cf_upcalls.h"
#include <errno.h>
#include <stdlib.h>

// ---- malloc interposer ----------------------------------------------------
// Linked into the benchmark executable, these definitions take precedence
// over libc's for every library in the process (the Swift runtime included).
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static volatile int counting;
static uint64_t count;

#define COUNT() do { if (counting) __atomic_fetch_add(&count, 1, __ATOMIC_RELAXED); } while (0)

void *malloc(size_t n) { COUNT(); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { COUNT(); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { COUNT(); return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t a, size_t n) { COUNT(); return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { COUNT(); return __libc_memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
    COUNT();
    void *p = __libc_memalign(a, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

void cfb_count_allocs(int on) {
    if (on) __atomic_store_n(&count, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&counting, on, __ATOMIC_SEQ_CST);
}

uint64_t cfb_alloc_count(void) { return __atomic_load_n(&count, __ATOMIC_SEQ_CST); }

// ---- the C floor ----------------------------------------------------------
static void floor_node_event(cf_node *n, int event) {
    (void)event;
    __libc_free(n);  // every event hands back the list's (only) reference
}

// The floor keeps no node for reuse and arms no deadline.
static void floor_node_free(cf_node *n) { (void)n; abort(); }
static void floor_firing_run(cf_node *n, void *_Nullable unless) { (void)n; (void)unless; abort(); }
static void floor_deadline_event(cf_deadline *d, int event) { (void)d; (void)event; abort(); }

static const cf_upcalls floor_upcalls = {
    .node_event = floor_node_event,
    .node_free = floor_node_free,
    .firing_run = floor_firing_run,
    .deadline_event = floor_deadline_event,
};

void cfb_floor_use(void) { cf_use_upcalls(&floor_upcalls); }

cf_token *cfb_token_new(void) {
    cf_token *t = __libc_memalign(16, sizeof(cf_token));
    cf_token_init(t, 0);
    return t;
}

void cfb_token_free(cf_token *t) {
    cf_token_settle(t, CF_W_IMMORTAL);
    __libc_free(t);
}

cf_node *_Nullable cfb_register_noop(cf_token *t) {
    cf_node *n = malloc(sizeof(cf_node));   // glibc malloc is 16-byte aligned
    cf_node_init(n);
    if (cf_token_register(t, n) != CF_REG_ADDED) { free(n); return NULL; }
    return n;
}

void cfb_token_cancel(cf_token *t) { cf_token_settle(t, CF_W_CANCELLED); }

void cfb_register_cancel(int n) {
    cf_token t;
    cf_token_init(&t, 0);
    for (int i = 0; i < n; i++) cfb_register_noop(&t);
    cf_token_settle(&t, CF_W_CANCELLED);
}

void cfb_churn(cf_token *t, long iterations) {
    for (long i = 0; i < iterations; i++) {
        cf_node *n = cfb_register_noop(t);
        if (n) cf_node_remove(t, n);
    }
}

// The floor's wheel: its driver frees each entry it hands back (a cancelled
// entry is dropped; none fires within its 30 s).
static void floor_deadline_free(cf_deadline *d, int event) { (void)event; __libc_free(d); }

void cfb_deadline_arm_cancel(long iterations) {
    static cf_wheel *wheel;
    if (wheel == NULL) wheel = cf_wheel_create(floor_deadline_free, CF_CLOCK_CONTINUOUS);
    if (wheel == NULL) abort();
    for (long i = 0; i < iterations; i++) {
        cf_deadline *d = malloc(sizeof(cf_deadline));
        cf_deadline_arm(wheel, d, 30ull * 1000 * 1000 * 1000);
        cf_deadline_cancel(wheel, d);
    }
}
