import CCollapsingFutures

/// A `thenDo` without a closure context: `_StepFuture`'s technique for a
/// continuation with no output. `f`'s declared shape, `(A) -> Void`, is the
/// public parameter's, so it is stored without a reabstraction thunk; a
/// `thenDo` costs one allocation, this node.
@usableFromInline
final class _SinkNode<A: Sendable>: _Node, @unchecked Sendable {
    /// Runs `f` as the continuation says (a closure literal capturing nothing).
    @usableFromInline typealias Step = (_ input: Future<A>, _ f: (A) -> Void) -> Void

    @exclusivity(unchecked) @usableFromInline var input: Future<A>?
    @exclusivity(unchecked) @usableFromInline var f: ((A) -> Void)?
    @exclusivity(unchecked) @usableFromInline var step: Step?

    @inlinable @inline(__always) override init() { super.init() }

    /// A node for a `thenDo`: a kept one if this thread has one.
    @inlinable @inline(__always)
    static func _make(_ input: Future<A>, _ f: @escaping (A) -> Void, _ step: @escaping Step) -> _SinkNode {
        let n = _NodePool.take(_SinkNode.self) ?? _SinkNode()
        n.input = input
        n.f = f
        n.step = step
        return n
    }

    /// Takes the fields with plain loads and stores: these methods are not
    /// specialized, and `Optional.take()` on a generic function type would
    /// look up its metadata on every run. Each load is followed at once by
    /// its store, so the optimizer sees a move (with all loads first, it
    /// copies some of the fields: a retain and a release each).
    @inline(__always)
    private func _takeAll() -> (Step, Future<A>, (A) -> Void)? {
        let s = step; step = nil
        let i = input; input = nil
        let fn = f; f = nil
        guard let s, let i, let fn else { return nil }
        return (s, i, fn)
    }

    @usableFromInline override func _run() {
        if let (s, i, f) = _takeAll() { s(i, f) }
    }

    @usableFromInline override func _discard(unless _: AnyObject?) { _ = _takeAll() }

    @usableFromInline override func _removed(byUnless: Bool) { _ = _takeAll() }

    /// Its fields are nil: running, discarding and removing each take them.
    @usableFromInline override func _keep() -> Bool { _keepCleared() }
}
