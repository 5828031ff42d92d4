// cf_upcalls.c — the library's table of upcalls (cf_upcalls.h): the Swift
// layer's `@_cdecl` functions, the only Swift names the C side uses.
#include "cf_upcalls.h"

void cf_swift_node_event(cf_node *_Nonnull node, int event);    // Nodes/_Lifecycle.swift
void cf_swift_node_free(cf_node *_Nonnull node);                // Nodes/_NodePool.swift
void cf_swift_firing_run(cf_node *_Nonnull node, void *_Nullable unless);  // Nodes/_Lifecycle.swift
void cf_swift_deadline_event(cf_deadline *_Nonnull d, int event);          // _Timer.swift

static const cf_upcalls swift_upcalls = {
    .node_event = cf_swift_node_event,
    .node_free = cf_swift_node_free,
    .firing_run = cf_swift_firing_run,
    .deadline_event = cf_swift_deadline_event,
};

const cf_upcalls *cf_upcalls_in_use = &swift_upcalls;

void cf_use_upcalls(const cf_upcalls *upcalls) { cf_upcalls_in_use = upcalls; }
