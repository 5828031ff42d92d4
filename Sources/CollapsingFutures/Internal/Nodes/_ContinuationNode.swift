import CCollapsingFutures
import Dispatch

/// A continuation registered on a future's completion token, as a body
/// closure: the plain `catch` and `finally`, `catchDo`, `finallyDo`,
/// `unless(_:)` and the library's combinators. (`then`, the collapsing
/// `then`, `catch` and `finally`, and `thenDo` use `_StepNode`,
/// `_FlatStepNode` and `_SinkNode`, which save the body's closure context.)
///
/// Its body is a closure built by the (inlinable) public method, so it is
/// compiled specialized for the caller's types: running it touches no generic
/// metadata. Such a step costs two allocations, the output future and the
/// body's context (plus the caller's closure context, if its closure
/// captures anything), and a node, kept for reuse on the thread where it
/// ends, as every step node is. A step node saves the context only where
/// the node can hold the user's function in a field of the public
/// parameter's own shape, so each shape needs a node class of its own
/// (the plain `catch`'s `(any Error) -> Value` and `finally`'s
/// `(Future<Value>) -> U` have none; the collapsing forms store theirs in
/// `_FlatStepNode` behind a reabstraction thunk, one allocation, the one
/// the body's context took).
@usableFromInline
final class _ContinuationNode: _Node, @unchecked Sendable {
    /// Runs once the source completed (`unless` first fails `output` here,
    /// with `CancellationError`, without the body).
    @exclusivity(unchecked) @usableFromInline var body: (() -> Void)?
    /// The output future (made immortal if the source is), or nil for `Do` forms.
    @exclusivity(unchecked) @usableFromInline var output: (any _ContinuationOutput)?

    @inlinable @inline(__always) override init() { super.init() }

    /// A node for `body`: a kept one if this thread has one.
    @inlinable @inline(__always)
    static func _make(output: (any _ContinuationOutput)?, _ body: @escaping () -> Void) -> _ContinuationNode {
        let n = _reused(as: _ContinuationNode.self) ?? _ContinuationNode()
        n.body = body
        n.output = output
        return n
    }

    @usableFromInline override func _run() {
        let b = body
        body = nil; output = nil
        b?()
    }

    @usableFromInline override func _discard() { _discarded(unless: nil) }

    /// The source became immortal: the body never runs, and is released
    /// now. The output fails with `CancellationError` if the `unless` token
    /// is cancelled later (it was cancelled first), and becomes immortal if
    /// it cannot be.
    @usableFromInline override func _discarded(unless unlessOwner: AnyObject?) {
        let o = output, live = body != nil
        body = nil; output = nil
        if let o, live { _failOnUnless(o, unlessOwner) }
    }

    @usableFromInline override func _removed(byUnless: Bool) {
        let o = output
        body = nil; output = nil
        if byUnless { o?._failCancelled() }
    }

    /// Its fields are nil: running, discarding and removing each take them.
    @usableFromInline override func _keep() -> Bool { _keepCleared() }
}
