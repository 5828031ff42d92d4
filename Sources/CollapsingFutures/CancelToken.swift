import CCollapsingFutures
import Dispatch

/// A read-only view of a cancellation: StillCancellable, then Cancelled or Immortal.
///
/// Only the token's `CancelTokenSource` can cancel it. When the source is
/// deallocated without cancelling, the token becomes immortal and discards
/// every handler unrun, so a cycle `self -> token -> handler -> self` dies
/// with the producer.
///
/// Threading: every member may be used from any thread. Handlers of one token
/// run in registration order on the cancelling thread, except that a handler
/// registered on the main thread runs on the main queue (inline when the
/// token is cancelled on the main thread), and one registered with `on:`
/// runs on that queue. A cancellation started from inside a handler runs
/// its handlers after the current handler returns (a loop, not recursion).
public struct CancelToken: Sendable, Hashable, CustomStringConvertible {
    /// `nil` means immortal. Otherwise a `_TokenStorage` or a `Future`,
    /// whose first stored property is the C state word.
    @usableFromInline nonisolated(unsafe) let _owner: AnyObject?

    @inlinable init(_owner: AnyObject?) { self._owner = _owner }

    /// A token that is already cancelled.
    public static let cancelled = CancelToken(_owner: _TokenStorage(terminal: _wCancelled))
    /// A token that can never be cancelled; handlers are discarded at once.
    /// (Computed rather than stored: it is every `unless:` default, and a
    /// stored global would cost a lazy-initialization check per call.)
    @inlinable public static var immortal: CancelToken { CancelToken(_owner: nil) }

    @inline(__always)
    var _word: UInt {
        guard let o = _owner else { return _wImmortal }
        return cf_token_load(_tokenPtr(o))
    }

    /// The instant on the continuous clock at which a deadline this token
    /// depends on will cancel it, as Go's `ctx.Deadline()`: a deadline
    /// source's own deadline (`CancelTokenSource(cancellingAfter:)`); for
    /// `any(_:)` the earliest of its inputs' deadlines; for `all(_:)` the
    /// latest, when every input has one; nil otherwise, and once the token
    /// is immortal (no deadline will cancel it). Fixed when the token is
    /// made. A server passes what is left of it downstream:
    ///
    ///     if let deadline = token.deadline {
    ///         request.headers["grpc-timeout"] = "\(max(0, ContinuousClock.now.duration(to: deadline) / .milliseconds(1)))m"
    ///     }
    public var deadline: ContinuousClock.Instant? {
        let d: ContinuousClock.Instant
        switch _owner {
        case let storage as _DeadlineStorage: d = storage.deadline
        case let storage as _DeadlinedTokenStorage: d = storage.deadline
        default: return nil
        }
        return _word & _wImmortal != 0 ? nil : d
    }

    /// The current state. `.stillCancellable` may change at any moment.
    public var state: CancelTokenState {
        let w = _word
        if w & _wCancelled != 0 { return .cancelled }
        if w & _wImmortal != 0 { return .immortal }
        return .stillCancellable
    }

    /// Whether the token has been cancelled (final once true).
    public var isCancelled: Bool { _word & _wCancelled != 0 }

    /// Whether the token is still cancellable (volatile).
    public var canStillBeCancelled: Bool { _word & _wTerminal == 0 }

    /// `CancelToken(stillCancellable)`, `(cancelled)` or `(immortal)`.
    public var description: String {
        switch state {
        case .stillCancellable: return "CancelToken(stillCancellable)"
        case .cancelled: return "CancelToken(cancelled)"
        case .immortal: return "CancelToken(immortal)"
        }
    }

    /// Tokens are equal when they are views of the same source's token.
    public static func == (a: CancelToken, b: CancelToken) -> Bool { a._owner === b._owner }

    /// Hashes the identity of the token (consistent with `==`).
    public func hash(into h: inout Hasher) {
        h.combine(_owner.map { ObjectIdentifier($0) })
    }

    /// Runs `handler` once when the token is cancelled.
    ///
    /// - Inline (or on `queue`) if the token is already cancelled.
    /// - Never if it is or becomes immortal: the closure is released at once.
    /// - Never if `unless` is cancelled first: the registration is removed at
    ///   once, so nothing accumulates on a long-lived token. The same token as
    ///   both never runs.
    ///
    /// Threading: see the type's documentation.
    /// Cost: two allocations (the closure context and one node) on a
    /// still-cancellable token; on a cancelled one, none of ours inline and
    /// one (the node) to run on `queue`. None for the node when this
    /// thread has one to reuse: an earlier handler's, let go of on this
    /// thread by its list once it ran or was removed and its registration
    /// was dropped (a thread keeps up to 1,024 nodes of a kind).
    @inlinable @discardableResult
    public func whenCancelled(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                              _ handler: @escaping @Sendable () -> Void) -> CancelRegistration {
        // The same token as both never runs.
        guard let owner = _owner, unless._owner !== owner else { return CancelRegistration(neverRuns: true) }
        return _HandlerNode._make(handler)._register(on: owner, .user(queue: queue), unless: unless)
    }
}

extension CancelToken {
    /// Nodes currently linked in this token's handler list (live or removed,
    /// not yet unlinked); 0 once settled. Exact when no other thread is
    /// registering. For tests and the benchmark's peak-live-nodes figure.
    @_spi(Testing) public var _linkedNodeCount: Int {
        guard let o = _owner else { return 0 }
        return cf_token_debug_count(_tokenPtr(o))
    }

    /// Of `_linkedNodeCount`, the registrations still live (not removed):
    /// what the token still holds for handlers that may run.
    @_spi(Testing) public var _liveRegistrationCount: Int {
        guard let o = _owner else { return 0 }
        return cf_token_debug_count_live(_tokenPtr(o))
    }
}
