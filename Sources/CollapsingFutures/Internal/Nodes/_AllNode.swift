import CCollapsingFutures

/// One input of `CancelToken.all`: counts down on cancel, immortalizes the
/// result when its input becomes immortal.
final class _AllNode: _Node, @unchecked Sendable {
    /// The inputs still to be cancelled, shared by every input's node.
    let remaining: _Countdown
    /// The result's token, until this node's event.
    @exclusivity(unchecked) var storage: _TokenStorage?

    init(_ storage: _TokenStorage, counting remaining: _Countdown) {
        self.remaining = remaining
        self.storage = storage
    }
    override func _run() {
        let s = storage.take()
        if remaining.tick() { s?.settle(_wCancelled) }
    }
    override func _discard(unless _: AnyObject?) { storage.take()?.settle(_wImmortal) }
    override func _removed(byUnless: Bool) { storage = nil }
}
