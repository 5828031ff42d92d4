// cf_upcalls.h — how the C side calls up into the program that uses it: one
// table of callbacks per process. The core (a node's events), the node pool
// (a kept node freed as its thread exits), the firing pool (a node the
// timer driver hands over) and the library's wheels (a deadline's event)
// call nothing else above them.
//
// The library's table is the Swift layer's `@_cdecl` functions
// (cf_upcalls.c), in use from the start. A C program that drives the core
// with nodes of its own (the benchmark's C floor) gives its table with
// cf_use_upcalls before it uses any token, once: a node's callback is the
// table's, whichever table was in use when the node was registered, so the
// table never changes while a node is out.
#ifndef CF_UPCALLS_H
#define CF_UPCALLS_H

#include "cf_core.h"
#include "cf_deadline.h"

#pragma clang assume_nonnull begin

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cf_upcalls {
    /// Every node's event (cf_event), with the reference the list held: the
    /// callee finds the node's owner from the node, and releases or keeps it.
    void (*node_event)(cf_node *node, int event);
    /// Frees a node a thread kept for reuse, as that thread exits
    /// (cf_node_pool.h).
    void (*node_free)(cf_node *node);
    /// Runs a node the timer driver handed to the firing pool, on a pool
    /// thread, with the references the item held (cf_firing_pool.h).
    void (*firing_run)(cf_node *node, void *_Nullable unless);
    /// The library's wheels' deadline callback (cf_wheel.h); a wheel made by
    /// cf_wheel_create has its own.
    void (*deadline_event)(cf_deadline *deadline, int event);
} cf_upcalls;

/// The table in use. Read on every upcall; a plain pointer: it is written
/// only by cf_use_upcalls, before any token is used, and every thread that
/// reads it was started, or handed work, after that.
extern const cf_upcalls *cf_upcalls_in_use;

/// Gives the core `upcalls`, once, before any token is used (see above).
void cf_use_upcalls(const cf_upcalls *upcalls);

#ifdef __cplusplus
}
#endif

#pragma clang assume_nonnull end

#endif
