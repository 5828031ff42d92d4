import Synchronization

/// The results of one `orderedByCompletion`, filled in completion order.
/// Held by the registrations that can still fill them; when it dies, the
/// results nobody can fill any more become immortal.
final class _Ordered<V: Sendable>: Sendable {
    let outs: [Future<V>]
    private let next = Atomic<Int>(0)

    init(_ n: Int) { outs = (0..<n).map { _ in Future<V>() } }

    deinit { for o in outs { o._tryImmortalize() } }

    /// The next input to complete fills the next result.
    func fill(_ r: Result<V, any Error>) {
        let i = next.add(1, ordering: .relaxed).oldValue
        if i < outs.count { outs[i]._trySet(r) }
    }

    /// `unless` was cancelled: every result not yet completed fails.
    func cancelRest() {
        for o in outs { o._trySet(.failure(CancellationError())) }
    }
}
