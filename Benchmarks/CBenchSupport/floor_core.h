// The C floor's own build of the core. cf_core.c calls one node callback
// (CF_NODE_EVENT), the Swift layer's in the library; the floor's nodes are
// malloc blocks with a C callback, so the floor compiles the same source
// once more (floor_core.c) with its callback and every external name of
// the core renamed, and calls these names. Included first by the floor's
// files, before cf_core.h.
#ifndef CFB_FLOOR_CORE_H
#define CFB_FLOOR_CORE_H

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

#endif
