/*
 * cf_core.pml -- exhaustive model of CSources/CCollapsingFutures/cf_core.c
 *
 * One model; a configuration is selected with -DCFG_<NAME> (listed at the
 * end of this comment, defined in the CONFIGURATIONS section below); a
 * mutant with -DMUT_<NAME>. Run everything with `bash Model/run.sh` (`make model`) and
 * the mutation check with `bash Model/run.sh mutants` (`make model-mutants`).
 *
 * Granularity. Every atomic operation of cf_core.c on a shared word (CAS,
 * load, store, fetch-and-add) is one Promela step (one d_step), named after
 * the C function. Plain accesses to data that one thread owns at that moment
 * (a node not yet published, the list a settler took or a cleaner holds under
 * CF_W_CLEANING, the per-thread drain queue) are merged into the neighbouring
 * step. One exception: leave_live's relaxed load of the owner's bit
 * (CF_N_IN_FUTURE) reads a constant, set at the node's init before it was
 * shared, so it is merged into the CAS that follows it; the model's node
 * states are the fate bits, which are all that CAS compares and changes.
 * The Swift layer's calls into the core (Sources/CollapsingFutures:
 * whenCancelled through _register / _enter, remove(), the node callback, _trySetFuture /
 * _setFuture, _walk, the _FlattenNode forwarder) are modelled on top, with
 * the two references per node.
 *
 * Step table: `@step <id> | <C function> | <snippet of the C line>`.
 * Model/check-steps.sh finds each snippet exactly once inside that function
 * of cf_core.c and prints `<id> -> cf_core.c:LINE`; each <id> also marks the
 * model step(s) it names (`@<id>` in a comment next to the d_step): one C
 * line is named once and may mark several model steps (wants_len: the
 * last_len load of wants_clean, reached from cf_node_remove, from the
 * re-check in try_clean and from the re-check in debug_count; clear_load
 * and clear_cas: clear_cleaning, called by try_clean and debug_count). A snippet
 * starting with ^ must start the (trimmed) line.
 *
 * @step token_load      | cf_token_load         | return AO_load_acquire(W(&t->word));
 * @step node_state      | cf_node_state         | return AO_load_acquire(W(&n->state)) & CF_N_FATE;
 * @step reg_load        | cf_token_register     | AO_t w = AO_load_acquire(W(&t->word));
 * @step reg_next        | cf_token_register     | n->next = NODE_OF(w);
 * @step reg_cas         | cf_token_register     | AO_t seen = AO_fetch_compare_and_swap_full(W(&t->word), w,
 * @step reg_keep_clean  | cf_token_register     | (AO_t)n | (w & CF_W_CLEANING));
 * @step enq_started     | enqueue_started       | if (started_tail) q_set_next(started_tail, first); else started_head = first;
 * @step drain_splice    | drain                 | q_set_next(started_tail, rest_head);
 * @step drain_pop       | drain                 | rest_head = q_next(n);
 * @step drain_claim     | drain                 | int won = leave_live(n, cancelled ? CF_N_CLAIMED : CF_N_DISCARDED);
 * @step live_own        | cf_core.c:leave_live  | AO_t own = AO_load(W(&n->state)) & CF_N_IN_FUTURE;
 * @step live_cas        | cf_core.c:leave_live  | return AO_compare_and_swap_full(W(&n->state), own | CF_N_LIVE, own | fate);
 * @step drain_call      | drain                 | CF_NODE_EVENT(n, won ? (cancelled ? CF_EV_RUN : CF_EV_DISCARD) : CF_EV_UNLINK);
 * @step must_queue      | cf_drain_must_queue   | return (draining && started_head != NULL)
 * @step node_enqueue    | cf_node_enqueue       | enqueue_started(n, n);
 * @step settle_load     | cf_token_settle       | AO_t w = AO_load_acquire(W(&t->word));
 * @step settle_wait     | cf_token_settle       | if (w & CF_W_CLEANING) {
 * @step settle_reload   | cf_token_settle       | ^w = AO_load_acquire(W(&t->word));
 * @step settle_cas      | cf_token_settle       | AO_fetch_compare_and_swap_full(W(&t->word), w, terminal);
 * @step settle_reverse  | cf_token_settle       | q_mark(lifo, terminal, fifo);
 * @step settle_enqueue  | cf_token_settle       | if (fifo) enqueue_started(fifo, last);
 * @step settle_drain    | cf_token_settle       | if (!draining) drain();
 * @step clean_load      | try_clean             | AO_t w = AO_load(W(&t->word));
 * @step clean_cas       | try_clean             | AO_compare_and_swap_acquire(W(&t->word), w, w | CF_W_CLEANING)
 * @step clean_state     | try_clean             | if ((AO_load_acquire(W(&cur->state)) & CF_N_FATE) == CF_N_REMOVED) {
 * @step clean_unlink    | try_clean             | prev->next = next;
 * @step clean_len       | try_clean             | AO_int_store(WI(&t->last_len), kept);
 * @step clean_dead      | try_clean             | AO_int_fetch_and_add(WI(&t->dead), 0u - removed);
 * @step clear_load      | clear_cleaning        | AO_t w = AO_load(W(&t->word));
 * @step clear_cas       | clear_cleaning        | AO_fetch_compare_and_swap_full(W(&t->word), w, w & ~(AO_t)CF_W_CLEANING);
 * @step clean_call      | try_clean             | CF_NODE_EVENT(unlinked, CF_EV_UNLINK);
 * @step clean_recheck   | try_clean             | if (!wants_clean(t, AO_int_load(WI(&t->dead)))) return;
 * @step wants_len       | wants_clean           | AO_int_load(WI(&t->last_len)) / 2
 * @step remove_cas      | cf_node_remove        | if (!leave_live(n, CF_N_REMOVED)) return 0;
 * @step remove_inc      | cf_node_remove        | AO_int_fetch_and_add1_full(WI(&t->dead))
 * @step remove_trigger  | cf_node_remove        | if (wants_clean(t, dead)) try_clean(t);
 * @step node_claim      | cf_node_claim         | return leave_live(n, fate);
 * @step dbg_load        | debug_count           | AO_t w = AO_load_acquire(W(&t->word));
 * @step dbg_cas         | debug_count           | AO_compare_and_swap_acquire(W(&t->word), w, w | CF_W_CLEANING)
 * @step dbg_state       | debug_count           | (AO_load_acquire(W(&n->state)) & CF_N_FATE) == CF_N_LIVE) count++;
 * @step dbg_recheck     | debug_count           | if (wants_clean(t, AO_int_load(WI(&t->dead)))) try_clean(t);
 * @step future_claim    | cf_future_claim       | return AO_compare_and_swap_full(W(&f->claim), expected, desired);
 * @step link_cas        | cf_token_link         | return AO_compare_and_swap_full(W(&t->word), 0, (AO_t)root | CF_W_LINKED);
 * @step reg_linked      | cf_token_register     | if (w & CF_W_LINKED) return CF_REG_LINKED;
 * @step settle_linked   | cf_token_settle       | if (w & (CF_W_TERMINAL | CF_W_LINKED)) return 0;
 * @step future_load     | cf_future_claim_load  | return AO_load_acquire(W(&f->claim));
 *
 * Swift-layer steps (not line-checked; the Swift files change independently):
 *   swift_retain   Internal/Nodes/_Lifecycle.swift _enter: retainObject (the list's reference)
 *   swift_release  any release of a node reference; the last one frees the node
 *   add            CancelToken.whenCancelled: _register's _enter (one cf_token_load: run now,
 *                  discard, or push; Internal/Nodes/_Lifecycle.swift). A node run now is still private:
 *                  Swift marks its state with a plain store; the model claims it instead (always won:
 *                  nobody else can reach it)
 *   register       _enter's push (cf_token_register, then enqueue / claim + run inline)
 *   remove         CancelRegistration.remove() and an unless link's _releaseTarget
 *   callback       _nodeEvent, the library's upcall node_event (Internal/Nodes/_Lifecycle.swift: the node object
 *                  from the cf_node, takeRetainedValue, _handle)
 *   set_future     Future._trySetFuture (Future._setFuture): claim, pre-walk, _target, FLATTENING,
 *                  walk, then the forwarder (Internal/Nodes/_FlattenNode.swift) on the walk's end
 *   walk           Future._walk (Brent), run twice by _setFuture
 *
 * Memory model: sequentially consistent, except that with -DSTOREBUF (set by
 * the flat-acq mutant) the FLATTENING publication may sit in a per-thread
 * store buffer (forwarded to the thread's own loads, flushed at any time by
 * the `flusher` process, and drained before every full-barrier operation).
 * So the full increment of `dead` and the full clearing CAS of try_clean
 * and of debug_count (the store-buffering pair that makes a remover which
 * leaves on CLEANING visible to that cleaner's re-check) are ordinary steps
 * here; the recheck-early mutant shows what their ordering prevents.
 *
 * Configurations (-DCFG_*): RACE, IMMORTAL, NESTED1, NESTED2, CHURN
 * (-DCHURN_DCOUNT: with a concurrent debug_count), CHURN_SEQ, CHURN_WIDE,
 * PROGRESS, CYCLEP2, CYCLEP3, CYCLE2, CYCLE3, CHAIN, FSET, LINK; -DLIVENESS adds
 * the termination LTL property to any of them; -DCLEAN_MIN=k (at least 2,
 * default 2), -DLEN_SLACK=k and -DLEN_WITNESS=1|2 probe P6;
 * -DCHAIN_WITNESS=1|2 shows CHAIN's pre-walk through the existing chain.
 * Mutants (-DMUT_*): CLAIM_LS, FCLAIM_LS, CLEAR_STORE, CLEAR_NORETRY,
 * SETTLE_NOWAIT, REG_DROP_CLEANING, FLAT_ACQ, FREE_FIRST, LIFO, SPLICE_AFTER,
 * NO_CLEAN, NO_RECHECK, CLEAN_GIVEUP, RECHECK_EARLY, MIN_ONE,
 * DCOUNT_NORECHECK, PREWALK_ONLY (each marked MUTANT at the line it
 * replaces). Properties P1-P10: see Model/README.md.
 *
 * Structure. Promela has no calls and inlines are macros, so the functions
 * that are reached from several places (cf_token_settle, cf_token_register,
 * cf_node_remove + try_clean, the Swift _register and inline handler run) are
 * subroutines of the one Thread proctype, entered with goto and left through
 * a return dispatch on a per-subroutine return variable (none of them
 * re-enters itself). Each thread runs a program of Swift-level operations
 * (O_ADD, O_REMOVE, ...) from its configuration.
 */

