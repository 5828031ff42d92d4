import CCollapsingFutures
import Dispatch

/// A continuation registered on a future's completion token.
///
/// Its body is a closure built by the (inlinable) public method, so it is
/// compiled specialized for the caller's types: running it touches no generic
/// metadata. A `then` step costs three allocations: the output future, this
/// node and the body's context (plus the caller's closure context, if its
/// closure captures anything); on a future that already completed there is
/// no node (`_meet` says run now). Removing the context would need the
/// user's function stored in the node without its type (a generic node's
/// field is stored at maximal abstraction, which costs a reabstraction
/// thunk allocation instead).
@usableFromInline
final class _ContinuationNode: _Node, @unchecked Sendable {
    /// `body(true)`: the source completed; `body(false)`: `unless` fired first.
    @exclusivity(unchecked) @usableFromInline var body: ((Bool) -> Void)?
    /// The output future (made immortal if the source is), or nil for `Do` forms.
    @exclusivity(unchecked) @usableFromInline var output: AnyObject?

    @inlinable init(output: AnyObject?, _ body: @escaping (Bool) -> Void) {
        self.body = body
        self.output = output
        super.init()
    }

    @usableFromInline override func _run() {
        let b = body
        body = nil; output = nil
        b?(true)
    }

    @usableFromInline override func _discard() { _discarded(unless: nil) }

    /// The source became immortal: the body never runs, and is released
    /// now. The output fails with `CancellationError` if the `unless` token
    /// is cancelled later (it was cancelled first), and becomes immortal if
    /// it cannot be.
    @usableFromInline override func _discarded(unless unlessOwner: AnyObject?) {
        let o = output, b = body
        body = nil; output = nil
        if let o, b != nil { _failOnUnless(o, unlessOwner) }
    }

    @usableFromInline override func _removed(byUnless: Bool) {
        let b = body
        body = nil; output = nil
        if byUnless { b?(false) } else { _settleCompanion() }
    }
}
