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
    /// The node this link removes (a `_Node` or a step future), whose
    /// object the link holds a reference to until it lets it go
    /// (`_releaseTarget`), and the owner of the token it is registered on.
    @exclusivity(unchecked)
    var target: _NodeRef?
    @exclusivity(unchecked)
    var targetOwner: AnyObject?
    /// The threading `target`'s node was registered under, which its
    /// `_policy` holds while linked (`_RunPolicy.linked`); only that node
    /// reads it. A removed link waiting in its list for a cleanup still
    /// holds the node's queue, as many as the list's cleanup bound lets
    /// wait (unlike `unlessOwner`, which would hold the list's own token).
    @exclusivity(unchecked)
    var targetPolicy = _RunPolicy.inline
    @exclusivity(unchecked)
    var removeOnDiscard = false

    /// A link for `target`, registered on the token stored in
    /// `targetOwner`: a kept one if this thread has one.
    @inline(__always)
    static func _make(target: _NodeRef, of targetOwner: AnyObject, policy: _RunPolicy, on unlessOwner: AnyObject,
                      removeOnDiscard: Bool) -> _UnlessNode {
        let n = _NodePool.take(_UnlessNode.self) ?? _UnlessNode()
        n.unlessOwner = unlessOwner
        target.retainObject()
        n.target = target
        n.targetOwner = targetOwner
        n.targetPolicy = policy
        n.removeOnDiscard = removeOnDiscard
        return n
    }

    override func _run() { _releaseTarget(removing: true, byUnless: true) }
    override func _discard(unless _: AnyObject?) { _releaseTarget(removing: removeOnDiscard, byUnless: false) }
    override func _removed(byUnless: Bool) { _releaseTarget(removing: false, byUnless: false) }

    /// Lets the target go, first removing it (`byUnless`: this link
    /// fired) when `removing`.
    private func _releaseTarget(removing: Bool, byUnless: Bool) {
        guard let t = target.take(), let owner = targetOwner.take() else { return }
        if removing { _ = _removeNode(t, from: owner, byUnless: byUnless) }
        t.releaseObject()
    }

    /// Lets the target go without an event: the target settled and this
    /// link was never pushed (its registering thread alone holds it), or
    /// this link fired and has let it go already. Then hands this link
    /// off: its list's thread may keep it.
    func _dropTarget() {
        _releaseTarget(removing: false, byUnless: false)
        _NodePool.handOff(_ptr)
    }
    /// `target` is nil (running, discarding and removing each drop it);
    /// the `unless` token's owner (still held when the link ran or was
    /// discarded) and the threading go.
    override func _keep() -> Bool {
        unlessOwner = nil
        if case .inline = targetPolicy {} else { targetPolicy = .inline }
        return _keepCleared()
    }

    /// Removes this link from its `unless` token: its node settled first.
    /// Hands this link off as its last step (`_removeNode` does, when it
    /// runs), as `_dropTarget` does: its list's thread may keep it.
    func _removeFromUnless() {
        guard let uo = unlessOwner.take() else { return _NodePool.handOff(_ptr) }
        _ = _removeNode(_NodeRef(_ptr), from: uo, byUnless: false)
    }
}
