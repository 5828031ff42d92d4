import CCollapsingFutures
import Dispatch

/// A continuation registered on a future's completion token, as a body
/// closure: `catchDo`, `finallyDo`, `unless(_:)` and the library's
/// combinators. (`then`, `catch` and `finally` are their output futures,
/// `_StepFuture`, and `thenDo` is a `_SinkNode`: both save the body's
/// closure context.)
///
/// Its body is a closure built by the (inlinable) public method, so it is
/// compiled specialized for the caller's types: running it touches no generic
/// metadata. It costs the body's context (plus the caller's closure
/// context, if its closure captures anything), and a node, kept for reuse
/// on the thread where it ends.
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
        let n = _NodePool.take(_ContinuationNode.self) ?? _ContinuationNode()
        n.body = body
        n.output = output
        return n
    }

    @usableFromInline override func _run() {
        let b = body
        body = nil; output = nil
        b?()
    }

    /// The source became immortal: the body never runs, and is released
    /// now. The output fails with `CancellationError` if the `unless` token
    /// is cancelled later (it was cancelled first), and becomes immortal if
    /// it cannot be.
    @usableFromInline override func _discard(unless unlessOwner: AnyObject?) {
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

/// A continuation's output, seen from code that does not know its `Value`
/// (`_ContinuationNode`, `_failOnUnless`): what is done to it when its
/// continuation can never run.
@usableFromInline
protocol _ContinuationOutput: AnyObject {
    /// `unless` fired: fails it with `CancellationError`.
    func _failCancelled()
    /// Nothing can fail it any more: makes it immortal.
    @discardableResult func _tryImmortalize() -> Bool
}

extension Future: _ContinuationOutput {
    @usableFromInline func _failCancelled() { _tryFail(CancellationError()) }
}
