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
class _DeadlineStorage: _TokenStorage, @unchecked Sendable {
    /// Must stay this class's only stored property, right after the
    /// token: the wheel's view, `_wheelEntryOffset` into the object.
    private final var _entry = cf_deadline()

    private final var entry: UnsafeMutablePointer<cf_deadline> { _wheelEntry(of: self) }

    /// The library's wheel this deadline is on: the continuous clock's, or
    /// the suspending clock's for a `_SuspendingDeadlineStorage` (its class
    /// says, so no field does).
    @inline(__always)
    final var _wheel: OpaquePointer {
        ObjectIdentifier(type(of: self)) == ObjectIdentifier(_SuspendingDeadlineStorage.self)
            ? cf_wheel_suspending : cf_wheel_continuous
    }

    /// A still-cancellable token whose deadline is `ns` from now.
    @inline(__always)
    init(cancellingAfter ns: Int64) {
        super.init(terminal: 0)
        assert(withUnsafeMutablePointer(to: &_entry) { $0 } == entry, "a deadline's cf_deadline must be at _wheelEntryOffset")
        // The wheel's reference, handed back by `_deadlineEvent`.
        _ = Unmanaged.passRetained(self)
        cf_deadline_arm(_wheel, entry, UInt64(ns))
    }

    /// Stops the deadline: true if this call did, false once it has fired
    /// (the token cancelled, or about to be) or was stopped.
    @discardableResult
    @inline(__always)
    final func cancelDeadline() -> Bool { cf_deadline_cancel(_wheel, entry) != 0 }

    /// Whether the clock has reached the deadline, whether or not the
    /// driver has fired it yet (`cf_deadline_passed`).
    @inline(__always)
    final var deadlinePassed: Bool { cf_deadline_passed(_wheel, entry) != 0 }

    /// The instant the deadline cancels the token, on the continuous
    /// clock: the same for every read (`_continuousReference`).
    var deadline: ContinuousClock.Instant {
        let ns = cf_deadline_clock_ns(_wheel, entry)
        let reference = _continuousReference
        return reference.instant.advanced(by: .nanoseconds(Int64(bitPattern: ns &- reference.ns)))
    }

    /// The deadline as a reading of its wheel's clock (tests: which OS
    /// clock the wheel reads).
    final var dueClockNanoseconds: UInt64 { cf_deadline_clock_ns(_wheel, entry) }

    /// The wheel's tick the deadline is due at (tests: the order of firings).
    final var dueTick: UInt64 { cf_deadline_tick(entry) }
}

/// A deadline source's storage on the suspending clock's wheel. Its
/// deadline on the continuous clock is fixed when it is made: the two
/// clocks part whenever the machine is suspended.
final class _SuspendingDeadlineStorage: _DeadlineStorage, @unchecked Sendable {
    private let _deadline: ContinuousClock.Instant

    override init(cancellingAfter ns: Int64) {
        _deadline = .now.advanced(by: .nanoseconds(ns))
        super.init(cancellingAfter: ns)
    }

    override var deadline: ContinuousClock.Instant { _deadline }
}

/// The storage of a token with a deadline that is not a wheel's entry: a
/// deadline source on another clock, or `CancelToken.any` or `all` of
/// tokens with deadlines (`CancelToken.deadline`).
final class _DeadlinedTokenStorage: _TokenStorage, @unchecked Sendable {
    let deadline: ContinuousClock.Instant

    init(deadline: ContinuousClock.Instant) {
        self.deadline = deadline
        super.init(terminal: 0)
    }
}

/// A continuous clock's instant and the same moment as the OS clock reads
/// it (cf_clock_now_ns), taken once per process: what turns a wheel's
/// deadline into a `ContinuousClock.Instant`, the same one for every read.
let _continuousReference: (instant: ContinuousClock.Instant, ns: UInt64) =
    (ContinuousClock.now, cf_clock_now_ns(CF_CLOCK_CONTINUOUS))
