import CCollapsingFutures

/// Owns a plain token's state word (a `CancelTokenSource`'s token).
@usableFromInline
class _TokenStorage: @unchecked Sendable {
    /// Must stay the first stored property.
    private var _c: cf_token

    init(terminal: UInt) {
        _c = cf_token()
        cf_token_init(_ownTokenPtr(self), terminal)
    }

    /// A source's token is never linked: its own.
    @inline(__always) final var ptr: UnsafeMutablePointer<cf_token> { _ownTokenPtr(self) }

    /// A source settles its token before it goes; one nobody can cancel any
    /// more (the result of `CancelToken.all` whose nodes are all gone) is
    /// settled here.
    deinit { _settleAbandoned(ptr, word: cf_token_load(ptr)) }

    @discardableResult
    final func settle(_ terminal: UInt) -> Bool { cf_token_settle(ptr, terminal) != 0 }
}

/// A deadline source's token storage, which is also its entry on the
/// timing wheel (cf_wheel.h): one object for the token and the deadline
/// that cancels it. The wheel holds one reference from arming until it
/// hands the entry back (`_deadlineEvent`), which cancels the token when
/// the deadline fired; the entry has no payload, so a cancel releases
/// nothing.
final class _DeadlineStorage: _TokenStorage, @unchecked Sendable {
    /// Must stay this class's only stored property, right after the
    /// token: the wheel's view, `_wheelEntryOffset` into the object.
    private var _entry = cf_deadline()

    private var entry: UnsafeMutablePointer<cf_deadline> { _wheelEntry(of: self) }

    /// A still-cancellable token whose deadline is `ns` from now.
    init(cancellingAfter ns: Int64) {
        super.init(terminal: 0)
        assert(withUnsafeMutablePointer(to: &_entry) { $0 } == entry, "a deadline's cf_deadline must be at _wheelEntryOffset")
        // The wheel's reference, handed back by `_deadlineEvent`.
        _ = Unmanaged.passRetained(self)
        cf_deadline_arm(cf_wheel_shared(), entry, UInt64(ns))
    }

    /// Stops the deadline: true if this call did, false once it has fired
    /// (the token cancelled, or about to be) or was stopped.
    @discardableResult
    func cancelDeadline() -> Bool { cf_deadline_cancel(cf_wheel_shared(), entry) != 0 }

    /// Whether the clock has reached the deadline, whether or not the
    /// driver has fired it yet (`cf_deadline_passed`).
    var deadlinePassed: Bool { cf_deadline_passed(cf_wheel_shared(), entry) != 0 }

    /// The wheel's tick the deadline is due at (tests: the order of firings).
    var dueTick: UInt64 { cf_deadline_tick(entry) }
}
