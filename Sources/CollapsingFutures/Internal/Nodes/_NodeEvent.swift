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
    /// The run reached the queue it hopped to, where `unless` is checked
    /// again.
    case hopped(unless: CancelToken)
}
