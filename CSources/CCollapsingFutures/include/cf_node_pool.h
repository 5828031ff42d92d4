// cf_node_pool.h — per-thread free lists of the Swift layer's node objects.
//
// A node object whose last reference is the one its token's list hands
// back (nothing else holds it: no CancelRegistration, no `unless` link, no
// hop) is dead, and the Swift layer (`_nodeEvent`) keeps it on this
// thread's free list for its class instead of freeing it, if its class is
// one that is kept; the next registration of that class on this thread
// takes it instead of allocating. It is reused only where it would
// otherwise have been freed, so nothing can still reach it: the core reads
// nothing of a node after its last callback (cf_core.h), and its fields
// were cleared when it was kept. While kept, its cf_node.next links the
// free list; it is reinitialised (cf_node_init) before it is registered
// again.
//
// The lists belong to one thread: no atomics. A thread keeps at most
// CF_NODE_LIST_MAX nodes of a class and CF_NODE_POOL_MAX in all (the rest
// are freed as usual). What a thread keeps is freed when it exits,
// through a pthread key's destructor that calls the upcall
// `node_free` (cf_upcalls.h) for each node; the main thread's stay until the
// process ends.
#ifndef CF_NODE_POOL_H
#define CF_NODE_POOL_H

#include "cf_core.h"

#pragma clang assume_nonnull begin

#ifdef __cplusplus
extern "C" {
#endif

/// A free list is keyed by the class of its nodes (its Swift metadata, so
/// a generic node class has one per specialization). A thread's lists are
/// a small open-addressed table: a class's list is in one of the
/// CF_POOL_PROBES slots starting at the one its key hashes to, and an
/// empty list may be taken over by another class. When all of them hold
/// other classes' nodes, its nodes are not kept.
enum { CF_POOL_SLOT_BITS = 5, CF_POOL_SLOTS = 1 << CF_POOL_SLOT_BITS, CF_POOL_PROBES = 4 };
/// Nodes a thread keeps of one class (a token with this many handlers
/// registered and cancelled on one thread reuses all of them), and in all
/// (about 400 KiB of nodes at most): what a class keeps leaves room for
/// others.
enum { CF_NODE_LIST_MAX = 1024, CF_NODE_POOL_MAX = 4096 };

typedef struct cf_node_list {
    const void *_Nullable cls;
    cf_node *_Nullable head;
    unsigned count;
} cf_node_list;

typedef struct cf_node_pool {
    cf_node_list lists[CF_POOL_SLOTS];
    unsigned kept;  ///< nodes in all the lists
    int watched;    ///< whether they are freed when the thread exits
} cf_node_pool;

/// This thread's free lists (cf_node_pool.c). Thread-local, so no atomics.
extern __thread cf_node_pool cf_node_pool_here;

/// Arranges for this thread's lists to be freed when it exits; 0 if that
/// cannot be arranged (then nothing may be kept). This thread only.
int cf_node_pool_watch(void);


/// The slot class `cls`'s probes start from (Fibonacci hashing: class
/// metadata addresses differ mostly in their middle bits).
static inline unsigned cf_node_pool_home(const void *cls) {
    return (unsigned)(((uint64_t)(uintptr_t)cls * 0x9E3779B97F4A7C15ull) >> (64 - CF_POOL_SLOT_BITS));
}

/// This thread's list of class `cls`, or NULL if it has none; with
/// `claiming`, an empty list within reach is given to `cls` when it has
/// none (NULL if there is none either).
static inline cf_node_list *_Nullable cf_node_pool_list(const void *cls, int claiming) {
    unsigned home = cf_node_pool_home(cls);
    cf_node_list *empty = NULL;
    for (unsigned i = 0; i < CF_POOL_PROBES; i++) {
        cf_node_list *l = &cf_node_pool_here.lists[(home + i) % CF_POOL_SLOTS];
        if (l->cls == cls) return l;
        if (!empty && !l->head) empty = l;
    }
    if (!claiming || !empty) return NULL;
    empty->cls = cls;
    return empty;
}

/// Takes a kept node of class `cls`, or NULL. This thread only. Inline:
/// one per registration of a kept class.
static inline cf_node *_Nullable cf_node_pool_take(const void *cls) {
    cf_node_list *l = cf_node_pool_list(cls, 0);
    cf_node *n = l ? l->head : NULL;
    if (!n) return NULL;
    l->head = n->next;
    l->count--;
    cf_node_pool_here.kept--;
    return n;
}

/// Keeps the dead node `n` of class `cls` (the caller's reference goes to
/// the list): 1, or 0 if its list or this thread keeps as many nodes as
/// it may, or `cls` has no list and no empty one is within reach (the
/// caller frees it). This thread only. Inline: one per dead node of a kept class.
static inline int cf_node_pool_keep(const void *cls, cf_node *n) {
    cf_node_pool *pool = &cf_node_pool_here;
    if (pool->kept >= CF_NODE_POOL_MAX || (!pool->watched && !cf_node_pool_watch())) return 0;
    cf_node_list *l = cf_node_pool_list(cls, 1);
    if (!l || l->count >= CF_NODE_LIST_MAX) return 0;
    n->next = l->head;
    l->head = n;
    l->count++;
    pool->kept++;
    return 1;
}

/// What makes reuse safe is the Swift runtime's reference counting: a
/// holder's accesses to a node precede its release of its reference
/// (release order), and the keeper's uniqueness check, followed by an
/// acquire fence (cf_is_only_reference), sees them. ThreadSanitizer cannot
/// see that ordering (the runtime is not instrumented), so the Swift layer
/// states it: a thread that accessed a node and may not hold the last
/// reference calls cf_node_fields_released when done with it; keeping the
/// node calls cf_node_fields_acquired. Empty calls except in builds with
/// ThreadSanitizer (cf_node_pool.c).
void cf_node_fields_released(const cf_node *n);
void cf_node_fields_acquired(const cf_node *n);

/// Whether this thread keeps the node `n` (tests: a dead node is either
/// freed or kept).
static inline int cf_node_pool_holds(cf_node *n) {
    for (int slot = 0; slot < CF_POOL_SLOTS; slot++)
        for (cf_node *k = cf_node_pool_here.lists[slot].head; k; k = k->next)
            if (k == n) return 1;
    return 0;
}

#ifdef __cplusplus
}
#endif

#pragma clang assume_nonnull end

#endif
