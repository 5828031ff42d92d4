// cf_core.c — the cancel-token state machine. See cf_core.h for the essay.
#include "cf_core.h"
#include "cf_upcalls.h"

#include <atomic_ops.h>
#include <sched.h>

_Static_assert(sizeof(AO_t) == sizeof(uintptr_t), "AO_t is one machine word");
_Static_assert(sizeof(cf_token) == sizeof(uintptr_t) + 2 * sizeof(unsigned int), "a token is a word and two counters");
_Static_assert(offsetof(cf_node, state) == 0, "node state word first");
_Static_assert(offsetof(cf_future, token) == 0, "a cf_future* is a cf_token*");
_Static_assert((CF_W_TAGS & ~(uintptr_t)15) == 0, "tags fit in the alignment of a node");
_Static_assert((CF_W_LINKED & (CF_W_TERMINAL | CF_W_CLEANING)) == 0, "the link tag is a tag of its own");
_Static_assert((CF_W_FAILED & CF_W_TAGS) == 0, "the failed bit is no tag: a terminal word has no pointer bits");

// The callback of every node: the process's table's (cf_upcalls.h).
#define CF_NODE_EVENT(n, event) cf_upcalls_in_use->node_event((n), (event))

#define W(p) ((volatile AO_t *)(p))
#define WI(p) ((volatile unsigned int *)(p))
#define NODE_OF(w) ((cf_node *)((w) & ~(uintptr_t)CF_W_TAGS))

// Cleanup runs when this many removed nodes are still linked, and more of
// them than half the nodes the last cleanup kept: amortized O(1) per removal.
// Whenever no removal is in flight (no thread between its remove CAS and the
// end of try_clean), removed-but-linked nodes <= max(CF_CLEAN_MIN - 1,
// last_len / 2), under concurrent churn too (proved by the model checker for
// one and two churning threads and a concurrent debug count: Model/README.md,
// P6): a remover that finds another cleaner at work leaves
// its node to that cleaner, which re-checks the trigger after it clears
// CLEANING, and a lost CLEANING CAS is retried. While a cleaner is preempted
// holding CLEANING, removals made meanwhile stay linked until it resumes
// (remove never waits). At least 2: a pass can leave only the head removed, so
// each pass the re-check starts unlinks at least one node and the loop ends
// when removals do.
#define CF_CLEAN_MIN 16
_Static_assert(CF_CLEAN_MIN >= 2, "a cleanup pass re-checked by the trigger unlinks something");

uintptr_t cf_token_load(const cf_token *t) {
    // Acquire: pairs with the full CAS in cf_token_settle, so whoever sees a
    // terminal word sees the writes made before the settle (a future's result).
    return AO_load_acquire(W(&t->word));
}

uintptr_t cf_node_state(const cf_node *n) {
    // Acquire: a caller that sees CLAIMED/REMOVED/DISCARDED sees the winner's
    // preceding writes (only used to answer remove()).
    return AO_load_acquire(W(&n->state)) & CF_N_FATE;
}

// Moves `n` out of LIVE to `fate`, keeping its owner's bit. Relaxed load:
// the bit never changes after the node's init, which happened before the
// node was shared with us. Full CAS: exactly one of settle, claim and
// remove wins the node; acquire, the winner sees the handler the
// registering thread wrote; release, a loser that reads the state sees the
// winner's fate.
static int leave_live(cf_node *n, uintptr_t fate) {
    AO_t own = AO_load(W(&n->state)) & CF_N_IN_FUTURE;
    return AO_compare_and_swap_full(W(&n->state), own | CF_N_LIVE, own | fate);
}

int cf_token_link(cf_token *t, cf_token *root) {
    // Full: release publishes the link to cf_token_resolve's acquire; one
    // CAS from the empty word, so a racing registration (whose CAS also
    // starts from it) and the link cannot both win.
    return AO_compare_and_swap_full(W(&t->word), 0, (AO_t)root | CF_W_LINKED);
}

