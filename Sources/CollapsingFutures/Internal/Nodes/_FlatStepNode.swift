import CCollapsingFutures

/// The collapsing `then` step: `_StepNode` for a function returning a
/// future, whose shape `(A) throws -> Future<R>` needs a field of its own
/// (stored in `_StepNode`'s `(A) throws -> R` it would take a reabstraction
/// thunk, one allocation; a second optional field there cost every `then`
/// step 7%). A flatten step saves the body closure's context.
@usableFromInline
final class _FlatStepNode<A: Sendable, R: Sendable>: _Node, @unchecked Sendable {
    /// `ok` true: the input completed; false: `unless` was cancelled first.
    @usableFromInline typealias Step = (_ input: Future<A>, _ f: (A) throws -> Future<R>, _ output: Future<R>, _ ok: Bool) -> Void

    @exclusivity(unchecked) @usableFromInline var input: Future<A>?
    @exclusivity(unchecked) @usableFromInline var f: ((A) throws -> Future<R>)?
    @exclusivity(unchecked) @usableFromInline var output: Future<R>?
    @exclusivity(unchecked) @usableFromInline var step: Step?

    @inlinable @inline(__always) init(_ input: Future<A>, _ f: @escaping (A) throws -> Future<R>, _ output: Future<R>, _ step: @escaping Step) {
        self.input = input
        self.f = f
        self.output = output
        self.step = step
        super.init()
    }

    /// Takes the fields with plain loads and stores (see `_StepNode`).
    @inline(__always)
    private func _takeAll() -> (Step, Future<A>, (A) throws -> Future<R>, Future<R>)? {
        let s = step; step = nil
        let i = input; input = nil
        let fn = f; f = nil
        let o = output; output = nil
        guard let s, let i, let fn, let o else { return nil }
        return (s, i, fn, o)
    }

    @usableFromInline override func _run() {
        if let (s, i, f, o) = _takeAll() { s(i, f, o, true) }
    }

    @usableFromInline override func _discard() { _discarded(unless: nil) }

    /// As `_StepNode._discarded`.
    @usableFromInline override func _discarded(unless unlessOwner: AnyObject?) {
        if let (_, _, _, o) = _takeAll() { _failOnUnless(o, unlessOwner) }
    }

    @usableFromInline override func _removed(byUnless: Bool) {
        let taken = _takeAll()
        if !byUnless { _settleCompanion() } else if let (s, i, f, o) = taken { s(i, f, o, false) }
    }
}
