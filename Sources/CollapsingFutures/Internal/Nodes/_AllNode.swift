import CCollapsingFutures

/// One input of `CancelToken.all`: counts down on cancel, immortalizes the
/// result when its input becomes immortal.
final class _AllNode: _Node, @unchecked Sendable {
    @exclusivity(unchecked)
    var storage: _TokenStorage?
    let remaining: _Countdown
    init(storage: _TokenStorage, remaining: _Countdown) {
        self.storage = storage
        self.remaining = remaining
    }
    override func _run() {
        let s = storage.take()
        if remaining.tick() { s?.settle(_wCancelled) }
    }
    override func _discard() { storage.take()?.settle(_wImmortal) }
    override func _removed(byUnless: Bool) { storage = nil }
}
