import CCollapsingFutures
import Dispatch

/// A node that runs a closure.
@usableFromInline
final class _HandlerNode: _Node, @unchecked Sendable {
    @exclusivity(unchecked) @usableFromInline
    var handler: (@Sendable () -> Void)?

    @inlinable @inline(__always) override init() { super.init() }

    /// A node for `handler`: a kept one if this thread has one.
    @inlinable @inline(__always) static func _make(_ handler: @escaping @Sendable () -> Void) -> _HandlerNode {
        let n = _NodePool.take(_HandlerNode.self) ?? _HandlerNode()
        n.handler = handler
        return n
    }

    @usableFromInline override func _run() { handler.take()?() }
    @usableFromInline override func _discard(unless _: AnyObject?) { handler = nil }
    @usableFromInline override func _removed(byUnless: Bool) { handler = nil }
    /// `handler` is nil: running, discarding and removing each drop it.
    @usableFromInline override func _keep() -> Bool { _keepCleared() }
}
