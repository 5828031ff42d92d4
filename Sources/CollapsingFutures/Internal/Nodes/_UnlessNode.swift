import CCollapsingFutures

/// Registered on an `unless:` token: when it is cancelled, removes `target`.
/// With `removeOnDiscard` it also removes `target` when the `unless` token
/// becomes immortal (used by linked sources, whose leaf must not outlive them).
@usableFromInline
final class _UnlessNode: _Node, @unchecked Sendable {
    /// The owner of the `unless` token this link is registered on, which its
    /// node reads, and takes to remove it: a removed link can stay in the
    /// token's list until a cleanup, and must not keep the token's owner
    /// alive from there. Only the node touches it, so its reads race with
    /// nothing.
    @exclusivity(unchecked)
    var unlessOwner: AnyObject?
    @exclusivity(unchecked)
    var target: CancelRegistration?
    /// The threading `target`'s node was registered under, which its
    /// `_policy` holds while linked (`_RunPolicy.linked`); only that node
    /// reads it. A removed link waiting in its list for a cleanup still
    /// holds the node's queue, as many as the list's cleanup bound lets
    /// wait (unlike `unlessOwner`, which would hold the list's own token).
    let targetPolicy: _RunPolicy
    let removeOnDiscard: Bool

    init(target: CancelRegistration, policy: _RunPolicy, on unlessOwner: AnyObject, removeOnDiscard: Bool) {
        self.unlessOwner = unlessOwner
        self.target = target
        self.targetPolicy = policy
        self.removeOnDiscard = removeOnDiscard
    }

    override func _run() { target.take()?._removeByUnless() }
    override func _discard() {
        let t = target.take()
        if removeOnDiscard { t?._removeQuietly() }
    }
    override func _removed(byUnless: Bool) { target = nil }

    /// Removes this link from its `unless` token: its node settled first.
    func _removeFromUnless() {
        guard let uo = unlessOwner.take() else { return }
        _ = _removeNode(self, from: uo, byUnless: false)
    }
}
