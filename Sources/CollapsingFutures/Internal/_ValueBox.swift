/// A success value too large for a future's inline words: immutable, so a
/// flattened future shares it with its target.
@usableFromInline
final class _ValueBox<Value>: @unchecked Sendable {
    @usableFromInline let value: Value
    @inlinable init(_ value: Value) { self.value = value }
}
