import CollapsingFutures

/// A chain built outwards: `levels` new sources, each one's future set to
/// the previous level's, the first to `inner`. `each` sees every level:
/// its index, its source, and whether the set took. Returns the outermost
/// future.
func chainBuiltOutwards(onto inner: Future<Int>, levels: Int,
                        _ each: (_ level: Int, _ source: FutureSource<Int>, _ set: Bool) -> Void = { _, _, _ in })
    -> Future<Int> {
    var outer = inner
    for level in 0..<levels {
        let s = FutureSource<Int>()
        each(level, s, s.trySetResult(outer))
        outer = s.future
    }
    return outer
}