/* ---------------------------------------------------------------- constants */
#define LIVE        0   /* CF_N_LIVE */
#define CLAIMED     1   /* CF_N_CLAIMED */
#define REMOVED     2   /* CF_N_REMOVED */
#define DISCARDED   3   /* CF_N_DISCARDED */
#define W_CLEANING  1   /* CF_W_CLEANING */
#define W_CANCELLED 2   /* CF_W_CANCELLED */
#define W_IMMORTAL  4   /* CF_W_IMMORTAL */
#define W_TERMINAL  6   /* CF_W_TERMINAL */
#define W_LINKED    8   /* CF_W_LINKED: NODE_OF such a word is the root token */
/* A node "pointer" is its index 1..NN (0 is NULL); the word keeps the three
   tag bits below it, as the 16-byte alignment does in C. */
#define NODE_OF(w)  ((w) >> 4)
#define MKW(n)      ((n) << 4)
#define REG_ADDED     0
#define REG_CANCELLED 1
#define REG_IMMORTAL  2
#define REG_LINKED    3
#define EV_RUN     1
#define EV_DISCARD 2
#define EV_UNLINK  3
#define F_UNSET      0
#define F_CLAIMED    1
#define F_FLATTENING 2
/* Handler actions: what the Swift node subclasses do when run/discarded. */
#define A_CANCEL 1   /* cancel token a (a handler cancelling a source; a forwarder completing its output) */
#define A_IMMORT 2   /* make token a immortal (a forwarder's discard) */
#define A_REMOVE 3   /* remove node a (an unless link: _releaseTarget) */
#define A_ADD    4   /* register node a from inside the handler (its registration dropped) */
#define ACT(k, a) (((k) << 4) | (a))
/* Thread programs: one operation per entry. */
#define O_END    0
#define O_ADD    1   /* CancelToken.whenCancelled(handler): _register / _enter */
#define O_REMOVE 2   /* CancelRegistration.remove() */
#define O_DROP   3   /* the CancelRegistration goes out of scope */
#define O_CANCEL 4   /* CancelTokenSource.cancel / a future completing: cf_token_settle(CANCELLED [| FAILED], not modelled: the core only tests the cancelled bit) */
#define O_IMMORT 5   /* a source dying unset: cf_token_settle(IMMORTAL) */
#define O_DCOUNT 6   /* cf_token_debug_count */
#define O_SETF   7   /* Future a ._trySetFuture(Future b), forwarder node a+1 */
#define O_TRYSET 8   /* Future a ._trySet(value) */
#define O_ALLOC  9   /* allocate node a if its slot is free, else skip the next b operations (0: 3) */
#define O_LOOP  10   /* start over */
#define O_LINK  11   /* Future._link's token step: cf_token_link(a into b), else register node LINK_FWD */
#define P(t, k, kind, a, b) :: me == t && pc == k -> opk = kind; opa = a; opb = b

/* ------------------------------------------------------------ configurations */
#if defined(CFG_RACE)
/* Registration and removal (with cleanup) racing cancel: 3 threads, 1 token,
   3 nodes; node 1 is removed below node 2 (interior: cleaned up by T0's
   second removal, which meets the trigger, or by T1's, while T1 may still
   push). */
#define NP 3
#define NN 3
#define NT 1
#define CHECK_FIFO
#define CFG_INIT  tok[1] = 0; tok[2] = 0; tok[3] = 0
#define PROGRAM   P(0,0,O_ADD,1,0) P(0,1,O_ADD,2,0) P(0,2,O_REMOVE,1,0) P(0,3,O_REMOVE,2,0) P(0,4,O_DROP,1,0) P(0,5,O_DROP,2,0) \
                  P(1,0,O_ADD,3,0) P(1,1,O_REMOVE,3,0) P(1,2,O_DROP,3,0) \
                  P(2,0,O_CANCEL,0,0)
#define CFG_END   assert(word[0] == W_CANCELLED)

#elif defined(CFG_IMMORTAL)
/* Registration, removal and cleanup (the second removal meets the trigger)
   racing cancel and immortalize; exactly one settle wins. */
#define NP 3
#define NN 2
#define NT 1
#define CHECK_FIFO
#define CFG_INIT  tok[1] = 0; tok[2] = 0
#define PROGRAM   P(0,0,O_ADD,1,0) P(0,1,O_ADD,2,0) P(0,2,O_REMOVE,1,0) P(0,3,O_REMOVE,2,0) P(0,4,O_DROP,1,0) P(0,5,O_DROP,2,0) \
                  P(1,0,O_CANCEL,0,0) \
                  P(2,0,O_IMMORT,0,0)
#define CFG_END   assert(word[0] == W_CANCELLED || word[0] == W_IMMORTAL)

#elif defined(CFG_NESTED1) || defined(CFG_NESTED2)
/* Drain order with nested settles, an unless removal by an earlier handler,
   a queued registration (cf_node_enqueue) and an inline one. Tokens: 0 (root),
   1 (the `unless` token of node 2), 2. Nodes:
     1 on 0: run = cancel token 1, then register node 4 on token 0 (which is
             cancelled, and node 1 has started work still waiting: queued)
     2 on 0: its registration is also held by its unless link, node 3
     3 on 1: the unless link: run = remove node 2, then register node 5 on
             token 1 (cancelled, nothing started yet: runs inline)
     4 on 0: run = cancel token 2 (already cancelled by then)
     5 on 1: run = cancel token 2 (from an inline handler: queued)
     6 on 2: no action
   Expected (synchronous recursion): 1, 3, 5, 6, 4 run; 2 is removed by 3. */
#define NT 3
#define CHECK_FIFO
#define CHECK_ORDER
#define CFG_INIT0 tok[1] = 0; tok[2] = 0; tok[3] = 1; tok[4] = 0; tok[5] = 1; tok[6] = 2; tok[7] = 0; \
                  ra1[1] = ACT(A_CANCEL, 1); ra2[1] = ACT(A_ADD, 4); \
                  ra1[3] = ACT(A_REMOVE, 2); ra2[3] = ACT(A_ADD, 5); hold[3] = 2; \
                  ra1[4] = ACT(A_CANCEL, 2); ra1[5] = ACT(A_CANCEL, 2)
#define PROG0     P(0,0,O_ADD,1,0) P(0,1,O_ADD,2,0) P(0,2,O_ADD,3,0) P(0,3,O_ADD,6,0) P(0,4,O_CANCEL,0,0) \
                  P(0,5,O_DROP,1,0) P(0,6,O_DROP,2,0) P(0,7,O_DROP,3,0) P(0,8,O_DROP,6,0)
#if defined(CFG_NESTED1)
#define NP 1
#define NN 7
#define CFG_INIT  CFG_INIT0
#define PROGRAM   PROG0
#define CFG_END   assert(ran[1] && ran[3] && ran[4] && ran[5] && ran[6] && st[2] == REMOVED && !ran[2]); \
                  assert(word[0] == W_CANCELLED && word[1] == W_CANCELLED && word[2] == W_CANCELLED)
#else
/* A second thread registers and removes nodes 8 (no action) and 7 (run =
   remove node 6, whose registration it holds) on token 0, the second
   removal cleaning up while thread 0 registers and cancels, then cancels
   token 2 while thread 0 drains. */
#define NP 2
#define NN 8
#define CFG_INIT  CFG_INIT0; ra1[7] = ACT(A_REMOVE, 6); hold[7] = 6; tok[8] = 0
#define PROGRAM   PROG0 P(1,0,O_ADD,8,0) P(1,1,O_ADD,7,0) P(1,2,O_REMOVE,8,0) P(1,3,O_REMOVE,7,0) \
                  P(1,4,O_DROP,8,0) P(1,5,O_DROP,7,0) P(1,6,O_CANCEL,2,0)
#define CFG_END   assert(ran[1] && ran[3] && ran[4] && ran[5] && st[2] == REMOVED && !ran[2]); \
                  assert(word[0] == W_CANCELLED && word[1] == W_CANCELLED && word[2] == W_CANCELLED)
#endif

#elif defined(CFG_CHURN) || defined(CFG_CHURN_SEQ) || defined(CFG_CHURN_WIDE)
/* Register/remove churn forever on recycled node slots, so a freed head
   comes back (the ABA case of the push), with amortized cleanup, and P6 (the
   quiescent list bound, see len_bound below) checked in every state.
   CHURN: threads 0 and 1 churn (nodes 1-2 and 3; with -DNN=4, 1-2 and 3-4),
   thread 2 cancels at any point (with -DNP=2 nobody cancels: run.sh's
   churn-bound, two churning threads over four slots).
   CHURN_SEQ: one thread churns over nodes 1-4, another cancels.
   -DCHURN_DCOUNT: in CHURN thread 2 runs one debug_count instead of the
   cancel (run.sh's churn-dcount), in CHURN_SEQ thread 1 runs debug_count
   forever (churn-seq-dcount).
   CHURN_WIDE: thread 0 keeps up to three registrations (nodes 1-3), thread 1
   two (4-5), so a cleanup can keep 4 nodes and the last_len / 2 term of P6
   exceeds CLEAN_MIN - 1 (in the other two it is at most 1). */
#define NT 1
#define CHURN
#define CHECK_LEN
#define CFG_INIT  tok[1] = 0; tok[2] = 0; tok[3] = 0
#define CHURN_OPS(t, k, n) P(t,k,O_ALLOC,n,0) P(t,k+1,O_ADD,n,0) P(t,k+2,O_REMOVE,n,0) P(t,k+3,O_DROP,n,0)
#if defined(CFG_CHURN_SEQ)
#define NP 2
#define NN 4
#ifndef CHURN_DCOUNT
#define PROGRAM   CHURN_OPS(0,0,1) CHURN_OPS(0,4,2) CHURN_OPS(0,8,3) CHURN_OPS(0,12,4) P(0,16,O_LOOP,0,0) \
                  P(1,0,O_CANCEL,0,0)
