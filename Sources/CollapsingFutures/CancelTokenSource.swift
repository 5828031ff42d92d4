import CCollapsingFutures

/// Creates and controls a `CancelToken`.
///
/// Only the source can cancel its token. When the source is deallocated
/// without cancelling, the token becomes immortal and discards every handler
/// unrun (or, with `cancelOnDeinit: true`, is cancelled instead).
///
/// Threading: `cancel()` and `tryCancel()` may be called from any thread;
/// exactly one call wins, and the token's handlers run on that thread.
public final class CancelTokenSource: Sendable, CustomStringConvertible {
    @usableFromInline let _storage: _TokenStorage
    let _cancelOnDeinit: Bool
    /// A deadline source (`init(cancellingAfter:)`) whose deadline may
    /// still fire: its storage is a `_DeadlineStorage`.
    let _hasDeadline: Bool
    /// A deadline source on a clock the wheels do not read: the timer
    /// that cancels its token (`_SleepingTimer`).
    let _timer: _Timer?

    /// A source whose token becomes immortal if this source dies uncancelled.
    public init() {
        _storage = _TokenStorage(terminal: 0)
        _cancelOnDeinit = false
        _hasDeadline = false
        _timer = nil
    }

    /// A source whose token is also cancelled when `token` is.
    ///
    /// Only one leaf registration is added to `token`, and it is removed as
    /// soon as this source's token is cancelled or becomes immortal, so
    /// linked sources cannot build cycles or accumulate on a long-lived token.
    public init(until token: CancelToken) {
        _storage = _TokenStorage(terminal: 0)
        _cancelOnDeinit = false
        _hasDeadline = false
        _timer = nil
        _link(to: token)
    }

    /// `cancelOnDeinit: true`: the token is cancelled, rather than made
    /// immortal, when the source is deallocated without cancelling.
    public init(cancelOnDeinit: Bool) {
        _storage = _TokenStorage(terminal: 0)
        _cancelOnDeinit = cancelOnDeinit
        _hasDeadline = false
        _timer = nil
    }

    /// A source of `storage`, whose deadline will cancel its token when it
    /// is a `_DeadlineStorage`, or `timer` when there is one.
    init(_storage storage: _TokenStorage, timer: _Timer? = nil) {
        _storage = storage
        _cancelOnDeinit = false
        _hasDeadline = storage is _DeadlineStorage
        _timer = timer
    }

    /// The storage as a deadline, for a deadline source.
    var _deadline: _DeadlineStorage? { _hasDeadline ? unsafeDowncast(_storage, to: _DeadlineStorage.self) : nil }

    deinit {
        // A deadline the clock has reached has passed, whether or not the
        // driver has fired it yet (one that fired has cancelled the token):
        // the token is cancelled, as the firing would do.
        let deadlinePassed = _deadline.map { !$0.cancelDeadline() || $0.deadlinePassed }
            ?? _timer.map { !$0.cancel() || $0.hasPassed } ?? false
        _storage.settle(_cancelOnDeinit || deadlinePassed ? _wCancelled : _wImmortal)
    }

    /// `CancelTokenSource(stillCancellable)` or `CancelTokenSource(cancelled)`.
    public var description: String { "CancelTokenSource(\(token.state))" }

    /// The token this source controls.
    @inlinable public var token: CancelToken { CancelToken(_owner: _storage) }

    /// Cancels the token (no effect if it already was). Handlers run on this
    /// thread before it returns, unless it is called from inside a handler:
    /// then they run right after that handler returns.
    public func cancel() { tryCancel() }

    /// Cancels the token. Returns `false` if it was already cancelled.
    @discardableResult
    public func tryCancel() -> Bool {
        _deadline?.cancelDeadline()
        _timer?.cancel()
        return _storage.settle(_wCancelled)
    }

    func _link(to parent: CancelToken) {
        let storage = _storage
        parent._whenCancelledInline(untilSettled: token) { storage.settle(_wCancelled) }
    }
}
