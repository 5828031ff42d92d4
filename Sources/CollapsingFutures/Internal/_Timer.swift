import CCollapsingFutures

/// A one-shot timer: a deadline on the core's timing wheel (cf_wheel.h),
/// whose payload is released the moment it is cancelled (not when the
/// deadline passes).
///
/// The object is the wheel's entry: it holds the C `cf_deadline` at
/// `_wheelEntryOffset`, where the callback finds it from the entry. The
/// wheel holds one reference from arming until it hands the entry back
/// (`_deadlineEvent`); whoever wins the entry's CAS out of ARMED — `cancel()`
/// or the wheel's driver — owns `action` from then on, which is why the
/// field needs no lock.
///
/// Timers only complete futures and cancel tokens: the payload is that
/// transition, and runs on the driver's thread, in the wheel's firing
/// order. It runs no user code there: what the transition would run on
/// the cancelling thread goes to the firing pool (`_RunPolicy.hop`,
/// cf_firing_pool.h), so a blocked handler delays no timer, and nothing on
/// Dispatch's or Swift's pools can delay one either.
final class _Timer: @unchecked Sendable {
    @exclusivity(unchecked) private var action: (@Sendable () -> Void)?
    /// Must follow `action` (two words): the wheel's view of this timer,
    /// `_wheelEntryOffset` into the object, as in a deadline source's
    /// storage (`_DeadlineStorage`).
    private var _c = cf_deadline()

    private var _ptr: UnsafeMutablePointer<cf_deadline> { _wheelEntry(of: self) }

    /// A timer that runs `action` after `delay`, or `nil` when `delay` is
    /// 100 years or more (`_Delay.neverSeconds`: it would never fire; the
    /// caller treats that as "never", and holds nothing for it).
    static func after(_ delay: Duration, _ action: @escaping @Sendable () -> Void) -> _Timer? {
        guard let ns = _Delay.nanoseconds(delay) else { return nil }
        return _Timer(ns, action)
    }

    private init(_ ns: Int64, _ action: @escaping @Sendable () -> Void) {
        self.action = action
        assert(withUnsafeMutablePointer(to: &_c) { $0 } == _ptr, "a timer's cf_deadline must be at _wheelEntryOffset")
        // The wheel's reference, handed back by `_deadlineEvent`.
        _ = Unmanaged.passRetained(self)
        cf_deadline_arm(cf_wheel_shared(), _ptr, UInt64(ns))
    }

    /// Stops the timer; the payload is released before this returns.
    /// `false` (no effect) once it has fired or was cancelled.
    @discardableResult
    func cancel() -> Bool {
        guard cf_deadline_cancel(cf_wheel_shared(), _ptr) != 0 else { return false }
        action = nil
        return true
    }

    /// The wheel's driver won this timer: its payload makes the transition
    /// here, on the driver's thread. Releasing it runs no user code: a
    /// source it held that dies makes its future immortal, which discards
    /// handlers unrun.
    fileprivate func fire() {
        let a = action
        action = nil
        a?()
    }
}

/// Where an entry's `cf_deadline` lies in its owner, a `_Timer` or a
/// `_DeadlineStorage`: after the object header and two words (a timer's
/// payload, a storage's `cf_token`). Both check it in `init` (debug builds).
@inline(__always)
var _wheelEntryOffset: Int { _nodeOffset + MemoryLayout<cf_token>.stride }

@inline(__always)
func _wheelEntry(of owner: AnyObject) -> UnsafeMutablePointer<cf_deadline> {
    (UnsafeMutableRawPointer(Unmanaged.passUnretained(owner).toOpaque()) + _wheelEntryOffset)
        .assumingMemoryBound(to: cf_deadline.self)
}

/// The wheel's callback for every entry (cf_wheel.h): takes back the
/// wheel's reference, and makes the transition when the entry fired: a
/// deadline source's storage cancels its token, a timer runs its payload.
/// Runs on the driver's thread.
@_cdecl("cf_swift_deadline_event")
func _deadlineEvent(_ d: UnsafeMutablePointer<cf_deadline>, _ event: Int32) {
    let owner = Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(d) - _wheelEntryOffset).takeRetainedValue()
    guard event == CF_DL_FIRE.rawValue else { return }
    if ObjectIdentifier(type(of: owner)) == ObjectIdentifier(_DeadlineStorage.self) {
        unsafeDowncast(owner, to: _DeadlineStorage.self).settle(_wCancelled)
    } else {
        unsafeDowncast(owner, to: _Timer.self).fire()
    }
}
