import CCollapsingFutures
import Dispatch

/// A node that runs a closure.
@usableFromInline
final class _HandlerNode: _Node, @unchecked Sendable {
    @exclusivity(unchecked) @usableFromInline
    var handler: (@Sendable () -> Void)?

    @inlinable @inline(__always) init(_ handler: @escaping @Sendable () -> Void) {
        self.handler = handler
        super.init()
    }

    @usableFromInline override func _run() { handler.take()?() }
    @usableFromInline override func _discard() { handler = nil }
    @usableFromInline override func _removed(byUnless: Bool) { handler = nil }
}