#else
#define PROGRAM   CHURN_OPS(0,0,1) CHURN_OPS(0,4,2) CHURN_OPS(0,8,3) CHURN_OPS(0,12,4) P(0,16,O_LOOP,0,0) \
                  P(1,0,O_DCOUNT,0,0) P(1,1,O_LOOP,0,0)
#endif
#elif defined(CFG_CHURN_WIDE)
#define NP 2
#define NN 5
#define REG2(t, k, n) P(t,k,O_ALLOC,n,1) P(t,k+1,O_ADD,n,0)
#define UNREG2(t, k, n) P(t,k,O_REMOVE,n,0) P(t,k+1,O_DROP,n,0)
#define PROGRAM   REG2(0,0,1) REG2(0,2,2) REG2(0,4,3) UNREG2(0,6,1) UNREG2(0,8,2) UNREG2(0,10,3) P(0,12,O_LOOP,0,0) \
                  REG2(1,0,4) REG2(1,2,5) UNREG2(1,4,4) UNREG2(1,6,5) P(1,8,O_LOOP,0,0)
#else
#ifndef NP
#define NP 3
#endif
#ifndef NN
#define NN 3
#endif
#ifndef CHURN_DCOUNT
#define T2_OP O_CANCEL
#else
#define T2_OP O_DCOUNT  /* -DCHURN_DCOUNT: thread 2 counts instead of cancelling (run.sh's churn-dcount) */
#endif
#if NN == 3
#define PROGRAM   CHURN_OPS(0,0,1) CHURN_OPS(0,4,2) P(0,8,O_LOOP,0,0) \
                  CHURN_OPS(1,0,3) P(1,4,O_LOOP,0,0) \
                  P(2,0,T2_OP,0,0)
#else
#define PROGRAM   CHURN_OPS(0,0,1) CHURN_OPS(0,4,2) P(0,8,O_LOOP,0,0) \
                  CHURN_OPS(1,0,3) CHURN_OPS(1,4,4) P(1,8,O_LOOP,0,0) \
                  P(2,0,T2_OP,0,0)
#endif
#endif
#define CFG_END   skip

#elif defined(CFG_PROGRESS)
/* Cancel must terminate under weak fairness (no livelock through the
   CLEANING wait), and so must the cleaner's loops (the CLEANING CAS retried
   after a concurrent push, the re-check pass), with a concurrent push,
   removal and debug_count. T0's second removal cleans; T1's removal of 3
   while T0 holds CLEANING makes T0's re-check start a second pass (list
   2, 1, 3: the first pass unlinks 1 and keeps 3, so last_len = 2). */
#define NP 3
#define NN 3
#define NT 1
#define PROGRESS
#define CFG_INIT  tok[1] = 0; tok[2] = 0; tok[3] = 0
#define PROGRAM   P(0,0,O_ADD,1,0) P(0,1,O_ADD,2,0) P(0,2,O_REMOVE,1,0) P(0,3,O_REMOVE,2,0) P(0,4,O_DROP,1,0) P(0,5,O_DROP,2,0) \
                  P(1,0,O_ADD,3,0) P(1,1,O_REMOVE,3,0) P(1,2,O_DCOUNT,0,0) P(1,3,O_DROP,3,0) \
                  P(2,0,O_CANCEL,0,0)
#define CFG_END   assert(word[0] == W_CANCELLED)

#elif defined(CFG_CYCLEP2) || defined(CFG_CYCLEP3)
/* The claim-word protocol alone, as _setFuture uses it: claim (full),
   pre-walk from the other future, write target (the pre-walk's end), publish
   FLATTENING (full), walk from the target. Threads close a cycle
   concurrently; at least one must detect it. */
#define CYCLE_PROTO
#define NN 1
#define NF NT
#define CFG_INIT  skip
#if defined(CFG_CYCLEP2)
#define NP 2
#define NT 2
#define PROGRAM   P(0,0,O_SETF,0,1) P(1,0,O_SETF,1,0)
#else
#define NP 3
#define NT 3
#define PROGRAM   P(0,0,O_SETF,0,1) P(1,0,O_SETF,1,2) P(2,0,O_SETF,2,0)
#endif
#define CFG_END   assert(ndetect >= 1)

#elif defined(CFG_CYCLE2) || defined(CFG_CYCLE3)
/* Future._trySetFuture as written: claim, pre-walk, target, FLATTENING,
   walk, register the forwarder (_FlattenNode) on the walk's end. Every
   future of a cycle closed concurrently ends immortal. Forwarder of future
   i: node i+1, on the token of its walk's end (set when it registers); run =
   cancel i (complete), discard = immortalize i. */
#define NF NT
#if defined(CFG_CYCLE2)
#define NP 2
#define NN 2
#define NT 2
#define CFG_INIT  ra1[1] = ACT(A_CANCEL, 0); da[1] = ACT(A_IMMORT, 0); \
                  ra1[2] = ACT(A_CANCEL, 1); da[2] = ACT(A_IMMORT, 1)
#define PROGRAM   P(0,0,O_SETF,0,1) P(1,0,O_SETF,1,0)
#define CFG_END   assert(ndetect >= 1 && word[0] == W_IMMORTAL && word[1] == W_IMMORTAL)
#else
#define NP 3
#define NN 3
#define NT 3
#define CFG_INIT  ra1[1] = ACT(A_CANCEL, 0); da[1] = ACT(A_IMMORT, 0); \
                  ra1[2] = ACT(A_CANCEL, 1); da[2] = ACT(A_IMMORT, 1); \
                  ra1[3] = ACT(A_CANCEL, 2); da[3] = ACT(A_IMMORT, 2)
#define PROGRAM   P(0,0,O_SETF,0,1) P(1,0,O_SETF,1,2) P(2,0,O_SETF,2,0)
#define CFG_END   assert(ndetect >= 1 && word[0] == W_IMMORTAL && word[1] == W_IMMORTAL && word[2] == W_IMMORTAL)
#endif

#elif defined(CFG_CHAIN)
/* The pre-walk through an existing chain. T1 sets future 1 to future 2 (the
   chain), then future 2 to future 0; T0 sets future 0 to future 1 at any
   point (once the chain exists its pre-walk goes through 1 and it targets
   and forwards from 2, the chain's end); T2 completes future 2 at any point.
   If T2 wins future 2's claim, nothing is a cycle and every future ends
   completed (0 and 1 through their forwarders, possibly both on 2);
   otherwise T1 closed the cycle 0 -> (1 ->) 2 -> 0 through the chain's end,
   someone detected it, and every future of it ends immortal.
   -DCHAIN_WITNESS=1 (2): spin shows an end state where future 0 targeted 2
   and its forwarder went on 2's token, in the cycle (the completed)
   outcome: run.sh requires both. */
#define NP 3
#define NN 3
#define NT 3
#define NF 3
#define CFG_INIT  ra1[1] = ACT(A_CANCEL, 0); da[1] = ACT(A_IMMORT, 0); \
                  ra1[2] = ACT(A_CANCEL, 1); da[2] = ACT(A_IMMORT, 1); \
                  ra1[3] = ACT(A_CANCEL, 2); da[3] = ACT(A_IMMORT, 2)
#define PROGRAM   P(0,0,O_SETF,0,1) P(1,0,O_SETF,1,2) P(1,1,O_SETF,2,0) P(2,0,O_TRYSET,2,0)
#if defined(CHAIN_WITNESS)
#define CHAIN_SEEN (target[0] == 3 && used[1] && tok[1] == 2 && claimer[2] == (CHAIN_WITNESS == 1 -> 2 : 3))
#else
#define CHAIN_SEEN 0
#endif
#define CFG_END   assert(claimer[2] == 2 || claimer[2] == 3); \
                  assert(claimer[2] != 3 || (word[0] == W_CANCELLED && word[1] == W_CANCELLED && word[2] == W_CANCELLED)); \
                  assert(claimer[2] != 2 || (ndetect >= 1 && word[0] == W_IMMORTAL && word[1] == W_IMMORTAL && word[2] == W_IMMORTAL)); \
                  assert(!CHAIN_SEEN)

#elif defined(CFG_LINK)
/* Future._link's token step racing a registration on the linked future:
   T0 registers node 1 on token 0 (the linked future's; on the root when
   its push meets the link: CF_REG_LINKED); T1 links token 0 into token 1 (the root's), or, when
   node 1 came first, registers the forwarder _link falls back on, node 2
   on token 1, whose run cancels token 0 (completes the linked future); T2
   cancels token 1 (the root completes). Node 1 runs exactly once either
   way, and a linked token is never settled. */
#define NP 3
#define NN 2
#define NT 2
#define LINK_FWD 2
#define CFG_INIT  tok[1] = 0; tok[2] = 1; ra1[2] = ACT(A_CANCEL, 0)
#define PROGRAM   P(0,0,O_ADD,1,0) P(0,1,O_DROP,1,0) P(1,0,O_LINK,0,1) P(1,1,O_DROP,2,0) P(2,0,O_CANCEL,1,0)
#define CFG_END   assert(used[1] && ran[1] && word[1] == W_CANCELLED); \
                  assert(word[0] == W_CANCELLED || word[0] == (MKW(1) | W_LINKED)); \
                  assert(used[2] == (word[0] == W_CANCELLED))

#elif defined(CFG_FSET)
/* Two futures set to each other while a third thread completes future 0:
   one claimant per future; everything ends settled; a cycle of FLATTENING
   futures only if all of it is immortal. */
#define NP 3
#define NN 2
#define NT 2
#define NF 2
#define CFG_INIT  ra1[1] = ACT(A_CANCEL, 0); da[1] = ACT(A_IMMORT, 0); \
                  ra1[2] = ACT(A_CANCEL, 1); da[2] = ACT(A_IMMORT, 1)
