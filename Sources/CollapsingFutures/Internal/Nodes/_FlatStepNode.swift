import CCollapsingFutures

/// A collapsing step (`then`, `catch`, `finally`): `_StepNode` for a
/// function returning a future, whose shape `(A) throws -> Future<R>` needs
/// a field of its own (stored in `_StepNode`'s `(A) throws -> R` it would
/// take a reabstraction thunk, one allocation; a second optional field in
/// `_StepNode` would make every `then` step carry and clear it). A flatten
/// step saves the body closure's context.
///
/// Once it has run and `f` returned a pending future, the node registers
/// itself on that future's chain as `output`'s forwarder (what a
/// `_FlattenNode` does otherwise): one allocation less per flatten step.
/// Only when no `unless` link was ever made for it
/// (`_policy.hadUnlessLink` is false): such a link may still remove it
/// from its first token after it ran. The forwarder phase is the one with
/// `step` nil and `inputOrTarget` set.
///
/// `I` is the input's value type and `A` the function's argument: the same
/// for `then`; `any Error` for `catch` and `Future<I>` for `finally` (whose
/// `f`, stored at `A`'s generic abstraction, takes a reabstraction thunk:
/// one allocation, as a body closure's context would be). A retry loop
/// built on any collapsing step is linked level by level (`Future._link`).
@usableFromInline
final class _FlatStepNode<I: Sendable, A: Sendable, R: Sendable>: _Node, @unchecked Sendable {
    /// Runs once the input completed (`unless` first fails `output` here,
    /// with `CancellationError`, without the step). Returns the future `f` returned, for `output` to take on, as the
    /// reference `f` returned (unmanaged: handed on without a retain and
    /// release); nil when the step completed `output` itself.
    @usableFromInline typealias Step = (_ input: Future<I>, _ f: (A) throws -> Future<R>, _ output: Future<R>) -> Unmanaged<Future<R>>?

    /// The input (a `Future<I>`) in the step phase; in the forwarder phase
    /// (`step` nil) the end of the chain `output` takes on (a `Future<R>`).
    /// One field for both: a separate `target` would take 16 more bytes of
    /// heap, on every level a flatten chain keeps.
    @exclusivity(unchecked) @usableFromInline var inputOrTarget: AnyObject?
    @exclusivity(unchecked) @usableFromInline var f: ((A) throws -> Future<R>)?
    @exclusivity(unchecked) @usableFromInline var output: Future<R>?
    @exclusivity(unchecked) @usableFromInline var step: Step?

    @inlinable @inline(__always) override init() { super.init() }

    /// A node for a collapsing step: a kept one if this thread has one.
    @inlinable @inline(__always)
    static func _make(_ input: Future<I>, _ f: @escaping (A) throws -> Future<R>, _ output: Future<R>,
                      _ step: @escaping Step) -> _FlatStepNode {
        let n = _reused(as: _FlatStepNode.self) ?? _FlatStepNode()
        n.inputOrTarget = input
        n.f = f
        n.output = output
        n.step = step
        return n
    }

    /// Takes the fields with plain loads and stores (see `_StepNode`).
    @inline(__always)
    private func _takeAll() -> (Step, Future<I>, (A) throws -> Future<R>, Future<R>)? {
        let s = step; step = nil
        let i = inputOrTarget; inputOrTarget = nil
        let fn = f; f = nil
        let o = output; output = nil
        guard let s, let i, let fn, let o else { return nil }
        return (s, unsafeDowncast(i, to: Future<I>.self), fn, o)
    }

    /// The forwarder phase's fields, taken (nil in the step phase).
    @inline(__always)
    private func _takeForwarder() -> (output: Future<R>, target: Future<R>)? {
        guard step == nil, let t = inputOrTarget else { return nil }
        inputOrTarget = nil
        let o = output; output = nil
        return (o!, unsafeDowncast(t, to: Future<R>.self))
    }

    @usableFromInline override func _run() {
        if let (o, t) = _takeForwarder() {
            o._complete(copying: t)
        } else if let (s, i, f, o) = _takeAll(), let inner = s(i, f, o) {
            // The output a forwarder completes is `o`, or the root `o` is
            // linked into (`Future._link`).
            let inner = inner.takeRetainedValue()
            if !_policy.hadUnlessLink {
                _ = o._setFuture(inner) { self._becomeForwarder(output: $0, target: $1) }
            } else {
                _ = o._setFuture(inner) { _FlattenNode(output: $0, target: $1) }
            }
        }
    }

    /// Makes this node (it has run: nothing else holds or can remove it)
    /// `output`'s forwarder from `target`, ready to register afresh: a new
    /// C node, run inline (the library's bookkeeping, like `_FlattenNode`).
    @inline(__always)
    private func _becomeForwarder(output o: Future<R>, target t: Future<R>) -> _Node {
        assert(!_policy.hadUnlessLink, "only a node nothing else can remove is registered again")
        output = o
        inputOrTarget = t
        _policy = .inline
        cf_node_init(_ptr)
        return self
    }

    @usableFromInline override func _discard() { _discarded(unless: nil) }

    /// As `_StepNode._discarded`; the forwarder makes `output` immortal.
    @usableFromInline override func _discarded(unless unlessOwner: AnyObject?) {
        if let (o, _) = _takeForwarder() {
            _ = o._immortalizeClaimed()
        } else if let (_, _, _, o) = _takeAll() {
            _failOnUnless(o, unlessOwner)
        }
    }

    @usableFromInline override func _removed(byUnless: Bool) {
        if _takeForwarder() != nil { return }
        let taken = _takeAll()
        if byUnless, let (_, _, _, o) = taken { o._failCancelled() }
    }

    /// Its fields are nil: each phase's run, discard and removal take
    /// them (a node that became a forwarder is held by its new list).
    @usableFromInline override func _keep() -> Bool { _keepCleared() }
}
