import CCollapsingFutures
import Dispatch

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
/// Timers only complete futures and cancel tokens: the payload runs on a
/// serial queue of its own, never on the driver's thread nor on a global
/// queue. So a slow continuation of one timer's future delays no other
/// timer, and a global pool saturated by blocking work (it is as wide as
/// the machine has cores) delays none: a serial queue runs on Dispatch's
/// overcommitting pool, which starts a thread when none is free.
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

    /// The wheel's driver won this timer: the payload goes to a queue of
    /// its own (one per firing: cheaper than one per timer, as most are
    /// cancelled before they fire, and a block keeps its queue alive). The
    /// block takes the payload out there, so it is released there too,
    /// never on the driver's thread (its release can run deinits: a source
    /// dying makes its future immortal, running user code).
    fileprivate func fire() {
        DispatchQueue(label: "CollapsingFutures.timer-payload").async { [self] in
            let a = action
            action = nil
            a?()
        }
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