#define PROGRAM   P(0,0,O_SETF,0,1) P(1,0,O_SETF,1,0) P(2,0,O_TRYSET,0,0)
#define CFG_END   assert((word[0] & W_TERMINAL) && (word[1] & W_TERMINAL)); \
                  assert(!(claim[0] == F_FLATTENING && claim[1] == F_FLATTENING && target[0] == 2 && target[1] == 1) \
                         || (word[0] == W_IMMORTAL && word[1] == W_IMMORTAL))

#else
#error "select a configuration with -DCFG_<NAME>"
#endif

#ifndef NF
#define NF 0
#endif
/* CF_CLEAN_MIN is 16 in C; the model uses 2 so that cleanups happen with
   2-5 nodes. cf_core.c asserts CF_CLEAN_MIN >= 2: with 1, a removed head
   (never unlinked) alone meets the trigger, and the re-check loops forever
   (the min-one mutant). */
#if defined(MUT_MIN_ONE)
#define CLEAN_MIN 1                                           /* MUTANT min-one */
#endif
#ifndef CLEAN_MIN
#define CLEAN_MIN 2
#endif
#if CLEAN_MIN < 2 && !defined(MUT_MIN_ONE)
#error "cf_core.c: _Static_assert(CF_CLEAN_MIN >= 2)"
#endif
#ifndef LEN_SLACK
#define LEN_SLACK 0
#endif
#if defined(MUT_FLAT_ACQ)
#define STOREBUF
#endif

/* ------------------------------------------------------------------ state */
/* cf_token: one per token; futures 0..NF-1 use tokens 0..NF-1 */
byte word[NT];        /* cf_token.word */
short dead[NT];       /* cf_token.dead (32 bits, read as int by wants_clean: can be briefly negative) */
byte last_len[NT];    /* cf_token.last_len */
/* cf_node (index 0 unused) */
byte st[NN + 1];      /* cf_node.state */
byte nx[NN + 1];      /* cf_node.next */
byte op[NN + 1];      /* a queued node's terminal: bit 0 of cf_node.next */
byte refs[NN + 1];    /* strong references to the Swift node object */
bit  alive[NN + 1];   /* allocated and not freed */
bit  holding[NN + 1]; /* the node (an unless link) still holds the registration of node hold[n] */
bit  hasreg[NN + 1];  /* the registering thread holds a CancelRegistration on it */
/* configuration constants: never change after init, so kept out of the state vector */
#if NF > 0 || defined(CFG_LINK)
byte tok[NN + 1];                     /* token the node registers on (a forwarder's: the end of its walk; a node on a linked token: the root's; so state) */
#else
hidden byte tok[NN + 1];              /* token the node registers on */
#endif
hidden byte ra1[NN + 1], ra2[NN + 1]; /* actions when run */
hidden byte da[NN + 1];               /* action when discarded */
hidden byte hold[NN + 1];             /* node whose registration this node holds */
hidden byte wk, wc, wt;               /* scratch, only used inside one d_step */
#if NF > 0
byte claim[NF];       /* cf_future.claim */
byte target[NF];      /* Future._target (future index + 1; 0 = nil) */
byte claimer[NF];     /* ghost: thread + 1 that won UNSET -> CLAIMED */
byte ndetect;         /* ghost: cycle walks that came back to their own future */
#endif
#ifdef STOREBUF
byte sb[NP];          /* buffered FLATTENING store: future + 1 (0 = empty) */
byte sbt[NP];         /* ... and the target stored before it */
#endif
/* ghosts for the properties */
byte wins[NN + 1];    /* CASes out of LIVE won (exactly 1 at the end) */
bit  used[NN + 1];    /* registration attempted (so it must get a fate) */
bit  ran[NN + 1];     /* the handler ran */
bit  disc[NN + 1];    /* the handler was discarded */
bit  rtrue[NN + 1];   /* a remove() returned true (or a removal won) */
bit  rfalse[NN + 1];  /* a remove() returned false */
bit  lnk[NN + 1];     /* linked in its token's list */
bit  inq[NN + 1];     /* in a settler's list, a drain queue or a cleaner's unlinked chain */
#ifdef CHECK_FIFO
byte tseq[NT];        /* pushes so far, per token */
byte rseq[NN + 1];    /* push order of the node */
byte lastrun[NT];     /* push order of the last listed node claimed, per token */
bit  listed[NN + 1];
#endif
#ifdef CHECK_LEN
byte nlinked[NT];     /* nodes linked in the list */
byte nlive[NT];       /* of those, still LIVE */
byte inrm[NT];        /* removals in flight: remove CAS won, cf_node_remove not yet returned (+ debug_count holding or past CLEANING) */
#endif
#ifdef CHECK_ORDER
byte par[NN + 1];     /* callback running when the node was started (0: none) */
byte sseq[NN + 1];    /* start order on its thread */
byte lastc[NN + 1];   /* start order of its last visited child */
byte pend[NN + 1];    /* its started children not yet visited */
#endif
byte ndone;           /* threads finished */

/* ------------------------------------------------------ node references */
inline FREEN(n) {
  /* P5: freed only when unreachable; P1: only after its fate. */
  assert(!lnk[n] && !inq[n]);
  wt = 0;
  do
  :: wt < NT ->
     wk = ((word[wt] & W_LINKED) -> 0 : NODE_OF(word[wt])); wc = 0;   /* a linked word has no list */
     do
     :: wk != 0 -> assert(wk != n && alive[wk]); wk = nx[wk]; wc++; assert(wc <= NN)
     :: else -> break
     od;
     wt++
  :: else -> break
  od;
  wk = 0; wc = 0; wt = 0;
  assert(!used[n] || wins[n] == 1);
  alive[n] = 0
}

/* swift_release: atomic decrement; whoever drops the last reference frees. */
inline release_body(n) {
  assert(alive[n] && refs[n] > 0);
  refs[n]--;
#ifndef MUT_FREE_FIRST
  if :: refs[n] == 0 -> FREEN(n) :: else -> skip fi
#else
  FREEN(n)                                                    /* MUTANT free-first */
#endif
}
inline release(n) { d_step { release_body(n) } }

/* An unless link drops the registration it holds once its own fate is
   settled (_UnlessNode: target = nil on run, discard and removal). */
inline drop_held_body(n) {
  if :: holding[n] -> holding[n] = 0; release_body(hold[n]) :: else -> skip fi
}
inline drop_held(n) { d_step { drop_held_body(n) } }
/* A node dropped without ever being registered (its token was immortal). */
inline dispose(n) {
  d_step {
    if :: holding[n] -> holding[n] = 0; release_body(hold[n]) :: else -> skip fi;
    release_body(n)
  }
}

#define WIN(n) wins[n]++; assert(wins[n] == 1)                /* P1: one fate */

#ifdef CHECK_LEN
/* P6, the quiescent list bound. Whenever no removal is in flight on the
   token (no thread between winning its remove CAS and returning from
   try_clean / cf_node_remove, nor a debug_count between its CLEANING CAS
   and its return: it is a cleaner then), the removed nodes still linked number at
   most what the trigger tolerates, max(CLEAN_MIN - 1, last_len / 2)
   (+ LEN_SLACK: 0 unless set to probe the bound), and, while the token is
   cancellable, exactly `dead`. The len_bound monitor checks both in every
   reachable state. */
#if NT != 1
#error "CHECK_LEN watches token 0 only"
#endif
#define RLINKED   (nlinked[0] - nlive[0])
#define LEN_MAX   ((CLEAN_MIN - 1 > last_len[0] / 2 -> CLEAN_MIN - 1 : last_len[0] / 2) + LEN_SLACK)
#define LEN_OK    (inrm[0] != 0 || RLINKED <= LEN_MAX)
#define DEAD_OK   (inrm[0] != 0 || (word[0] & W_TERMINAL) || dead[0] == RLINKED)
#define INRM_INC(t) inrm[t]++
#define INRM_DEC(t) inrm[t]--
#else
#define INRM_INC(t) skip
#define INRM_DEC(t) skip
#endif

#ifdef CHECK_ORDER
/* P9 drain order: on each thread, handlers start in the pre-order of the
   tree "started while this callback ran", children in the order started:
   the order synchronous recursion gives at callback boundaries. */
#define START(n) par[n] = ctx; oseq++; sseq[n] = oseq; if :: ctx != 0 -> pend[ctx]++ :: else -> skip fi
inline VISIT(n) {
  do
  :: osp > 0 && ostk[osp - 1] != par[n] -> assert(pend[ostk[osp - 1]] == 0); osp--; ostk[osp] = 0
  :: else -> break
  od;
  assert(par[n] == 0 || (osp > 0 && ostk[osp - 1] == par[n]));
  if
  :: par[n] == 0 -> assert(sseq[n] > oroot); oroot = sseq[n]
  :: else -> assert(sseq[n] > lastc[par[n]]); lastc[par[n]] = sseq[n]; pend[par[n]]--
  fi;
  ostk[osp] = n; osp++
}
#define ORDER_LOCALS byte ctx, octx0, octx1, octx2, oseq, oroot, osp; byte ostk[NN + 1];
#define SET_CTX(s, n) s = ctx; ctx = n
#define RESTORE_CTX(s) ctx = s; s = 0
#define ORDER_RESET   do :: osp > 0 -> osp--; assert(pend[ostk[osp]] == 0); ostk[osp] = 0 :: else -> break od; \
                      oseq = 0; oroot = 0; ctx = 0
#else
#define START(n) skip
#define VISIT(n) skip
#define ORDER_LOCALS
#define SET_CTX(s, n) skip
#define RESTORE_CTX(s) skip
#define ORDER_RESET skip
#endif

#ifdef STOREBUF
#define FENCE (sb[me] == 0)   /* a full barrier waits until this thread's store buffer drained */
#else
#define FENCE skip
#endif

/* ============================================================ cf_core.c */
/* The functions below are inlines expanded exactly once in Thread() or
   subroutines of Thread() entered with goto and left through a return
   dispatch (Promela has no calls); arguments are the thread's locals. */

