import CCollapsingFutures

/// A one-shot timer: a deadline on the core's timing wheel (cf_wheel.h),
/// whose payload is released the moment it is cancelled (not when the
/// deadline passes).
///
/// The object is the wheel's entry: its first stored property is the C
/// `cf_deadline`, found from the entry as a node is (`_nodeOffset`). The
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
    /// Must stay the first stored property: the wheel's view of this timer.
    private var _c = cf_deadline()
    @exclusivity(unchecked) private var action: (@Sendable () -> Void)?

    private var _ptr: UnsafeMutablePointer<cf_deadline> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: cf_deadline.self)
    }

    /// A timer that runs `action` after `delay`, or `nil` when `delay` is
    /// 100 years or more (`_Delay.neverSeconds`: it would never fire; the
    /// caller treats that as "never", and holds nothing for it).
    static func after(_ delay: Duration, _ action: @escaping @Sendable () -> Void) -> _Timer? {
        guard let ns = _Delay.nanoseconds(delay) else { return nil }
        return _Timer(ns, action)
    }

    private init(_ ns: Int64, _ action: @escaping @Sendable () -> Void) {
        self.action = action
        assert(UnsafeRawPointer(_ptr) - _nodeOffset == UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()),
               "a timer's cf_deadline must be its first stored property")
        // The wheel's reference, handed back by `_deadlineEvent`.
        _ = Unmanaged.passRetained(self)
        cf_deadline_arm(_ptr, UInt64(ns))
    }

    /// Stops the timer; the payload is released before this returns.
    /// `false` (no effect) once it has fired or was cancelled.
    @discardableResult
    func cancel() -> Bool {
        guard cf_deadline_cancel(_ptr) != 0 else { return false }
        action = nil
        return true
    }

    /// The wheel's tick this timer is due at (tests: the order of firings).
    var dueTick: UInt64 { cf_deadline_tick(_ptr) }

    /// Whether the clock has reached this timer's deadline, whether or not
    /// the driver has fired it yet (`cf_deadline_passed`).
    var hasPassed: Bool { cf_deadline_passed(_ptr) != 0 }

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

/// The wheel's callback for every entry (cf_wheel.h): takes back the
/// wheel's reference, and hands the payload on when the entry fired. Runs
/// on the driver's thread.
@_cdecl("cf_swift_deadline_event")
func _deadlineEvent(_ d: UnsafeMutablePointer<cf_deadline>, _ event: Int32) {
    let timer = Unmanaged<_Timer>.fromOpaque(UnsafeRawPointer(d) - _nodeOffset).takeRetainedValue()
    if event == CF_DL_FIRE.rawValue { timer.fire() }
}