int cf_token_register(cf_token *t, cf_node *n) {
    // Acquire: if the word is terminal the caller runs the handler inline and
    // must see what was written before the cancel (same pairing as cf_token_load).
    AO_t w = AO_load_acquire(W(&t->word));
    for (;;) {
        if (w & CF_W_CANCELLED) return CF_REG_CANCELLED;
        if (w & CF_W_IMMORTAL) return CF_REG_IMMORTAL;
        if (w & CF_W_LINKED) return CF_REG_LINKED;
        // Plain store: `n` is still private to this thread. The observed head
        // is only ever stored as `next`, never dereferenced, so the push is
        // ABA-free (a recycled head is still the correct `next`).
        n->next = NODE_OF(w);
        // Full, because both halves are needed and libatomic_ops has no
        // acquire-release CAS: release on success publishes n's fields to
        // whoever later acquires the word (settle, cleaner); acquire on
        // failure, because a terminal word seen here makes the caller run the
        // handler inline, which must see what was written before the settle
        // (a future's result). Preserves CF_W_CLEANING.
        AO_t seen = AO_fetch_compare_and_swap_full(W(&t->word), w,
                                                   (AO_t)n | (w & CF_W_CLEANING));
        if (seen == w) return CF_REG_ADDED;
        w = seen;
    }
}

// ---- the per-thread drain queue ------------------------------------------
// Nodes taken off settled tokens wait here until this thread's outermost
// settle runs them. Two lists, both touched by this thread only (no atomics):
//   started  what the running callback (or the outermost call) has started,
//            in the order started: settles and queued unlinked runs;
//   rest     what was already waiting: the running callback's later siblings.
// After each callback the started list is spliced in front of the rest, so
// what a handler starts runs right after it returns and before its later
// siblings: the order synchronous recursion gives at callback boundaries,
// with constant native stack.
// A queued node's `next` carries in bit 0 how it settles (cf_node): clear
// to run (its token was cancelled), set to be discarded (any other
// terminal: immortal). q_mark writes the bit with the link when the node is
// queued; every later write of its `next` (q_set_next) keeps it, and every
// read of a queued node's link (q_next) strips it.
#define Q_DISCARD ((uintptr_t)1)
static inline cf_node *_Nullable q_next(cf_node *n) {
    return (cf_node *)((uintptr_t)n->next & ~Q_DISCARD);
}
static inline void q_set_next(cf_node *n, cf_node *_Nullable next) {
    n->next = (cf_node *)((uintptr_t)next | ((uintptr_t)n->next & Q_DISCARD));
}
// Links n to `next` in the queue, marked with how it settles into `terminal`.
static inline void q_mark(cf_node *n, uintptr_t terminal, cf_node *_Nullable next) {
    n->next = (cf_node *)((uintptr_t)next | ((terminal & CF_W_CANCELLED) ? 0 : Q_DISCARD));
}

static __thread cf_node *_Nullable started_head;
static __thread cf_node *_Nullable started_tail;
static __thread cf_node *_Nullable rest_head;
static __thread int draining;
__thread unsigned cf_inline_depth;

static void enqueue_started(cf_node *first, cf_node *last) {
    q_set_next(last, NULL);
    if (started_tail) q_set_next(started_tail, first); else started_head = first;
    started_tail = last;
}

static void drain(void) {
    // Callbacks start at depth 0: this loop is their stack's new base (it
    // is never re-entered; each callback leaves the depth as it found it,
    // its inline runs entering and exiting in pairs), and the depth it was
    // entered at comes back after.
    unsigned depth = cf_inline_depth;
    if (depth) cf_inline_depth = 0;
    draining = 1;
    for (;;) {
        if (started_head) {
            q_set_next(started_tail, rest_head);
            rest_head = started_head;
            started_head = started_tail = NULL;
        }
        cf_node *n = rest_head;
        if (n == NULL) break;
        int cancelled = ((uintptr_t)n->next & Q_DISCARD) == 0;
        rest_head = q_next(n);
        // Out of LIVE (leave_live): exactly one of settle/remove wins the
        // node. Claimed here, just before it runs, not when its token
        // settled: an `unless` token cancelled by an earlier handler still
        // removes it.
        int won = leave_live(n, cancelled ? CF_N_CLAIMED : CF_N_DISCARDED);
        // After this call the node may be freed: nothing of it is read again.
        CF_NODE_EVENT(n, won ? (cancelled ? CF_EV_RUN : CF_EV_DISCARD) : CF_EV_UNLINK);
    }
    draining = 0;
    if (depth) cf_inline_depth = depth;
}