inline cf_token_load(t, out) {
  d_step { out = word[t] }                                    /* @token_load */
}

/* enqueue_started: this thread's queue (used inside a d_step) */
inline enqueue_started(first, last) {
  nx[last] = 0;
  if :: stl != 0 -> nx[stl] = first :: else -> sh = first fi; /* @enq_started */
  stl = last
}

/* cf_node_enqueue: modelled while draining (cf_drain_must_queue held).
   cf_drain_must_queue also holds 16 inline runs deep (cf_inline_depth, a
   thread-local count with no shared step); outside a drain cf_node_enqueue
   then drains at once: the node is claimed by the drain's CAS where the
   inline path claims it with cf_node_claim's, the same CAS out of LIVE on
   the same word against the same removers, so no interleaving of shared
   steps is added. */
inline cf_node_enqueue(n, term) {
  d_step {                                                    /* @node_enqueue */
    assert(draining && alive[n]);
    op[n] = term; inq[n] = 1; START(n);
    enqueue_started(n, n)
  }
}

/* cf_node_claim, with what its win means for the handler */
inline cf_node_claim(n, fate, won) {
  d_step {                                                    /* @node_claim @live_own @live_cas */
    FENCE;
    assert(alive[n]); used[n] = 1;
    if
    :: st[n] == LIVE ->
       st[n] = fate; won = 1; WIN(n);
       if :: fate == CLAIMED -> assert(!rtrue[n]); ran[n] = 1 :: else -> disc[n] = 1 fi
    :: else -> won = 0
    fi
  }
}

#if NF > 0
/* cf_future_claim */
inline cf_future_claim(f, e, d, won) {
#ifndef MUT_FCLAIM_LS
  d_step {                                                    /* @future_claim */
    FENCE;
    if
    :: claim[f] == e ->
       claim[f] = d; won = 1;
       if :: d == F_CLAIMED -> assert(claimer[f] == 0); claimer[f] = me + 1 :: else -> skip fi  /* P10 */
    :: else -> won = 0
    fi
  }
#else
  d_step { won = (claim[f] == e) };                           /* MUTANT fclaim-ls: load ... */
  if
  :: won -> d_step { claim[f] = d; if :: d == F_CLAIMED -> assert(claimer[f] == 0); claimer[f] = me + 1 :: else -> skip fi }  /* ... then store */
  :: else -> skip
  fi
#endif
}

/* cf_future_claim(CLAIMED, FLATTENING) by the claim holder, with the
   _target it publishes written just before (and the pre-walk's scratch
   cleared: thread-local). */
inline publish_flattening(f, g) {
#ifndef MUT_FLAT_ACQ
  d_step {                                                    /* @future_claim (full) */
    FENCE;
    assert(claim[f] == F_CLAIMED && claimer[f] == me + 1);
    target[f] = g + 1; claim[f] = F_FLATTENING;
    tort = 0; pw = 0; lam = 0; cl = 0; tg = 0
  }
#else
  d_step {                                                    /* MUTANT flat-acq: the store waits in the buffer */
    assert(claim[f] == F_CLAIMED); sb[me] = f + 1; sbt[me] = g + 1;
    tort = 0; pw = 0; lam = 0; cl = 0; tg = 0
  }
#endif
}

/* cf_future_claim_load, with the _target read it makes safe */
inline cf_future_claim_load(x, c, g) {
  d_step {                                                    /* @future_load */
#ifdef STOREBUF
    if :: sb[me] == x + 1 -> c = F_FLATTENING; g = sbt[me] :: else -> c = claim[x]; g = target[x] fi
#else
    c = claim[x]; g = target[x]
#endif
  }
}
#endif

/* what a drain event means, checked where the node is claimed */
inline DRAIN_GHOST() {
  dev = (dwon -> (dcanc -> EV_RUN : EV_DISCARD) : EV_UNLINK);
  if
  :: dev == EV_RUN -> assert(!rtrue[dn]); ran[dn] = 1           /* P2 */
  :: dev == EV_DISCARD -> disc[dn] = 1
  :: else -> skip
  fi;
#ifdef CHECK_FIFO
  if
  :: dev != EV_UNLINK && listed[dn] -> assert(rseq[dn] > lastrun[tok[dn]]); lastrun[tok[dn]] = rseq[dn]   /* P4 */
  :: else -> skip
  fi;
#endif
  skip
}

/* A handler run inline inside a drain callback (its registration found the
   token cancelled and nothing was waiting): Swift _NodeRef._handle. */
inline callback_l2(n, ev) {
#ifdef CHECK_ORDER
  d_step { START(n); VISIT(n) };
#endif
  SET_CTX(octx2, n);
  ai2 = 0;
  do
  :: ai2 < 2 ->
     a2 = (ev == EV_RUN -> (ai2 == 0 -> ra1[n] : ra2[n]) : (ai2 == 0 -> da[n] : 0));
     at2 = a2 & 15;
     if
     :: a2 == 0 -> skip
     :: (a2 >> 4) == A_CANCEL -> s_t = at2; s_term = W_CANCELLED; s_ret = 3; goto settle_body
     :: (a2 >> 4) == A_IMMORT -> s_t = at2; s_term = W_IMMORTAL; s_ret = 3; goto settle_body
     :: (a2 >> 4) == A_REMOVE -> m_n = at2; m_user = 0; m_ret = 4; goto node_remove
     :: (a2 >> 4) == A_ADD -> assert(false)                   /* model limit: two levels */
     fi;
l2_next: skip;
     ai2++; a2 = 0; at2 = 0
  :: else -> break
  od;
  ai2 = 0;
  drop_held(n);
  RESTORE_CTX(octx2)
}

/* whenCancelled from inside a drain callback; the handler drops the
   registration it gets back. */
inline add_l1(m) {
  cf_token_load(tok[m], aw1);
  if
  :: (aw1 & W_IMMORTAL) -> dispose(m); goto add_l1_done
  :: (aw1 & W_CANCELLED) && !(draining && sh != 0) ->         /* @must_queue */
     cf_node_claim(m, CLAIMED, won1);
     rr1 = REG_CANCELLED
  :: else ->
     r_n = m; r_ret = 2; goto cf_token_register;
reg_l1_back: skip;
     rr1 = r_res; r_res = 0;
     if
     :: rr1 == REG_ADDED -> goto add_l1_rel
     :: rr1 == REG_CANCELLED && draining && sh != 0 -> cf_node_enqueue(m, W_CANCELLED); goto add_l1_rel
     :: else ->
        release(m);                                           /* releaseObject() */
        cf_node_claim(m, (rr1 == REG_CANCELLED -> CLAIMED : DISCARDED), won1)
     fi
  fi;
  if :: won1 -> callback_l2(m, (rr1 == REG_CANCELLED -> EV_RUN : EV_DISCARD)) :: else -> skip fi;
add_l1_rel: skip;
  release(m);                                                 /* the dropped registration / node */
add_l1_done: skip;
  aw1 = 0; won1 = 0; rr1 = 0
}

/* The node callback run from drain() (CF_NODE_EVENT: _nodeEvent). */
inline callback_l1(n, ev) {
  SET_CTX(octx1, n);
  if
  :: ev != EV_UNLINK ->
     ai1 = 0;
     do
     :: ai1 < 2 ->
        a1 = (ev == EV_RUN -> (ai1 == 0 -> ra1[n] : ra2[n]) : (ai1 == 0 -> da[n] : 0));
        at1 = a1 & 15;
        if
        :: a1 == 0 -> skip
        :: (a1 >> 4) == A_CANCEL -> s_t = at1; s_term = W_CANCELLED; s_ret = 2; goto settle_body  /* draining: queued */
        :: (a1 >> 4) == A_IMMORT -> s_t = at1; s_term = W_IMMORTAL; s_ret = 2; goto settle_body
        :: (a1 >> 4) == A_REMOVE -> m_n = at1; m_user = 0; m_ret = 3; goto node_remove
        :: (a1 >> 4) == A_ADD -> add_l1(at1)
        fi;
l1_next: skip;
        ai1++; a1 = 0; at1 = 0
     :: else -> break
     od;
     ai1 = 0;
     drop_held(n)
  :: else -> skip
  fi;
  RESTORE_CTX(octx1);
  d_step { inq[n] = 0; release_body(n) }                      /* takeRetainedValue: the list's reference */
}

/* drain() */
inline drain() {
  draining = 1;
  do
  :: d_step {                                                 /* @drain_splice @drain_pop @drain_claim @live_own @live_cas */
       FENCE;
       if
       :: sh != 0 ->
#ifndef MUT_SPLICE_AFTER
          nx[stl] = rh; rh = sh;
#else
          if :: rh == 0 -> rh = sh :: else -> wk = rh; do :: nx[wk] != 0 -> wk = nx[wk] :: else -> break od; nx[wk] = sh; wk = 0 fi;  /* MUTANT splice-after */
#endif
          sh = 0; stl = 0
       :: else -> skip
       fi;
       dn = rh;
       if
       :: dn != 0 ->
          assert(alive[dn]);
          rh = nx[dn];
          dcanc = (op[dn] == W_CANCELLED);
#ifndef MUT_CLAIM_LS
          if :: st[dn] == LIVE -> st[dn] = (dcanc -> CLAIMED : DISCARDED); dwon = 1; WIN(dn) :: else -> dwon = 0 fi;
          DRAIN_GHOST();
#else
          dwon = (st[dn] == LIVE);                             /* MUTANT claim-ls: load ... */
#endif
          VISIT(dn);
          skip
       :: else -> skip
       fi
     };
     if
     :: dn == 0 -> break
     :: else ->
#ifdef MUT_CLAIM_LS
        d_step { if :: dwon -> st[dn] = (dcanc -> CLAIMED : DISCARDED); WIN(dn) :: else -> skip fi; DRAIN_GHOST() };  /* ... then store */
#endif
        callback_l1(dn, dev);                                 /* @drain_call */
        d_step { dn = 0; dwon = 0; dcanc = 0; dev = 0 }
     fi
  od;
  draining = 0
}

