// cf_core.h — the core of CollapsingFutures: lock-free, except for the
// one wait below ("Where the core waits").
//
// Why C: the cancel-token state machine is a handful of compare-and-swaps on
// one machine word per token and one per handler. Written in C over
// libatomic_ops, every atomic and its ordering is spelled out and visible to
// ThreadSanitizer, and the Swift layer above stays a thin, allocation-aware
// wrapper (Sources/CollapsingFutures).
//
// The state word (cf_token.word), one AO_t per token:
//   0                      still cancellable, no handlers
//   node | [CF_W_CLEANING] still cancellable; `node` is the newest handler of a
//                          push-only (Treiber) stack linked through cf_node.next.
//                          CF_W_CLEANING: one remover owns the interior links.
//   CF_W_CANCELLED [| CF_W_FAILED]
//                          terminal: cancelled (no pointer bits). CF_W_FAILED
//                          is the Swift layer's: a future's token settles
//                          with it when its outcome is a failure; the core
//                          passes it along and never looks at it.
//   CF_W_IMMORTAL          terminal: can never be cancelled (no pointer bits)
//   root | CF_W_LINKED     final: a future's token linked into the token
//                          `root` (cf_token_link): it is that token from now
//                          on, and every operation acts on `root` instead
//                          (cf_token_resolve). Only from 0; `root` is never
//                          linked itself.
// Nodes and tokens are 16-byte aligned, so the low four bits are free.
//
// The node state (cf_node.state): its fate in the low two bits (CF_N_FATE):
// CF_N_LIVE, then exactly one of CLAIMED (it runs: the token was cancelled),
// REMOVED (cf_node_remove won), DISCARDED (the token became immortal).
// Whoever wins the CAS out of LIVE owns the handler. Above it, the owner's
// bit CF_N_IN_FUTURE, set at init and kept by every transition: the core
// never reads it otherwise; the owner's callback reads it to find the
// object the node lives in (cf_node_in_future).
//
// Naming: every symbol is prefixed cf_. Functions say above them who may call
// them concurrently and which memory ordering they use; every atomic says why
// its ordering is enough.
//
// Where the core waits. One place: cf_token_settle, while a remover holds
// CF_W_CLEANING on the same token, yields (sched_yield) and reloads until
// that cleaner clears it, so that it walks a stable list
// (cf_token_debug_count waits the same way). The cleaner's pass is bounded
// (it unlinks the removed interior nodes of one list: no callback, no
// allocation), so the settle waits for at most that pass, longer only if
// the cleaner's thread is descheduled during it. Nothing else waits: every
// other loop retries a CAS that failed because another thread made progress.
//
// The core never calls back while it owns anything: callbacks (the upcall `node_event`, cf_upcalls.h) run
// only after the node's fate is settled and the token word is released.
//
// Drain order. Settled nodes are run from a per-thread queue by the outermost
// settle on that thread (a loop, not recursion), so cascades of any length use
// constant stack. A node is claimed (LIVE -> CLAIMED/DISCARDED) only when its
// turn comes, so a remove() made by an earlier handler (an `unless` token it
// cancelled) still wins. What a callback starts (settles, and unlinked runs
// queued by cf_node_enqueue) runs right after that callback returns, in the
// order started, before the callback's later siblings: the order synchronous
// recursion would give at callback boundaries. A registration that finds its
// token cancelled runs inline, unless the running callback has already
// started something still waiting (cf_drain_must_queue): then it queues
// behind that, so it cannot overtake handlers registered before it.
//
// Stack depth. Inline runs nest: a continuation registered on a completed
// future, run inline, may register another (a retry loop over a call that
// fails synchronously). The Swift layer counts the inline runs nested on
// this thread (cf_inline_enter/exit); from CF_INLINE_DEPTH_MAX on, a
// registration that finds its token cancelled queues on this thread's drain
// instead (cf_drain_must_queue), and the drain runs each callback at depth
// 0. The drain is never re-entered, so the native stack holds at most
// 2 * CF_INLINE_DEPTH_MAX nested inline runs, whatever the recursion depth.
//
// The functions at a glance (in the style of libatomic_ops' header: who may
// call each concurrently, and the ordering of its atomics):
//
//   function                  callers                          atomics (ordering)
//   cf_token_init             one thread, before sharing       plain stores
//   cf_token_load             any thread, any time             load (acquire)
//   cf_token_resolve          any thread, any time             load (acquire)
//   cf_token_is_linked        any thread, any time             load (acquire)
//   cf_token_link             any threads, with everything     CAS (full)
//   cf_token_register         any threads, with everything     load (acquire); CAS (full)
//   cf_token_settle           any threads; one wins            load (acquire); CAS (full)
//   cf_node_remove            any thread, with everything      load (relaxed: owner's bit);
//                                                              CAS (full); add (full);
//                                                              may clean: CAS (acquire),
//                                                              node loads (acquire),
//                                                              CAS (full) to clear CLEANING,
//                                                              re-check loads (relaxed)
//   cf_node_claim             any thread; races remove only    load (relaxed); CAS (full)
//   cf_node_state             any thread                       load (acquire)
//   cf_drain_must_queue       the calling thread only          none (thread-local)
//   cf_drain_waiting_count    the calling thread only          none (thread-local)
//   cf_drain_set_aside/put_back the calling thread only        none (thread-local)
//   cf_inline_enter/exit      the calling thread only          none (thread-local)
//   cf_node_enqueue           the calling thread only          none (thread-local queue)
//   cf_future_claim           any threads; one wins            CAS (full: FLATTENING
//                                                              publication vs store buffering)
//   cf_future_claim_load      any thread                       load (acquire)
//   cf_token_debug_count(_live) any thread (tests, benchmark)  as a cleaner (with its re-check)
//
// Callbacks run from the drain (drain() in cf_core.c), after the node's CAS
// out of LIVE (full), on the thread that settled the token or queued the node.
#ifndef CF_CORE_H
#define CF_CORE_H

