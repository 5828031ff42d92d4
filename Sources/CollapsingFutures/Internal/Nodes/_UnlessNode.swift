import CCollapsingFutures

/// Registered on an `unless:` token: when it is cancelled, removes `target`.
/// With `removeOnDiscard` it also removes `target` when the `unless` token
/// becomes immortal (used by linked sources, whose leaf must not outlive them).
final class _UnlessNode: _Node, @unchecked Sendable {
    @exclusivity(unchecked)
    var target: CancelRegistration?
    let removeOnDiscard: Bool

    init(target: CancelRegistration, removeOnDiscard: Bool) {
        self.target = target
        self.removeOnDiscard = removeOnDiscard
    }

    override func _run() { target.take()?._removeByUnless() }
    override func _discard() {
        let t = target.take()
        if removeOnDiscard { t?._removeQuietly() }
    }
    override func _removed(byUnless: Bool) { target = nil }
}
