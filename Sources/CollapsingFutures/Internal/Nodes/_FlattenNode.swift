import CCollapsingFutures

/// Registered on a flattening future's target: completes `output` (which
/// already holds its claim) with the target's result, or makes it immortal
/// when the target becomes immortal. One object, no closure context: this is
/// what each level of a flatten chain keeps alive.
@usableFromInline
final class _FlattenNode<Value: Sendable>: _Node, @unchecked Sendable {
    @exclusivity(unchecked) @usableFromInline var output: Future<Value>?
    @exclusivity(unchecked) @usableFromInline var target: Future<Value>?

    @inlinable @inline(__always) init(output: Future<Value>, target: Future<Value>) {
        self.output = output
        self.target = target
        super.init()
    }

    @usableFromInline override func _run() {
        let o = output, t = target
        output = nil; target = nil
        o?._complete(copying: t!)
    }

    @usableFromInline override func _discard(unless _: AnyObject?) {
        let o = output
        output = nil; target = nil
        _ = o?._immortalizeClaimed()
    }

    /// Never removed in practice (its registration is dropped, and it has no
    /// `unless` link); releases what it holds all the same.
    @usableFromInline override func _removed(byUnless: Bool) {
        output = nil; target = nil
    }
}