#include <stdint.h>
#include <stddef.h>

#pragma clang assume_nonnull begin

#ifdef __cplusplus
extern "C" {
#endif

/// Event passed to a node's callback. Every event also hands back the one
/// reference the token's list held on the node (the callee owns it: it
/// releases it, or keeps the node for reuse).
typedef enum cf_event {
    CF_EV_RUN = 1,      ///< the token was cancelled and this node was claimed: run the handler
    CF_EV_DISCARD = 2,  ///< the token became immortal and this node was claimed: drop the handler unrun
    CF_EV_UNLINK = 3,   ///< the node (already removed) left the list: only release the list's reference
} cf_event;

/// A handler registration: two words, the state and the link. Lives at a
/// fixed place in a 16-byte aligned allocation owned by the caller (a Swift
/// object in CollapsingFutures: after its header, or, with CF_N_IN_FUTURE,
/// after a future's fields; a malloc block in the C floor benchmark, at its
/// start), which the callback finds from the node.
typedef struct cf_node {
    uintptr_t state;                 ///< AO_t: CF_N_*; CAS only
    /// In a token's list: the older node (see cf_token_register). In the
    /// drain queue: the next queued node, with bit 0 set when this node
    /// settles into CF_W_IMMORTAL rather than CF_W_CANCELLED (nodes are
    /// 16-byte aligned, so the bit is free; cf_core.c only).
    struct cf_node *_Nullable next;
} cf_node;

/// The callback of every node is the process's (cf_upcalls.h: `node_event`),
/// given the node itself: its owner finds its own allocation from it. One
/// function for every node, so a node keeps no function pointer.

/// The two cleanup counters are 32 bits (AO_int ops): they count nodes of
/// one list, far fewer than 2^31 (each node takes at least 32 bytes), and
/// a token of two words keeps a future in a smaller malloc size class.
typedef struct cf_token {
    uintptr_t word;         ///< AO_t: the state word described above
    unsigned int dead;      ///< AO_int: removed nodes still linked (cleanup trigger)
    unsigned int last_len;  ///< AO_int: nodes kept by the last cleanup (cleanup trigger)
} cf_token;

/// A token plus the claim word of a future: who may set its result.
typedef struct cf_future {
    cf_token token;      ///< must stay first: a cf_future* is a cf_token*
    uintptr_t claim;     ///< AO_t: CF_F_*
} cf_future;

enum {
    CF_W_CLEANING = 1,
    CF_W_CANCELLED = 2,
    CF_W_IMMORTAL = 4,
    CF_W_TERMINAL = CF_W_CANCELLED | CF_W_IMMORTAL,
    CF_W_LINKED = 8,
    CF_W_TAGS = 15,
    CF_W_FAILED = 16,
};
enum { CF_N_LIVE = 0, CF_N_CLAIMED = 1, CF_N_REMOVED = 2, CF_N_DISCARDED = 3,
       CF_N_FATE = 3, CF_N_IN_FUTURE = 4 };
/// The claim word of a future (cf_future.claim):
///   CF_F_UNSET       nobody may set it yet; the first claimer wins.
///   CF_F_CLAIMED     its claimer will complete it (or set it to a future).
///   CF_F_FLATTENING  its claimer set it to a pending future (the target,
///                    published before this value) and a forwarder on that
///                    target's chain will complete it.
///   CF_F_AWAITING    its claimer set it to a pending future and linked that
///                    one into it: whoever completes the linked future
///                    completes this one. Reported as flattening; for cycle
///                    walkers it is the end of a chain, like CLAIMED.
///   root (>= CF_F_LINK_MIN, 16-byte aligned, retained until the future is
///        freed) [| CF_F_TAKEN]
///                    a future linked into the future at `root` (AWAITING
///                    or UNSET when linked; an UNSET root is claimed later
///                    by its producer), whose claim it holds: its completer
///                    sets CF_F_TAKEN and completes `root` instead; if it dies
///                    with the claim not taken, `root` becomes immortal.
///                    For cycle walkers an edge to `root`. Its token is
///                    linked into root's (CF_W_LINKED), unless a handler was
///                    registered on it first: then a forwarder on `root`
///                    completes it. So a tail-recursive flatten chain keeps
///                    no future per level (Future._link in the Swift layer).
///                    Also written, with CF_F_TAKEN, by a future's own claim
///                    holder in place of FLATTENING, when the end of the
///                    chain it was set to is AWAITING, or UNSET with a
///                    node on its token, and its own word is empty
///                    (Future._linkInto): its
///                    outcome is `root`'s, and its token is linked the same
///                    way. A future with a token linked into it never links
///                    its own, so a token is one step from its root.
/// The word never returns to UNSET.
enum { CF_F_UNSET = 0, CF_F_CLAIMED = 1, CF_F_FLATTENING = 2, CF_F_AWAITING = 3,
       CF_F_LINK_MIN = 16, CF_F_TAKEN = 1 };

/// cf_token_register results.
enum { CF_REG_ADDED = 0, CF_REG_CANCELLED = 1, CF_REG_IMMORTAL = 2, CF_REG_LINKED = 3 };

/// Initialises a token (not concurrent: before the token is shared).
/// `terminal` is 0, CF_W_CANCELLED (with CF_W_FAILED or not) or
/// CF_W_IMMORTAL. Plain stores, inline
/// here: every future and every source initialises one.
static inline void cf_token_init(cf_token *t, uintptr_t terminal) {
    t->word = terminal;
    t->dead = 0;
    t->last_len = 0;
}

/// Any thread, any time. Acquire load: a caller that sees a terminal word
/// also sees everything written before the cancel (a future's result).
uintptr_t cf_token_load(const cf_token *t);

/// The token every operation on `t` acts on: `t`, or the root `t` was
/// linked into (CF_W_LINKED; a root is never linked, so one step). Any
/// thread, any time. Acquire load, as cf_token_load: a caller that sees the
/// link sees the root's token as its linker did. Inline here (a compiler
/// builtin, not libatomic_ops, which stays out of this header): every
/// operation of the Swift layer resolves its token first.
static inline cf_token *cf_token_resolve(cf_token *t) {
    uintptr_t w = __atomic_load_n(&t->word, __ATOMIC_ACQUIRE);
    return (w & CF_W_LINKED) ? (cf_token *)(w & ~(uintptr_t)CF_W_TAGS) : t;
}

/// Whether `t` is linked (CF_W_LINKED): a link is final. Any thread, any
/// time; acquire load, as cf_token_resolve. Inline here, for the same reason.
static inline int cf_token_is_linked(const cf_token *t) {
    return (__atomic_load_n(&t->word, __ATOMIC_ACQUIRE) & CF_W_LINKED) != 0;
}

/// Links the token `t` into `root` (0 -> root | CF_W_LINKED): from now on
/// `t` is `root` for everyone (cf_token_resolve). Any thread, with
/// everything; `root` must be a token that is never linked, 16-byte
/// aligned, kept alive by the caller for as long as `t` can be used. Full
/// CAS: release publishes the link to resolvers, and of a registration and
/// a link racing on the empty word exactly one wins. 1 if linked; 0 if the
/// word was not 0 (a handler was registered, or the token settled).
int cf_token_link(cf_token *t, cf_token *root);

/// Initialises a node (not concurrent: before registration). Plain stores,
/// inline here: the Swift layer initialises one node per registration.
static inline void cf_node_init(cf_node *n) {
    n->state = CF_N_LIVE;
    n->next = NULL;
}

/// cf_node_init for a node that lives inside a future (CF_N_IN_FUTURE: in
/// the Swift layer, a step's output future is its step's node).
static inline void cf_node_init_in_future(cf_node *n) {
    n->state = CF_N_IN_FUTURE | CF_N_LIVE;
    n->next = NULL;
}

/// Whether `n` lives inside a future (CF_N_IN_FUTURE). Any thread that
/// holds the node. Relaxed load: the bit never changes after init, which
/// happened before the node was shared; atomic, because other threads may
/// still CAS the fate bits of the same word. Inline here (a compiler
/// builtin, as cf_token_resolve): the Swift layer asks on every event.
static inline int cf_node_in_future(const cf_node *n) {
    return (__atomic_load_n(&n->state, __ATOMIC_RELAXED) & CF_N_IN_FUTURE) != 0;
}

/// Settles a node nobody else can reach yet (it was never pushed) to
/// `fate`, keeping its owner's bit. Plain stores, as cf_node_init.
static inline void cf_node_settle_private(cf_node *n, uintptr_t fate) {
    n->state = (n->state & CF_N_IN_FUTURE) | fate;
}

/// Pushes `n` on the token's list. Any number of threads concurrently with
/// each other and with cancel/immortalize/remove. Release CAS publishes the
/// node's fields. Returns CF_REG_ADDED (the list now holds the caller's
/// reference), or the terminal state found (nothing was linked; the caller
/// runs or drops the handler itself and keeps its reference), or
/// CF_REG_LINKED: `t` was linked meanwhile; register on cf_token_resolve(t).
int cf_token_register(cf_token *t, cf_node *n);

/// Moves a still-cancellable token to `terminal`, CF_W_CANCELLED (with
/// CF_W_FAILED or not) or CF_W_IMMORTAL, and settles every node (a linked
/// token is not settled: 0): claimed ones run (cancel) or are discarded
/// (immortalize) in registration order, on this thread. Any thread; exactly
/// one caller wins (returns 1), the rest return 0. Full CAS. Inside a
/// callback the nodes are queued and run right after that callback returns
/// (see "Drain order" above).
int cf_token_settle(cf_token *t, uintptr_t terminal);

/// Claims `n` for removal (LIVE -> REMOVED). Any thread, concurrently with
/// everything. Returns 1 if this call removed it (the caller now owns and
/// releases the handler), 0 if it had already run, been removed or discarded.
/// May unlink removed nodes (amortized O(1)): their CF_EV_UNLINK callbacks
/// run on this thread before it returns. Never waits: if another remover is
/// cleaning, that one re-checks the trigger when done and takes this node.
int cf_node_remove(cf_token *t, cf_node *n);

/// Claims a node that is NOT linked in any list (its registration found the
/// token already settled): LIVE -> `fate` (CF_N_CLAIMED or CF_N_DISCARDED).
/// Races only with cf_node_remove. Full CAS, as in the drain. 1 if won.
int cf_node_claim(cf_node *n, uintptr_t fate);

/// Whether an unlinked node that must run now (its token was found
/// cancelled) has to wait in this thread's drain queue instead of running
/// inline: true inside a callback that has already started work still
/// waiting, and when CF_INLINE_DEPTH_MAX inline runs are already nested on
/// this thread ("Stack depth" above). This thread only; no atomics.
int cf_drain_must_queue(void);

/// How many callbacks wait in this thread's drain behind the one running
/// (its later siblings, and what it started): only this thread can run
/// them, so a callback blocking until one of them has run never returns.
/// This thread only; no atomics.
size_t cf_drain_waiting_count(void);

/// This thread's drain, set aside by a callback that blocks (Future.wait())
/// and put back when it resumes.
typedef struct {
    cf_node *_Nullable started_head, *_Nullable started_tail, *_Nullable rest_head;
    int draining;
    unsigned inline_depth;
} cf_drain_aside;
/// Sets this thread's drain aside: what waits in it stays queued, in
/// order, and the thread drains anew meanwhile, so what settles while the
/// caller blocks here (main-queue hops that Future.wait() runs) runs at
/// once instead of queuing behind the blocked callback. This thread only.
cf_drain_aside cf_drain_set_aside(void);
/// Puts back what cf_drain_set_aside took (this thread's drain is empty
/// again by then: every drain run meanwhile ran to its end).
void cf_drain_put_back(cf_drain_aside aside);

/// Inline runs nested on this thread now (cf_core.c; "Stack depth" above).
/// Thread-local, so no atomics.
extern __thread unsigned cf_inline_depth;
/// How many inline runs may nest before registrations queue on the drain:
/// deep enough that ordinary code never meets it, shallow enough that
/// twice as many runs of a debug build fit in a small thread stack.
enum { CF_INLINE_DEPTH_MAX = 16 };
/// Around every inline run of a handler or continuation (one that did not
/// come from the drain). Inline here: one per inline run.
static inline void cf_inline_enter(void) { cf_inline_depth++; }
static inline void cf_inline_exit(void) { cf_inline_depth--; }

/// Queues an unlinked node (its registration found the token settled to
/// `terminal`) at the end of what the running callback started; the queue
/// takes the caller's reference and hands it back through the callback. It
/// is claimed when its turn comes, like a listed node (so remove() may still
/// win). Outside any callback it is drained at once. This thread only.
void cf_node_enqueue(cf_node *n, uintptr_t terminal);

/// Acquire load of a node's state.
uintptr_t cf_node_state(const cf_node *n);

/// Number of nodes linked in the list (live or removed). Takes the cleaning
/// bit like a cleaner, so it is safe at any time; exact when quiescent.
/// For tests and the benchmark's peak-live-nodes figure.
size_t cf_token_debug_count(cf_token *t);

/// Of those, the nodes still LIVE (registered, not removed): what a token
/// still holds for its handlers. Same rules as cf_token_debug_count.
size_t cf_token_debug_count_live(cf_token *t);

/// Future claim word. Any thread.
/// CAS with full ordering: the winner may then write the result; the full
/// fence on FLATTENING publication makes cycle detection see every other
/// publication that preceded it (store-buffering safe), the link edges
/// (pointers) included; a link publishes the AWAITING word written before
/// it, and taking its claim (CF_F_TAKEN) acquires that.
int cf_future_claim(cf_future *f, uintptr_t expected, uintptr_t desired);
uintptr_t cf_future_claim_load(const cf_future *f);

#ifdef __cplusplus
}
#endif

#pragma clang assume_nonnull end

#endif