/* ------------------------------------------------------------ threads */
#define THREAD_LOCALS \
  byte pc, opk, opa, opb;                         /* the program */ \
  byte sh, stl, rh; bit draining;                 /* cf_core.c's __thread drain queue */ \
  byte r_n, r_res, r_ret, rw; bit rok;            /* cf_token_register */ \
  byte s_t, s_term, s_ret, st_ret, sw, lifo, fifo, slast, snext; bit s_res, sok;   /* cf_token_settle */ \
  byte dn, dev; bit dwon, dcanc;                  /* drain */ \
  byte m_n, m_ret, mlen; short mdead; bit m_user, m_res;   /* cf_node_remove, wants_clean */ \
  byte c_t, cw, chead, cprev, ccur, cnext, cunl, ckept, crem, ccw; bit cok;   /* try_clean */ \
  byte gw, gcur, gn; bit gok;                     /* debug_count */ \
  byte aw, aw1, rres, rr1, rt_n, rt_ret, cb_n, cb_ev, ct_ret; bit won, won1, fwon;   /* Swift whenCancelled / _enter */ \
  byte a0, at0, a1, at1, a2, at2, ai0, ai1, ai2;  /* handler actions */ \
  byte cur, tort, pw, lam, cl, tg; bit wph;       /* _walk (wph: 0 the pre-walk, 1 the walk) */ \
  ORDER_LOCALS

