import CCollapsingFutures

/// A `then` step without a closure context: the node holds the input, the
/// user's function and the output itself, and `step` is a closure literal
/// that captures nothing (in the specialized caller, a plain function
/// pointer), so a step costs two allocations, the output future and this
/// node.
///
/// `f`'s declared shape, `(A) throws -> R`, is the public parameter's
/// `(Value) throws -> U`: stored as it is passed, with no reabstraction
/// thunk (a field of any other shape, or of type `F`, would need one: one
/// allocation again).
@usableFromInline
final class _StepNode<A: Sendable, R: Sendable>: _Node, @unchecked Sendable {
    /// Completes `output` from the completed input (`unless` first fails
    /// it here, with `CancellationError`, without the step).
    @usableFromInline typealias Step = (_ input: Future<A>, _ f: (A) throws -> R, _ output: Future<R>) -> Void

    @exclusivity(unchecked) @usableFromInline var input: Future<A>?
    @exclusivity(unchecked) @usableFromInline var f: ((A) throws -> R)?
    @exclusivity(unchecked) @usableFromInline var output: Future<R>?
    @exclusivity(unchecked) @usableFromInline var step: Step?

    @inlinable @inline(__always) override init() { super.init() }

    /// A node for a step: a kept one if this thread has one.
    @inlinable @inline(__always)
    static func _make(_ input: Future<A>, _ f: @escaping (A) throws -> R, _ output: Future<R>, _ step: @escaping Step) -> _StepNode {
        let n = _reused(as: _StepNode.self) ?? _StepNode()
        n.input = input
        n.f = f
        n.output = output
        n.step = step
        return n
    }

    /// Takes the fields (plain loads and stores: these methods are not
    /// specialized, and `Optional.take()` on a generic function type would
    /// look up its metadata on every step). Each load is followed at once by
    /// its store, so the optimizer sees a move: with all loads first and all
    /// stores after, it copies two of the fields (a retain and a release
    /// each).
    @inline(__always)
    private func _takeAll() -> (Step, Future<A>, (A) throws -> R, Future<R>)? {
        let s = step; step = nil
        let i = input; input = nil
        let fn = f; f = nil
        let o = output; output = nil
        guard let s, let i, let fn, let o else { return nil }
        return (s, i, fn, o)
    }

    @usableFromInline override func _run() {
        if let (s, i, f, o) = _takeAll() { s(i, f, o) }
    }

    @usableFromInline override func _discard() { _discarded(unless: nil) }

    /// The input became immortal: as `_ContinuationNode._discarded` (the
    /// function and the input are released now).
    @usableFromInline override func _discarded(unless unlessOwner: AnyObject?) {
        if let (_, _, _, o) = _takeAll() { _failOnUnless(o, unlessOwner) }
    }

    @usableFromInline override func _removed(byUnless: Bool) {
        let taken = _takeAll()
        if byUnless, let (_, _, _, o) = taken { o._failCancelled() }
    }

    /// Its fields are nil: running, discarding and removing each take them.
    @usableFromInline override func _keep() -> Bool { _keepCleared() }
}
