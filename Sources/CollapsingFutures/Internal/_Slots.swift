/// Fixed slots filled once each from any thread; the filler of the last
/// slot reads them all. O(n), no lock.
final class _Slots<T>: @unchecked Sendable {
    private let buffer: UnsafeMutableBufferPointer<T?>
    private let remaining: _Countdown
    init(_ n: Int) {
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
    func fill(_ i: Int, _ v: T) -> Bool {
        buffer[i] = v
        return remaining.tick()
    }
    func values() -> [T] { buffer.map { $0! } }
}