proctype Thread(byte me) {
  THREAD_LOCALS

next_op: skip;
  d_step { if PROGRAM :: else -> opk = O_END fi };
  if
  :: opk == O_END -> goto finished
  :: opk == O_ADD -> goto op_add
  :: opk == O_REMOVE ->
     if :: hasreg[opa] -> m_n = opa; m_user = 1; m_ret = 1; goto node_remove :: else -> goto op_done fi
  :: opk == O_DROP ->
     d_step { if :: hasreg[opa] -> hasreg[opa] = 0; release_body(opa) :: else -> skip fi };
     goto op_done
  :: opk == O_CANCEL -> s_t = opa; s_term = W_CANCELLED; st_ret = 1; goto settle_top
  :: opk == O_IMMORT -> s_t = opa; s_term = W_IMMORTAL; st_ret = 1; goto settle_top
  :: opk == O_DCOUNT -> goto op_dcount
#if NF > 0
  :: opk == O_SETF -> goto op_setf
  :: opk == O_TRYSET ->
     cf_future_claim(opa, F_UNSET, F_CLAIMED, fwon);
     if :: fwon -> fwon = 0; s_t = opa; s_term = W_CANCELLED; st_ret = 1; goto settle_top :: else -> goto op_done fi
#endif
  :: opk == O_ALLOC ->
     if
     :: !alive[opa] ->
        d_step {
          alive[opa] = 1; refs[opa] = 1; st[opa] = LIVE; nx[opa] = 0; op[opa] = 0;
          wins[opa] = 0; used[opa] = 0; ran[opa] = 0; disc[opa] = 0; rtrue[opa] = 0; rfalse[opa] = 0
        }
     :: else -> pc = pc + (opb == 0 -> 3 : opb)
     fi;
     goto op_done
  :: opk == O_LOOP -> d_step { ORDER_RESET; pc = 0; opk = 0; opa = 0; opb = 0 }; goto next_op
#if defined(CFG_LINK)
  :: opk == O_LINK -> goto op_link
#endif
  fi;

op_done: skip;
  d_step { ORDER_RESET; pc++; opk = 0; opa = 0; opb = 0 };
  goto next_op;

/* ---- CancelToken.whenCancelled (unless: .immortal), at the top of a thread */
op_add: skip;
  /* _enter: the node's own token's word, and the root's when that one is
     linked (a link made after it is met by the push:
     CF_REG_LINKED, then the root) */
  cf_token_load(tok[opa], aw);
  if
  :: (aw & W_LINKED) -> tok[opa] = NODE_OF(aw); cf_token_load(tok[opa], aw)
  :: else -> skip
  fi;
  if
  :: (aw & W_IMMORTAL) -> dispose(opa); aw = 0; goto op_done
  :: (aw & W_CANCELLED) && !(draining && sh != 0) ->          /* cf_drain_must_queue() == 0 */
     aw = 0;
     cf_node_claim(opa, CLAIMED, won);
     if :: won -> won = 0; cb_n = opa; cb_ev = EV_RUN; ct_ret = 1; goto callback_top :: else -> skip fi;
add_inline_done: skip;
     release(opa);                                            /* CancelRegistration(neverRuns: false) */
     goto op_done
  :: else -> aw = 0; rt_n = opa; rt_ret = 1; goto register_top
  fi;
add_reg_done: skip;
  if :: rres == REG_ADDED -> hasreg[opa] = 1 :: else -> release(opa) fi;
  rres = 0;
  goto op_done;

#if defined(CFG_LINK)
/* ---- Future._link's token step: cf_token_link(opa into opb); when the
   word was not empty (a handler came first), the fallback forwarder
   LINK_FWD is registered on opb instead (_register, no unless link) */
op_link: skip;
#if !defined(MUT_LINK_STORE)
  d_step {                                                    /* @link_cas */
    FENCE;
    if :: word[opa] == 0 -> word[opa] = MKW(opb) | W_LINKED; aw = 1 :: else -> aw = 0 fi
  };
#else
  d_step { aw = (word[opa] == 0) };                           /* MUTANT link-store: load ... */
  if :: aw -> d_step { word[opa] = MKW(opb) | W_LINKED } :: else -> skip fi;   /* ... then store */
#endif
  if
  :: aw -> aw = 0; goto op_done
  :: else -> rt_n = LINK_FWD; rt_ret = 3; goto register_top
  fi;
link_reg_done: skip;
  if :: rres == REG_ADDED -> hasreg[LINK_FWD] = 1 :: else -> release(LINK_FWD) fi;
  rres = 0;
  goto op_done;
#endif

/* ---- debug_count(opa) (cf_token_debug_count / _live), at the top of a
   thread: takes CLEANING like a cleaner, counts, clears it with a full CAS,
   then re-checks the trigger and cleans like a cleaner (try_clean). From its
   CLEANING CAS to its return it counts as a removal in flight for P6: it is
   then the cleaner a remover that found CLEANING relies on. */
op_dcount: skip;
  do
  :: d_step { gw = word[opa] };                               /* @dbg_load */
     if
     :: (gw & W_TERMINAL) || NODE_OF(gw) == 0 -> goto dcount_done
     :: !(gw & W_TERMINAL) && NODE_OF(gw) != 0 && (gw & W_CLEANING) -> skip   /* sched_yield; continue */
     :: !(gw & (W_TERMINAL | W_CLEANING)) && NODE_OF(gw) != 0 ->
        d_step {                                              /* @dbg_cas */
          if :: word[opa] == gw -> word[opa] = gw | W_CLEANING; gok = 1; gcur = NODE_OF(gw); INRM_INC(opa) :: else -> gok = 0 fi
        };
        if :: gok -> break :: else -> skip fi
     fi
  od;
  do
  :: gcur == 0 -> break
  :: else -> d_step { assert(alive[gcur]); gn = gn + (st[gcur] == LIVE -> 1 : 0); gcur = nx[gcur] }  /* @dbg_state */
  od;
  skip;
  d_step { gw = word[opa] };                                  /* @clear_load */
  do
  :: d_step {                                                 /* @clear_cas (full) */
       FENCE;
       if :: word[opa] == gw -> word[opa] = gw & ~W_CLEANING; gok = 0 :: else -> gw = word[opa]; gok = 1 fi
     };
     if :: gok == 0 -> break :: else -> skip fi
  od;
#ifndef MUT_DCOUNT_NORECHECK
  /* Re-check like a cleaner: removals made while we held CLEANING did not clean. */
  skip;
  d_step { mdead = dead[opa]; gw = 0; gn = 0 };               /* @dbg_recheck */
  if
  :: mdead >= CLEAN_MIN ->                                    /* wants_clean(t, dead) */
     d_step { mlen = last_len[opa] }                          /* @wants_len */
     if
     :: mdead > mlen / 2 -> d_step { mdead = 0; mlen = 0; c_t = opa; m_ret = 5 }; goto try_clean
     :: else -> skip
     fi
  :: else -> skip
  fi;
#else
  skip;                                                       /* MUTANT dcount-norecheck: return after the clear (the old code) */
#endif
dcount_cleaned: skip;
  d_step { INRM_DEC(opa); mdead = 0; mlen = 0 };
dcount_done: skip;
  d_step { gw = 0; gok = 0; gcur = 0; gn = 0 };
  goto op_done;

#if NF > 0
/* ---- Future._trySetFuture(other: opb) on future opa (Future._setFuture):
   claim, pre-walk, _target = start, FLATTENING, walk, then the forwarder
   (node opa+1) on the token of the walk's end; other === self is not used */
op_setf: skip;
  cf_token_load(opb, aw);
  if
  :: (aw & W_TERMINAL) ->                                     /* _trySet(other._result!) / _tryImmortalize() */
     cf_future_claim(opa, F_UNSET, F_CLAIMED, fwon);
     if
     :: fwon -> fwon = 0; s_t = opa; s_term = (aw & W_CANCELLED -> W_CANCELLED : W_IMMORTAL); aw = 0; st_ret = 1; goto settle_top
     :: else -> aw = 0; goto op_done
     fi
  :: else -> aw = 0
  fi;
  cf_future_claim(opa, F_UNSET, F_CLAIMED, fwon);
  if :: !fwon -> goto op_done :: else -> fwon = 0 fi;
  /* Future._walk(from: opb), Brent: first the pre-walk (wph 0), before our
     publication, giving `start`; then (wph 1), after it, from `start`,
     giving `end`. cur == opa at the end of either: nil, a cycle through us. */
  cur = opb;
setf_walk: skip;
  tort = cur; pw = 1; lam = 0;
  do
  :: cur == opa -> break
  :: else ->
     cf_future_claim_load(cur, cl, tg);
     if
     :: cl != F_FLATTENING || tg == 0 -> break
     :: else ->
        cur = tg - 1;
        if
        :: cur == tort && cur != opa -> break
        :: else ->
           lam++;
           if :: lam == pw -> tort = cur; pw = pw * 2; lam = 0 :: else -> skip fi
        fi
     fi
  od;
  if
  :: cur == opa ->                                            /* _immortalizeClaimed() */
     d_step { ndetect++; cur = 0; tort = 0; pw = 0; lam = 0; cl = 0; tg = 0; wph = 0 };
     s_t = opa; s_term = W_IMMORTAL; st_ret = 1; goto settle_top
  :: cur != opa && wph == 0 ->                                /* _target = start; FLATTENING; walk from start */
     publish_flattening(opa, cur);
#ifndef MUT_PREWALK_ONLY
     wph = 1; goto setf_walk
#else
     skip                                                     /* MUTANT prewalk-only: no walk after the publication */
#endif
  :: cur != opa && wph == 1 -> skip
  fi;
#ifndef CYCLE_PROTO
  d_step {                                                    /* _FlattenNode(output: self, target: end)._register(on: end, .library) */
    tok[opa + 1] = cur;
    rt_n = opa + 1; rt_ret = 2;
    cur = 0; tort = 0; pw = 0; lam = 0; cl = 0; tg = 0; wph = 0
  };
  goto register_top;
setf_reg_done: skip;
  rres = 0;
  release(opa + 1);                                           /* its CancelRegistration is dropped */
#else
  d_step { cur = 0; tort = 0; pw = 0; lam = 0; cl = 0; tg = 0; wph = 0 };
#endif
  goto op_done;
#endif

/* ---- subroutine: _register(owner, node) at the top of a thread (rt_n) */
register_top: skip;
  r_n = rt_n; r_ret = 1; goto cf_token_register;
reg_top_back: skip;
  rres = r_res; r_res = 0;
  if
  :: rres == REG_LINKED ->
     /* linked meanwhile: once more on the root (_register); the retain
        cf_token_register's entry step counts is the same reference */
     d_step { refs[rt_n]--; tok[rt_n] = NODE_OF(word[tok[rt_n]]) };
     rres = 0; goto register_top
  :: rres == REG_ADDED -> skip
  :: rres == REG_CANCELLED && draining && sh != 0 ->          /* @must_queue */
     cf_node_enqueue(rt_n, W_CANCELLED); rres = REG_ADDED
  :: else ->
     release(rt_n);                                           /* releaseObject() */
     cf_node_claim(rt_n, (rres == REG_CANCELLED -> CLAIMED : DISCARDED), won);
     if
     :: won -> won = 0; cb_n = rt_n; cb_ev = (rres == REG_CANCELLED -> EV_RUN : EV_DISCARD); ct_ret = 2; goto callback_top
     :: else -> skip
     fi
  fi;
reg_top_done: skip;
  rt_n = 0;
  if
  :: rt_ret == 1 -> rt_ret = 0; goto add_reg_done
#if defined(CFG_LINK)
  :: rt_ret == 3 -> rt_ret = 0; goto link_reg_done
#endif
#if NF > 0 && !defined(CYCLE_PROTO)
  :: rt_ret == 2 -> rt_ret = 0; goto setf_reg_done
#endif
  fi;

/* ---- subroutine: a handler run inline at the top of a thread (cb_n, cb_ev) */
callback_top: skip;
#ifdef CHECK_ORDER
  d_step { START(cb_n); VISIT(cb_n) };
#endif
  SET_CTX(octx0, cb_n);
  ai0 = 0;
  do
  :: ai0 < 2 ->
     a0 = (cb_ev == EV_RUN -> (ai0 == 0 -> ra1[cb_n] : ra2[cb_n]) : (ai0 == 0 -> da[cb_n] : 0));
     at0 = a0 & 15;
     if
     :: a0 == 0 -> skip
     :: (a0 >> 4) == A_CANCEL -> s_t = at0; s_term = W_CANCELLED; st_ret = 2; goto settle_top
     :: (a0 >> 4) == A_IMMORT -> s_t = at0; s_term = W_IMMORTAL; st_ret = 2; goto settle_top
     :: (a0 >> 4) == A_REMOVE -> m_n = at0; m_user = 0; m_ret = 2; goto node_remove
     :: (a0 >> 4) == A_ADD -> assert(false)                   /* model limit */
     fi;
ct_next: skip;
     ai0++; a0 = 0; at0 = 0
  :: else -> break
  od;
  ai0 = 0;
  drop_held(cb_n);
  RESTORE_CTX(octx0);
  cb_n = 0; cb_ev = 0;
  if
  :: ct_ret == 1 -> ct_ret = 0; goto add_inline_done
  :: ct_ret == 2 -> ct_ret = 0; goto reg_top_done
  fi;

/* ---- subroutine: cf_token_settle(s_t, s_term) from the top: settle, then drain */
settle_top: skip;
  s_ret = 1; goto settle_body;
settle_top_back: skip;
  if :: !draining -> drain() :: else -> skip fi;              /* @settle_drain */
  if
  :: st_ret == 1 -> st_ret = 0; goto op_done
  :: st_ret == 2 -> st_ret = 0; goto ct_next
  fi;

/* ---- subroutine: cf_token_settle(s_t, s_term) up to the drain call */
settle_body: skip;
  d_step { sw = word[s_t] };                                  /* @settle_load */
  do
  :: (sw & (W_TERMINAL | W_LINKED)) -> s_res = 0; break       /* @settle_linked */
  :: !(sw & (W_TERMINAL | W_LINKED)) && (sw & W_CLEANING) ->  /* @settle_wait: sched_yield */
     d_step { sw = word[s_t] }                                /* @settle_reload */
#ifndef MUT_SETTLE_NOWAIT
  :: !(sw & (W_TERMINAL | W_LINKED | W_CLEANING)) ->
#else
  :: !(sw & (W_TERMINAL | W_LINKED)) ->                       /* MUTANT settle-nowait */
#endif
     d_step {                                                 /* @settle_cas */
       FENCE;
       if
       :: word[s_t] == sw ->
          word[s_t] = s_term; sok = 1;
          /* ghost: the list now belongs to this settler */
          wk = NODE_OF(sw); wc = 0;
          do
          :: wk != 0 -> assert(alive[wk]); lnk[wk] = 0; inq[wk] = 1; wk = nx[wk]; wc++; assert(wc <= NN)
          :: else -> break
          od;
          wk = 0; wc = 0;
#ifdef CHECK_LEN
          nlinked[s_t] = 0; nlive[s_t] = 0;
#endif
          skip
       :: else -> sw = word[s_t]; sok = 0
       fi
     };
     if :: sok -> s_res = 1; break :: else -> skip fi
  od;
  if
  :: s_res ->
     d_step {                                                 /* @settle_reverse @settle_enqueue */
       lifo = NODE_OF(sw); fifo = 0; slast = lifo;
       do
       :: lifo != 0 ->
          assert(alive[lifo]);
          snext = nx[lifo];
#ifndef MUT_LIFO
          nx[lifo] = fifo;
#endif
          op[lifo] = s_term; fifo = lifo; lifo = snext
       :: else -> break
       od;
#ifdef MUT_LIFO
       slast = fifo; fifo = NODE_OF(sw);                      /* MUTANT lifo: no reversal, newest first */
#endif
#ifdef CHECK_ORDER
       wk = fifo; do :: wk != 0 -> START(wk); wk = nx[wk] :: else -> break od; wk = 0;
#endif
       if :: fifo != 0 -> enqueue_started(fifo, slast) :: else -> skip fi;
       lifo = 0; fifo = 0; slast = 0; snext = 0; sw = 0; sok = 0; s_res = 0
     }
  :: else -> sw = 0; sok = 0
  fi;
  if
  :: s_ret == 1 -> s_ret = 0; goto settle_top_back
  :: s_ret == 2 -> s_ret = 0; goto l1_next
  :: s_ret == 3 -> s_ret = 0; goto l2_next
  fi;

/* ---- subroutine: cf_token_register(tok[r_n], r_n) -> r_res (with the
   Swift retainObject merged into its first step: the node is private) */
cf_token_register: skip;
  d_step { refs[r_n]++; used[r_n] = 1; rw = word[tok[r_n]] }  /* @reg_load (+ swift_retain) */
  do
  :: (rw & W_CANCELLED) -> r_res = REG_CANCELLED; break
  :: (rw & W_IMMORTAL) -> r_res = REG_IMMORTAL; break
  :: (rw & W_LINKED) -> r_res = REG_LINKED; break             /* @reg_linked */
  :: !(rw & (W_TERMINAL | W_LINKED)) ->
     d_step {                                                 /* @reg_next @reg_cas */
       FENCE;
       assert(alive[r_n]);
       nx[r_n] = NODE_OF(rw);
       if
       :: word[tok[r_n]] == rw ->
#ifndef MUT_REG_DROP_CLEANING
          word[tok[r_n]] = MKW(r_n) | (rw & W_CLEANING);      /* @reg_keep_clean */
#else
          word[tok[r_n]] = MKW(r_n);                          /* MUTANT reg-drop-cleaning */
#endif
          rok = 1; lnk[r_n] = 1;
#ifdef CHECK_FIFO
          tseq[tok[r_n]]++; rseq[r_n] = tseq[tok[r_n]]; listed[r_n] = 1;
#endif
#ifdef CHECK_LEN
          nlinked[tok[r_n]]++; nlive[tok[r_n]]++;
#endif
          skip
       :: else -> rw = word[tok[r_n]]; rok = 0
       fi
     };
     if :: rok -> r_res = REG_ADDED; break :: else -> skip fi
  od;
  rw = 0; rok = 0; r_n = 0;
  if
  :: r_ret == 1 -> r_ret = 0; goto reg_top_back
  :: r_ret == 2 -> r_ret = 0; goto reg_l1_back
  fi;

/* ---- subroutine: cf_node_remove(tok[m_n], m_n) with try_clean, then the
   Swift side: remove() (m_user: reads the state when it lost) or
   _releaseTarget; the winner's node._removed() drops what it holds */
node_remove: skip;
  d_step {                                                    /* @remove_cas @live_own @live_cas */
    FENCE;
    assert(alive[m_n]);
    if
    :: st[m_n] == LIVE ->
       st[m_n] = REMOVED; m_res = 1; WIN(m_n); rtrue[m_n] = 1;
#ifdef CHECK_LEN
       INRM_INC(tok[m_n]);
       if :: lnk[m_n] -> nlive[tok[m_n]]-- :: else -> skip fi;
#endif
       skip
    :: else -> m_res = 0
    fi
  };
  if
  :: m_res ->
     d_step { FENCE; dead[tok[m_n]] = dead[tok[m_n]] + 1; mdead = dead[tok[m_n]]; c_t = tok[m_n] }   /* @remove_inc (full) */
     if
     :: mdead >= CLEAN_MIN ->                                 /* @remove_trigger: wants_clean(t, dead) */
        d_step { mlen = last_len[tok[m_n]] }                  /* @wants_len */
        if
#ifndef MUT_NO_CLEAN
        :: mdead > mlen / 2 -> d_step { mdead = 0; mlen = 0 }; goto try_clean
#else
        :: mdead > mlen / 2 -> skip                           /* MUTANT no-clean */
#endif
        :: else -> skip
        fi
     :: else -> skip
     fi
  :: else -> skip
  fi;
remove_tail: skip;
  if
  :: m_res -> d_step { INRM_DEC(tok[m_n]); drop_held_body(m_n) }   /* returned; node._removed(...) */
  :: !m_res && m_user ->
     d_step {                                                 /* @node_state */
       assert(alive[m_n]);
       if :: st[m_n] == CLAIMED -> rfalse[m_n] = 1 :: else -> rtrue[m_n] = 1 fi
     }
  :: else -> skip
  fi;
  d_step { m_n = 0; m_user = 0; m_res = 0; mdead = 0; mlen = 0; c_t = 0 };
  if
  :: m_ret == 1 -> m_ret = 0; goto op_done
  :: m_ret == 2 -> m_ret = 0; goto ct_next
  :: m_ret == 3 -> m_ret = 0; goto l1_next
  :: m_ret == 4 -> m_ret = 0; goto l2_next
  :: m_ret == 5 -> m_ret = 0; goto dcount_cleaned
  fi;

/* ---- try_clean(c_t), the tail of cf_node_remove and of debug_count (which
   enters with m_n = 0, m_ret = 5: remove_tail only returns): a loop, left
   when the word is settled, empty or CLEANING (that cleaner re-checks for
   us), or when the re-check after a pass finds the trigger no longer met. */
try_clean: skip;
  d_step { cw = word[c_t] };                                  /* @clean_load */
  if
  :: (cw & (W_TERMINAL | W_CLEANING)) || NODE_OF(cw) == 0 -> goto clean_done
  :: else -> skip
  fi;
  d_step {                                                    /* @clean_cas */
    if
    :: word[c_t] == cw ->
       word[c_t] = cw | W_CLEANING; cok = 1;
       chead = NODE_OF(cw); assert(alive[chead]); cprev = chead; ccur = nx[chead]; cunl = 0; ckept = 1; crem = 0; cw = 0
    :: else -> cok = 0; cw = 0
    fi
  };
#ifndef MUT_CLEAN_GIVEUP
  if :: !cok -> goto try_clean :: else -> skip fi;            /* lost to a push or a cleaner: continue */
#else
  if :: !cok -> goto clean_done :: else -> skip fi;           /* MUTANT clean-giveup: a lost CAS gives up */
#endif
  do
  :: ccur == 0 -> break
  :: else ->
     d_step {                                                 /* @clean_state @clean_unlink */
       assert(alive[ccur]);
       cnext = nx[ccur];
       if
       :: st[ccur] == REMOVED ->
          nx[cprev] = cnext; nx[ccur] = cunl; cunl = ccur; crem++;
          lnk[ccur] = 0; inq[ccur] = 1;
#ifdef CHECK_LEN
          nlinked[c_t]--;
#endif
          skip
       :: else -> cprev = ccur; ckept++
       fi;
       ccur = cnext; cnext = 0
     }
  od;
  skip;
  d_step { last_len[c_t] = ckept; ckept = 0; chead = 0; cprev = 0 }   /* @clean_len */
  d_step { dead[c_t] = dead[c_t] - crem; crem = 0 }           /* @clean_dead */
  d_step { ccw = word[c_t] }                                  /* @clear_load */
#if defined(MUT_RECHECK_EARLY)
  d_step { mdead = dead[c_t] };                               /* MUTANT recheck-early: the re-check's load before the clear */
#endif
#if defined(MUT_CLEAR_STORE)
  d_step { word[c_t] = ccw & ~W_CLEANING; ccw = 0 };          /* MUTANT clear-store: plain store */
#else
  do
  :: d_step {                                                 /* @clear_cas (full) */
       FENCE;
       if :: word[c_t] == ccw -> word[c_t] = ccw & ~W_CLEANING; cok = 0; ccw = 0 :: else -> ccw = word[c_t]; cok = 1 fi
     };
#if defined(MUT_CLEAR_NORETRY)
     break                                                    /* MUTANT clear-noretry: no retry */
#else
     if :: cok == 0 -> break :: else -> skip fi
#endif
  od;
#endif
  do
  :: cunl == 0 -> break
  :: else ->
     d_step {                                                 /* @clean_call: CF_EV_UNLINK hands back the list's reference */
       assert(alive[cunl]);
       cnext = nx[cunl]; inq[cunl] = 0;
       release_body(cunl);
       cunl = cnext; cnext = 0
     }
  od;
#ifndef MUT_NO_RECHECK
  /* Re-check: removals made while we held CLEANING did not clean. */
  skip;
#ifndef MUT_RECHECK_EARLY
  d_step { mdead = dead[c_t]; ccw = 0; cok = 0 };             /* @clean_recheck */
#else
  d_step { ccw = 0; cok = 0 };
#endif
  if
  :: mdead >= CLEAN_MIN ->                                    /* wants_clean(t, dead) */
     d_step { mlen = last_len[c_t] }                          /* @wants_len */
     if
     :: mdead > mlen / 2 -> d_step { mdead = 0; mlen = 0 }; goto try_clean
     :: else -> skip
     fi
  :: else -> skip
  fi;
#else
  skip;                                                       /* MUTANT no-recheck: return after the callbacks */
#endif
clean_done: skip;
  d_step { cw = 0; chead = 0; cprev = 0; ccur = 0; cnext = 0; cunl = 0; ckept = 0; crem = 0; ccw = 0; cok = 0; mdead = 0; mlen = 0 };
  goto remove_tail;

finished: skip;
  d_step { ndone++ }
}