int cf_drain_must_queue(void) {
    return (draining && started_head != NULL) || cf_inline_depth >= CF_INLINE_DEPTH_MAX;
}

size_t cf_drain_waiting_count(void) {
    size_t n = 0;
    for (cf_node *p = started_head; p; p = q_next(p)) n++;
    for (cf_node *p = rest_head; p; p = q_next(p)) n++;
    return n;
}

cf_drain_aside cf_drain_set_aside(void) {
    cf_drain_aside aside = {started_head, started_tail, rest_head, draining, cf_inline_depth};
    started_head = started_tail = rest_head = NULL;
    draining = 0;
    cf_inline_depth = 0;
    return aside;
}

void cf_drain_put_back(cf_drain_aside aside) {
    started_head = aside.started_head;
    started_tail = aside.started_tail;
    rest_head = aside.rest_head;
    draining = aside.draining;
    cf_inline_depth = aside.inline_depth;
}

void cf_node_enqueue(cf_node *n, uintptr_t terminal) {
    q_mark(n, terminal, NULL);
    enqueue_started(n, n);
    if (!draining) drain();
}

int cf_token_settle(cf_token *t, uintptr_t terminal) {
    AO_t w = AO_load_acquire(W(&t->word));
    for (;;) {
        if (w & (CF_W_TERMINAL | CF_W_LINKED)) return 0;
        if (w & CF_W_CLEANING) {
            // A remover is unlinking interior nodes (bounded work, no
            // callbacks): wait it out so we walk a stable list.
            sched_yield();
            w = AO_load_acquire(W(&t->word));
            continue;
        }
        // Full: release publishes whatever the caller wrote before settling
        // (a future's result) to everyone who acquires the terminal word;
        // acquire makes every pushed node and the cleaner's relinks visible.
        AO_t seen = AO_fetch_compare_and_swap_full(W(&t->word), w, terminal);
        if (seen == w) break;
        w = seen;
    }
    // The list is ours now: nobody else reads or writes its links.
    cf_node *lifo = NODE_OF(w), *fifo = NULL, *last = lifo;
    while (lifo) {
        cf_node *next = lifo->next;
        q_mark(lifo, terminal, fifo);
        fifo = lifo;
        lifo = next;
    }
    if (fifo) enqueue_started(fifo, last);
    if (!draining) drain();
    return 1;
}

// The cleanup trigger. `dead` is read as signed: a cleaner can unlink a
// node between its remover's CAS and increment, driving the count briefly
// below zero, and that must not start a pass. Relaxed load of last_len: the
// counters only steer when to clean; a stale value moves the moment, never
// the safety.
static int wants_clean(cf_token *t, unsigned int dead) {
    return (int)dead >= CF_CLEAN_MIN && (int)dead > (int)(AO_int_load(WI(&t->last_len)) / 2);
}

// Clears CF_W_CLEANING, which the caller (a cleaner, or a count) holds.
// Full: release publishes the relinks to the next cleaner or settler (both
// acquire the word); the full fence orders this clear before the caller's
// re-check of `dead` (store-buffering with a remover's full increment then
// load of the word: one of the two sees the other). The word can only have
// gained pushes meanwhile, so the loop only retries past new heads.
static void clear_cleaning(cf_token *t) {
    AO_t w = AO_load(W(&t->word));
    for (;;) {
        AO_t seen = AO_fetch_compare_and_swap_full(W(&t->word), w, w & ~(AO_t)CF_W_CLEANING);
        if (seen == w) return;
        w = seen;
    }
}

