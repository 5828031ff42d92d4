// The C floor's own build of the core. cf_core.c calls one node callback,
// CF_NODE_EVENT, the Swift layer's in the library; the floor's nodes are
// malloc blocks with a C callback, so the floor compiles the same source
// once more (floor_core.c) with its callback and every external name of
// the core renamed, and calls these names. Included after cf_core.h, whose
// declarations keep the library's names (it may come in as the library's
// Clang module, where no macro of ours reaches): the floor's are below.
#ifndef CFB_FLOOR_CORE_H
#define CFB_FLOOR_CORE_H
#include "cf_core.h"

#pragma clang assume_nonnull begin

#define CF_NODE_EVENT cfb_floor_node_event
#define cf_token_load cfb_floor_token_load
#define cf_node_state cfb_floor_node_state
#define cf_token_link cfb_floor_token_link
#define cf_token_register cfb_floor_token_register
#define cf_token_settle cfb_floor_token_settle
#define cf_node_remove cfb_floor_node_remove
#define cf_node_claim cfb_floor_node_claim
#define cf_node_enqueue cfb_floor_node_enqueue
#define cf_inline_depth cfb_floor_inline_depth
#define cf_drain_must_queue cfb_floor_drain_must_queue
#define cf_drain_waiting_count cfb_floor_drain_waiting_count
#define cf_drain_set_aside cfb_floor_drain_set_aside
#define cf_drain_put_back cfb_floor_drain_put_back
#define cf_future_claim cfb_floor_future_claim
#define cf_future_claim_load cfb_floor_future_claim_load
#define cf_token_debug_count cfb_floor_token_debug_count
#define cf_token_debug_count_live cfb_floor_token_debug_count_live

/// The floor's node callback (cfb.c) and the calls the floor makes, as
/// cf_core.h declares them.
void cfb_floor_node_event(cf_node *node, int event);
int cfb_floor_token_register(cf_token *t, cf_node *n);
int cfb_floor_token_settle(cf_token *t, uintptr_t terminal);
int cfb_floor_node_remove(cf_token *t, cf_node *n);

#pragma clang assume_nonnull end
#endif
