import CCollapsingFutures
import Synchronization

extension CancelToken {
    /// A token cancelled as soon as any of `tokens` is (matchFirstToCancel).
    ///
    /// Immortal as soon as it can no longer be cancelled: when every input is
    /// immortal. Its registrations on the inputs are removed once it is
    /// cancelled; until then each input that can still cancel it keeps one
    /// (holding the result's source), even if every other input is
    /// immortal. For a
    /// per-operation token that also ends with a long-lived one, prefer
    /// `CancelTokenSource(until:)`, whose registration goes with its source.
    public static func any(_ tokens: CancelToken...) -> CancelToken { any(tokens) }

    /// Array form of `any(_:)`.
    public static func any(_ tokens: [CancelToken]) -> CancelToken {
        guard let live = _stillCancellable(tokens, unlessOne: .cancelled) else { return .cancelled }
        if live.count <= 1 { return live.first ?? .immortal }
        // The handlers hold the source: when every input became immortal
        // (all handlers discarded) the source dies and the result is immortal.
        let source = CancelTokenSource(_storage: _storage(deadline: live.compactMap(\.deadline).min()))
        let result = source.token
        for t in live { t._whenCancelledInline(unless: result) { source.cancel() } }
        return result
    }

    /// A token cancelled once every one of `tokens` is (matchLastToCancel).
    ///
    /// Immortal as soon as any input is immortal; then its registrations on
    /// the other inputs are removed.
    public static func all(_ tokens: CancelToken...) -> CancelToken { all(tokens) }

    /// Array form of `all(_:)`.
    public static func all(_ tokens: [CancelToken]) -> CancelToken {
        guard let live = _stillCancellable(tokens, unlessOne: .immortal) else { return .immortal }
        if live.count <= 1 { return live.first ?? .cancelled }
        let deadlines = live.compactMap(\.deadline)
        let storage = _storage(deadline: deadlines.count == live.count ? deadlines.max() : nil)
        let result = CancelToken(_owner: storage)
        let remaining = _Countdown(live.count)
        for t in live {
            _AllNode(storage, counting: remaining)._register(on: t._owner.unsafelyUnwrapped, .libraryUntilUnlessSettles, unless: result)
        }
        return result
    }

    /// A combined token's storage: one that carries `deadline`, if any
    /// (a token without a deadline pays nothing for it).
    static func _storage(deadline: ContinuousClock.Instant?) -> _TokenStorage {
        deadline.map { _DeadlinedTokenStorage(deadline: $0) } ?? _TokenStorage(terminal: 0)
    }

    /// The distinct tokens of `tokens` that can still be cancelled, or nil
    /// when one of them is `decisive` (which decides the combined token).
    static func _stillCancellable(_ tokens: [CancelToken], unlessOne decisive: CancelTokenState) -> [CancelToken]? {
        var live: [CancelToken] = [], seen = Set<CancelToken>()
        for t in tokens {
            let state = t.state
            if state == decisive { return nil }
            if state == .stillCancellable, seen.insert(t).inserted { live.append(t) }
        }
        return live
    }
}
