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
    @usableFromInline func _failCancelled() { _trySet(.failure(CancellationError())) }
}
