import CCollapsingFutures
import Dispatch

/// A node that runs a closure.
@usableFromInline
final class _HandlerNode: _Node, @unchecked Sendable {
    /// Library bookkeeping that must happen whichever way the token settles
    /// (removing registrations that stopped mattering): run on discard too.
    /// Declared first: it packs after `_Node`'s flags (the node is 16 bytes
    /// of heap smaller than with it after `handler`).
    @usableFromInline let runOnDiscard: Bool

    @exclusivity(unchecked) @usableFromInline
    var handler: (@Sendable () -> Void)?

    @inlinable @inline(__always) init(_ handler: @escaping @Sendable () -> Void) {
        self.handler = handler
        self.runOnDiscard = false
        super.init()
    }

    init(runOnDiscard: Bool, _ handler: @escaping @Sendable () -> Void) {
        self.handler = handler
        self.runOnDiscard = runOnDiscard
        super.init()
    }

    @usableFromInline override func _run() { handler.take()?() }
    @usableFromInline override func _discard() {
        let h = handler.take()
        if runOnDiscard { h?() }
    }
    @usableFromInline override func _removed(byUnless: Bool) { handler = nil }
}
