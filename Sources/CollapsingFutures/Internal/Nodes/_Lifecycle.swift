// The lifecycle of a node, every kind in one place. The C side's table is
// in cf_core.h (the state word, the node state); this is the Swift side.
//
// STATES. A node's C state (`cf_node.state`) is LIVE from `cf_node_init`
// until exactly one event moves it out: CLAIMED (run), DISCARDED (its
// token became immortal) or REMOVED. Its run policy (`_RunPolicy`, the
// one Swift field every node has) says where it runs:
//   inline | inlineWhenSettled | mainQueueUnlessThere | queue | mainActor
//     recorded by `_register` before the node is published;
//   linked(link)  it has an `unless` link (which keeps the policy above);
//   unlinked      the link was removed or dropped once the node settled.
//
// EVENTS (`_NodeEvent`, performed by `_Node._handle`) and who sends them:
//   registered   `_Node._register` -> `_enter`: run now (CLAIMED: `_runNow`),
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
// dropped when it was never pushed or is the one that fired), then calls
// the kind's action.
//
// ACTIONS, per kind (all take their fields, leaving them nil):
//   kind               run (cancelled)          immortalized            removed by unless         kept
//   _HandlerNode       the handler              drop                    drop                      yes
//   _StepNode          the step                 output: _failOnUnless   output fails (*)          yes
//   _SinkNode          f(value) on success      drop                    drop                      yes
//   _FlatStepNode      the step; a pending      output: _failOnUnless   output fails (*)          yes
//     (step phase)     future returned:
//                      becomes its forwarder
//   _FlatStepNode      complete output from     output immortal         -                         yes
//     (forwarder)      the chain's end
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
// PHASES. A `_FlatStepNode` has two: the step, then, when its function
// returned a pending future and no `unless` link was ever made (nothing
// else can touch its `cf_node` then), the forwarder: it re-initialises its
// `cf_node` and registers itself on that future's chain. The forwarder
// phase is `step` nil with `inputOrTarget` set; the fields stay so because
// the node is generic and its methods are not specialized: an enum with
// generic payloads would cost a metadata lookup per step, and a phase byte
// a malloc size class per node.
//
// OWNERSHIP. Before publication only the registering thread writes a
// node's fields; the C release-CAS that publishes it orders those writes.
// From then on the winner of the CAS out of LIVE owns them: no lock, no
// dynamic exclusivity check (`@exclusivity(unchecked)`). `_policy` is
// written before publication and by its owner in `_handle`.
//
// REFERENCES. The list holds one (`Unmanaged.passRetained` in `_enter`),
// handed back with every C callback (`_nodeEvent`); a `CancelRegistration`,
// an `unless` link's target and a hop each hold another.
//
// REUSE (cf_node_pool.h). A node is dead when the reference in hand is its
// only one (`cf_is_only_reference`, the Swift runtime's count): in
// `_nodeEvent` (the list's) or after a run now (`_runNow`, the caller's:
// a node run now is never listed, linked nor handed out).
// A dead node of a kept kind clears its fields and goes on this thread's
// free list (`_keep`); `_reused` takes it, `cf_node_init` first. A node is
// registered once per life, but for the flatten step's forwarder phase.
//
// THREADSANITIZER. Reuse crosses threads through the runtime's reference
// count, which TSan cannot see: each holder other than the list calls
// `cf_node_fields_released` when done with a node (`CancelRegistration`,
// `_removeNode`, a hop's arrival, an `unless` link's release, a
// non-final `_nodeEvent`), and keeping calls `cf_node_fields_acquired`.

/// What happens to a node: the events of its one lifecycle, which
/// `_Node._handle` turns into the node's actions. Each event but `hopped`
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
