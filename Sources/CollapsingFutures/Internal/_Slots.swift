/// Fixed slots filled once each from any thread; the filler of the last
/// slot reads them all. O(n), no lock.
@usableFromInline
final class _Slots<T>: @unchecked Sendable {
    @usableFromInline let buffer: UnsafeMutableBufferPointer<T?>
    @usableFromInline let remaining: _Countdown
    @inlinable init(_ n: Int) {
        buffer = .allocate(capacity: n)
        buffer.initialize(repeating: nil)
        remaining = _Countdown(n)
    }
    deinit {
        _ = buffer.deinitialize()
        buffer.deallocate()
    }
    /// Fills slot `i`; true for the call that filled the last slot (its
    /// acquire-release countdown makes every other slot's write visible).
    @inlinable func fill(_ i: Int, _ v: T) -> Bool {
        buffer[i] = v
        return remaining.tick()
    }
    @inlinable func values() -> [T] { buffer.map { $0! } }
}
