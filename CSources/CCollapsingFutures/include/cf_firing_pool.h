// cf_firing_pool.h — the threads that run what a timer's firing releases.
//
// Why: the wheel's driver (cf_wheel.h) makes each timer's own transition
// itself — a token cancelled, a future failed — and runs the library's
// bookkeeping that follows (nothing of it blocks). The handlers that would
// run on the cancelling thread are user code, which may block: the driver
// hands them here instead, so a handler that blocks delays other handlers,
// never a timer. A handler registered `on:` a queue, or bound for the main
// queue, is sent there by the driver itself (an asynchronous submission).
//
// Threads: at most cf_firing_threads() (the machine's cores, at least 2,
// at most 64), started one at a time as work finds every started one busy
// (when groups are handed over, or when a thread takes some and others
// still wait), never stopped. A thread takes a batch of groups: one when
// few wait, up to 64 when many do (a burst takes the lock once per many).
// A handler that blocks holds back the rest of its batch, unless it blocks
// in Future.wait(), which hands the batch's later groups back first
// (cf_firing_blocking). Nothing here runs on Dispatch's or Swift's pools.
//
// Order: what one firing hands over is one group, run in order on one
// pool thread (a token's handlers run in registration order, and what a
// handler starts runs right after it on that thread). Groups start in the
// order they were handed over; different groups may run in parallel.
//
// Each wheel's driver collects items and groups with no atomics (they are
// its own, thread-local, until published); cf_firing_publish hands them
// over under the pool's mutex, which also orders every write the driver
// made before it (the items' nodes and what their owners hold) before the
// pool thread that takes them. Taking a group is also under that mutex.
// The pool threads call up through `firing_run` (cf_upcalls.h).
#ifndef CF_FIRING_POOL_H
#define CF_FIRING_POOL_H

#include "cf_core.h"

#pragma clang assume_nonnull begin

#ifdef __cplusplus
extern "C" {
#endif


/// A wheel's driver thread only: adds a node to the open group. The item holds one
/// reference on the node's object and one on `unless` (or NULL), handed
/// to the upcall `firing_run`, which takes them.
void cf_firing_add(cf_node *node, void *_Nullable unless);

/// A wheel's driver thread only: closes the open group (one firing's items); no
/// effect when it is empty.
void cf_firing_end_group(void);

/// A wheel's driver thread only: hands its closed groups to the pool (one lock,
/// one wake-up at most per idle thread it needs).
void cf_firing_publish(void);

/// The most threads the pool starts.
int cf_firing_threads(void);

/// Threads the pool has started (tests, benchmark). Any thread.
int cf_firing_debug_started(void);

/// Groups handed over that no pool thread has taken yet. Any thread (takes
/// the pool's mutex): `Future.wait()` on a pool thread asks, to say when
/// blocking there may starve what could end the wait.
size_t cf_firing_queued(void);

/// On a pool thread, the items of the running group still to run after
/// the running one (its later siblings, in the core's terms): only this
/// thread runs them. 0 elsewhere. Thread-local, no atomics.
size_t cf_firing_waiting_behind(void);

/// On a pool thread about to block (Future.wait()): the groups of its
/// batch after the running one go back to the front of the queue, in
/// order, for other threads (one more starts if none is idle, up to the
/// bound). No effect elsewhere. Takes the pool's mutex when it hands back.
void cf_firing_blocking(void);

/// 1 on a pool thread, 0 elsewhere (thread-local, no atomics).
extern __thread int cf_firing_serving;
static inline int cf_firing_on_pool_thread(void) { return cf_firing_serving; }

#ifdef __cplusplus
}
#endif

#pragma clang assume_nonnull end

#endif