// Unlinks REMOVED nodes below the current head. Called by a remover whose
// removal met the trigger; loops while removals made during its pass meet it.
static void try_clean(cf_token *t) {
    for (;;) {
        AO_t w = AO_load(W(&t->word));
        // Another cleaner: it re-checks the trigger after clearing CLEANING
        // and so takes our node (see the full increment in cf_node_remove).
        // A linked word has no list.
        if (w & (CF_W_TERMINAL | CF_W_CLEANING | CF_W_LINKED)) return;
        if (NODE_OF(w) == NULL) return;
        // Acquire: makes every node linked below `w` and its `next` visible.
        // Lost to a push or a cleaner: look at the word again.
        if (!AO_compare_and_swap_acquire(W(&t->word), w, w | CF_W_CLEANING)) continue;
        // We own the interior links below head: pushes only add above it,
        // settle waits for us, and removers only touch node states.
        cf_node *head = NODE_OF(w), *prev = head, *cur = head->next, *unlinked = NULL;
        unsigned int kept = 1, removed = 0;
        while (cur) {
            cf_node *next = cur->next;
            // Acquire: pairs with the remover's CAS (we only unlink REMOVED
            // nodes; none can be CLAIMED or DISCARDED while cancellable).
            if ((AO_load_acquire(W(&cur->state)) & CF_N_FATE) == CF_N_REMOVED) {
                prev->next = next;
                cur->next = unlinked;
                unlinked = cur;
                removed++;
            } else {
                prev = cur;
                kept++;
            }
            cur = next;
        }
        // Relaxed is enough for the two counters: they only steer when to clean.
        AO_int_store(WI(&t->last_len), kept);
        AO_int_fetch_and_add(WI(&t->dead), 0u - removed);
        clear_cleaning(t);
        while (unlinked) {
            cf_node *next = unlinked->next;
            CF_NODE_EVENT(unlinked, CF_EV_UNLINK);
            unlinked = next;
        }
        // Re-check: removals made while we held CLEANING did not clean.
        // Relaxed load, ordered after the full clearing CAS above.
        if (!wants_clean(t, AO_int_load(WI(&t->dead)))) return;
    }
}

int cf_node_remove(cf_token *t, cf_node *n) {
    // Out of LIVE: exactly one of remove/settle wins (see drain).
    if (!leave_live(n, CF_N_REMOVED)) return 0;
    // Full: orders the increment before try_clean's load of the word, so a
    // remover that sees CLEANING and leaves is seen by that cleaner's
    // re-check (the other half of the store-buffering pair in try_clean).
    unsigned int dead = AO_int_fetch_and_add1_full(WI(&t->dead)) + 1;
    if (wants_clean(t, dead)) try_clean(t);
    return 1;
}

int cf_node_claim(cf_node *n, uintptr_t fate) {
    // Out of LIVE, as in drain(): exactly one of claim/remove wins.
    return leave_live(n, fate);
}

static size_t debug_count(cf_token *t, int live_only) {
    for (;;) {
        AO_t w = AO_load_acquire(W(&t->word));
        if (w & (CF_W_TERMINAL | CF_W_LINKED)) return 0;
        if (NODE_OF(w) == NULL) return 0;
        if (w & CF_W_CLEANING) { sched_yield(); continue; }
        // Acquire, as a cleaner: the links below are stable until we clear it.
        if (!AO_compare_and_swap_acquire(W(&t->word), w, w | CF_W_CLEANING)) continue;
        size_t count = 0;
        for (cf_node *n = NODE_OF(w); n; n = n->next) {
            // Acquire, as the cleaner's read of a node state.
            if (!live_only || (AO_load_acquire(W(&n->state)) & CF_N_FATE) == CF_N_LIVE) count++;
        }
        // As a cleaner: removers that found CLEANING set while we counted
        // left their nodes to us (see try_clean).
        clear_cleaning(t);
        // Re-check like a cleaner, so counting never suspends the list bound.
        // Relaxed load, ordered after the full clearing CAS above.
        if (wants_clean(t, AO_int_load(WI(&t->dead)))) try_clean(t);
        return count;
    }
}

int cf_future_claim(cf_future *f, uintptr_t expected, uintptr_t desired) {
    // Full: the CLAIMED winner then writes the result (published later by the
    // settle); the FLATTENING publication must be ordered before the cycle
    // walk's loads (store-buffering), which only a full fence guarantees.
    return AO_compare_and_swap_full(W(&f->claim), expected, desired);
}

uintptr_t cf_future_claim_load(const cf_future *f) {
    // Acquire: a walker that sees FLATTENING sees the target written before it.
    return AO_load_acquire(W(&f->claim));
}


size_t cf_token_debug_count(cf_token *t) { return debug_count(t, 0); }

size_t cf_token_debug_count_live(cf_token *t) { return debug_count(t, 1); }
