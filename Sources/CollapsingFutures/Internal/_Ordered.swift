import Synchronization

/// The results of one `orderedByCompletion`, filled in completion order.
/// Held by the registrations that can still fill them; when it dies, the
/// results nobody can fill any more become immortal.
///
/// Result `i` belongs to whoever claims index `i` from `next`: the input
/// that completes `i`-th, or `cancelRest` for every index not claimed yet.
/// The claimer takes it out of its slot, so a result already filled is not
/// kept here (with its value) while a registration on a long-lived `unless`
/// still holds this for the others. Each slot is touched by one thread,
/// then by `deinit` (the last reference gone): no lock.
final class _Ordered<V: Sendable>: @unchecked Sendable {
    private let slots: UnsafeMutableBufferPointer<Future<V>?>
    private let next = Atomic<Int>(0)

    init(_ outs: [Future<V>]) {
        slots = .allocate(capacity: outs.count)
        _ = slots.initialize(from: outs.lazy.map { Optional($0) })
    }

    deinit {
        for case let o? in slots { o._tryImmortalize() }
        _ = slots.deinitialize()
        slots.deallocate()
    }

    /// The next input to complete fills the next result. (Relaxed: the
    /// slots were written before any registration published this object,
    /// and the count only hands out indices.)
    func fill(_ r: Result<V, any Error>) {
        let i = next.add(1, ordering: .relaxed).oldValue
        if i < slots.count { slots[i].take()!._trySet(r) }
    }

    /// `unless` was cancelled: every result not yet claimed fails (a result
    /// whose input has just claimed it is that input's). (Relaxed, as in
    /// `fill`: the claims' order on `next` is all that matters.)
    func cancelRest() {
        let first = next.add(slots.count, ordering: .relaxed).oldValue
        for i in min(first, slots.count)..<slots.count {
            slots[i].take()!._failCancelled()
        }
    }
}