#ifdef STOREBUF
/* Store buffers drain to memory at any time. */
active proctype flusher() {
end: do
     :: d_step { sb[0] != 0 -> target[sb[0] - 1] = sbt[0]; claim[sb[0] - 1] = F_FLATTENING; sb[0] = 0; sbt[0] = 0 }
#if NP > 1
     :: d_step { sb[1] != 0 -> target[sb[1] - 1] = sbt[1]; claim[sb[1] - 1] = F_FLATTENING; sb[1] = 0; sbt[1] = 0 }
#endif
#if NP > 2
     :: d_step { sb[2] != 0 -> target[sb[2] - 1] = sbt[2]; claim[sb[2] - 1] = F_FLATTENING; sb[2] = 0; sbt[2] = 0 }
#endif
     od
}
#endif

#ifdef CHECK_LEN
/* P6 in every reachable state: this process can only move (and then fails
   an assertion) in a state that breaks the quiescent bound or the count. */
active proctype len_bound() {
end: if
     :: atomic { !LEN_OK -> assert(LEN_OK) }
     :: atomic { !DEAD_OK -> assert(DEAD_OK) }
#if defined(LEN_WITNESS)
     /* Not a property: -DLEN_WITNESS=1 (2) makes spin show a quiescent state
        where the bound is reached, with CLEAN_MIN - 1 (last_len / 2) the
        larger term: run.sh requires both, so P6 is tight. */
     :: atomic { inrm[0] == 0 && !(word[0] & W_TERMINAL) && RLINKED == LEN_MAX &&
                 (LEN_WITNESS == 1 -> CLEAN_MIN - 1 >= last_len[0] / 2 : last_len[0] / 2 > CLEAN_MIN - 1) -> assert(false) }
#endif
     fi
}
#endif

#if defined(PROGRESS) || defined(LIVENESS)
/* P7: under weak fairness every thread, the canceller included, finishes
   (-DLIVENESS adds this to any configuration). */
ltl terminates { <> (ndone == NP) }
#endif

init {
  byte i;
  d_step {
    i = 1;
    do
    :: i <= NN -> alive[i] = 1; refs[i] = 1; i++
    :: else -> break
    od;
    CFG_INIT;
    i = 1;
    do   /* an unless link holds a second reference on its target */
    :: i <= NN -> if :: hold[i] != 0 -> holding[i] = 1; refs[hold[i]]++ :: else -> skip fi; i++
    :: else -> break
    od;
#ifdef CHURN
    i = 1;
    do :: i <= NN -> alive[i] = 0; refs[i] = 0; i++ :: else -> break od;
#endif
    i = 0
  };
  atomic {
    run Thread(0);
#if NP > 1
    run Thread(1);
#endif
#if NP > 2
    run Thread(2);
#endif
    skip
  };
  (ndone == NP);
  d_step {
    /* P1, P2, P3 at the end: every node whose registration was attempted got
       exactly one fate and is freed (no leak, no lost handler); it ran iff a
       cancel claimed it; remove() answered consistently with that. */
    i = 1;
    do
    :: i <= NN ->
       if
       :: used[i] ->
          assert(wins[i] == 1 && !alive[i]);
          assert((st[i] == CLAIMED) == ran[i]);
          assert((st[i] == DISCARDED) == disc[i]);
          assert(!rfalse[i] || ran[i]);
          assert(!rtrue[i] || !ran[i])
       :: else -> skip
       fi;
       i++
    :: else -> break
    od;
    i = 0;
    CFG_END
  }
}
