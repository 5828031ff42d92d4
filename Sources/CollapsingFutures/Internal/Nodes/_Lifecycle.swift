// The lifecycle of a node, every kind in one place. The C side's table is
// in cf_core.h (the state word, the node state); this is the Swift side.
// A node object is a `_Node`, or a step's output future (`_StepFuture`,
// whose `cf_node` carries the core's owner bit); the path and the
// lifecycle work on its `cf_node` and run policy (`_NodeRef`), and only
// the action at the end differs by kind.
//
// STATES. A node's C state (`cf_node.state`) is LIVE from `cf_node_init`
// until exactly one event moves it out: CLAIMED (run), DISCARDED (its
// token became immortal) or REMOVED. Its run policy (`_RunPolicy`, the
// Swift field after the `cf_node` in every node object) says where it runs:
//   inline | inlineWhenSettled | mainQueueUnlessThere | queue | mainActor
//     recorded by `_register` before the node is published;
//   linked(link)  it has an `unless` link (which keeps the policy above);
//   unlinked      the link was removed or dropped once the node settled.
//
// EVENTS (`_NodeEvent`, turned into actions, `_NodeAction`, by
// `_NodeRef._handle`) and who sends them:
//   registered   `_register` -> `_NodeRef._enter`: run now (CLAIMED: `_runNow`),
//                discard now (DISCARDED), `unless` came first (REMOVED:
//                `.removed(byUnless: true)`), or pushed (stays LIVE).
//                Settled there, a node was never listed: the state is a
//                plain store, before anyone else can see the node. (An
//                `unless` link can be seen through its published target:
//                it always takes the push, and the claim decides.)
//   cancelled    the C callback CF_EV_RUN, after the settle's CAS, or an
//                unlisted node that met its token cancelled; a policy that
//                hops sends the node there first (`hopped` on arrival).
//   immortalized CF_EV_DISCARD, or an unlisted node that met its token
//                immortal.
//   removed      `CancelRegistration.remove()` won the CAS (byUnless false),
//                or its `unless` link ran (byUnless true).
//   hopped       the run reached its queue or the main actor: `unless` is
//                read again (cancelled: as removed by it; else run).
//   CF_EV_UNLINK only hands back the list's reference (a removed node).
// `_handle` first releases the `unless` link (removed from its token, or
// dropped when it was never pushed or is the one that fired), then
// performs the kind's action (`_NodeRef.perform`): a `_Node`'s method, or
// a step future's step, which its outcome words hold until then.
//
// ACTIONS, per kind (all take their fields, leaving them nil):
//   kind               run (cancelled)          immortalized            removed by unless         kept
//   _HandlerNode       the handler              drop                    drop                      yes
//   _StepFuture        the step; collapsing:    itself: _failOnUnless   itself fails (*)          no
//                      set to the future f
//                      returned
//   _SinkNode          f(value) on success      drop                    drop                      yes
//   _ContinuationNode  the body                 output: _failOnUnless   output fails (*)          yes
//   _FlattenNode       complete output from     output immortal         -                         no
//                      the chain's end
//   _UnlessNode        remove its target        remove its target if    -                         yes
//                      (by unless)              removeOnDiscard
//   _ResumeNode        resume with onRun()      throw onDiscard         resume with onRemove      no
//   _AllNode           count down; the last     result immortal         drop                      no
//                      cancels the result
// "removed" by `remove()` only drops the fields (the Do forms and steps
// run nothing). (*) with `CancellationError`, the user's function never
// run; a Do form has no output. `_failOnUnless`: the output fails when
// `unless` fires, and is immortal once it cannot.
//
// PHASES. None: every node is registered once, and acts once. A
// collapsing step that returned a pending future sets itself to it
// (`Future._setFuture`: linked, or a `_FlattenNode` forwarder); its own
// node is done by then.
//
// OWNERSHIP. Before publication only the registering thread writes a
// node's fields; the C release-CAS that publishes it orders those writes.
// From then on the winner of the CAS out of LIVE owns them: no lock, no
// dynamic exclusivity check (`@exclusivity(unchecked)`). `_policy` is
// written before publication and by its owner in `_handle`.
//
// REFERENCES. The list holds one on the node object (`_enter`), handed
// back with every C callback (`_nodeEvent`); a `CancelRegistration`, an
// `unless` link's target and a hop each hold another. A step future's
// holders are also its users: it lives while listed, whoever holds it.
//
// REUSE (cf_node_pool.h). A node is dead when the reference in hand is its
// only one (`cf_is_only_reference`, the Swift runtime's count): in
// `_nodeEvent` (the list's) or after a run now (`_runNow`, the caller's:
// a node run now is never listed, linked nor handed out).
// A dead `_Node` of a kept kind clears its fields and goes on this thread's
// free list (`_keep`); `_reused` takes it, `cf_node_init` first. A step
// future is its user's output, never kept.
//
// THREADSANITIZER. Reuse crosses threads through the runtime's reference
// count, which TSan cannot see: each holder other than the list calls
// `cf_node_fields_released` when done with a node (`CancelRegistration`,
// `_removeNode`, a hop's arrival, an `unless` link's release, a
// non-final `_nodeEvent`), and keeping calls `cf_node_fields_acquired`.

/// What happens to a node: the events of its one lifecycle, which
/// `_NodeRef._handle` turns into the node's actions. Each event but `hopped`
/// comes to the winner of the node's CAS out of LIVE, so exactly one of
/// them ends a node's registration.
@usableFromInline
enum _NodeEvent {
    /// Claimed by its token's cancel. `linkPushed`: its `unless` link was
    /// pushed, so it is removed from the `unless` token; false when the node
    /// found its token settled as it was pushed (the link, never pushed, is
    /// dropped).
    case cancelled(linkPushed: Bool)
    /// Claimed by its token becoming immortal (`linkPushed` as above).
    case immortalized(linkPushed: Bool)
    /// Claimed by its registration's `remove()`; `byUnless`: by its `unless`
    /// link, which fired (and so is dropped, not removed).
    case removed(byUnless: Bool)
    /// The run reached the queue or actor it hopped to, where `unless` is
    /// checked again.
    case hopped(unless: CancelToken)
}

/// What `_NodeRef._handle` makes of an event: the node's action, which
/// `_NodeRef.perform` runs (a `_Node`'s method, a step future's step).
@usableFromInline
enum _NodeAction {
    /// Run (the token was cancelled, or the hop arrived).
    case run
    /// Never run: its token became immortal. `unlessOwner`: the owner of
    /// the `unless:` token that can still fail a continuation's output.
    case discard(unlessOwner: AnyObject?)
    /// Never run: removed by its registration, or, `byUnless`, by its
    /// `unless:` token, when it fired first or before a hop arrived.
    case remove(byUnless: Bool)
}
