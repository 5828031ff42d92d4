/// A continuation's output, seen from code that does not know its `Value`
/// (nodes store outputs as `AnyObject`): `_failOnUnless` fails it with
/// `CancellationError` when its continuation can never run and its
/// `unless` token fires. Only that rare path casts to this protocol, so the
/// hot paths carry no witness table.
protocol _ContinuationOutput: AnyObject {
    func _failCancelled()
}

extension Future: _ContinuationOutput {
    func _failCancelled() { _trySet(.failure(CancellationError())) }
}
