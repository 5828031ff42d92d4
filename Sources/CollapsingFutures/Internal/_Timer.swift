import CCollapsingFutures
import Synchronization

/// A one-shot timer: a deadline on the library's timing wheel for its
/// clock (cf_wheel.h; `_SleepingTimer` for other clocks), whose payload is
/// released the moment it is cancelled (not when the deadline passes).
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
class _Timer: @unchecked Sendable {
    @exclusivity(unchecked) final var action: (@Sendable () -> Void)?
    /// Must follow `action` (two words): the wheel's view of this timer,
    /// `_wheelEntryOffset` into the object, as in a deadline source's
    /// storage (`_DeadlineStorage`).
    private final var _c = cf_deadline()

    final var _ptr: UnsafeMutablePointer<cf_deadline> { _wheelEntry(of: self) }

    /// The library's wheel this class arms on: the continuous clock's
    /// (`_SuspendingTimer`: the suspending clock's).
    class var _clock: cf_clock { CF_CLOCK_CONTINUOUS }

    /// A timer that runs `action` once `delay` has passed on `clock`, or
    /// `nil` when `delay` is 100 years or more (`_Delay.neverSeconds`: it
    /// would never fire; the caller treats that as "never", and holds
    /// nothing for it). A `ContinuousClock` or a `SuspendingClock` timer
    /// is a deadline on the library's wheel for that clock; on any other
    /// clock it waits through the clock's own `sleep(until:)`
    /// (`_SleepingTimer`).
    static func after<C: Clock<Duration>>(_ delay: Duration, clock: C,
                                          _ action: @escaping @Sendable () -> Void) -> _Timer? {
        guard let ns = _Delay.nanoseconds(delay) else { return nil }
        if C.self == ContinuousClock.self { return _Timer(ns, action) }
        if C.self == SuspendingClock.self { return _SuspendingTimer(ns, action) }
        return _SleepingTimer(until: clock.now.advanced(by: delay), clock: clock, action)
    }

    /// `after(_:clock:_:)` on the continuous clock.
    static func after(_ delay: Duration, _ action: @escaping @Sendable () -> Void) -> _Timer? {
        after(delay, clock: ContinuousClock(), action)
    }

    /// Arms a wheel's timer.
    init(_ ns: Int64, _ action: @escaping @Sendable () -> Void) {
        self.action = action
        assert(withUnsafeMutablePointer(to: &_c) { $0 } == _ptr, "a timer's cf_deadline must be at _wheelEntryOffset")
        // The wheel's reference, handed back by `_deadlineEvent`.
        _ = Unmanaged.passRetained(self)
        cf_deadline_arm(cf_wheel_shared(Self._clock), _ptr, UInt64(ns))
    }

    /// A timer off the wheels (`_SleepingTimer`): not armed here.
    init(unarmed action: @escaping @Sendable () -> Void) {
        self.action = action
    }

    /// Stops the timer; the payload is released before this returns.
    /// `false` (no effect) once it has fired or was cancelled.
    @discardableResult
    func cancel() -> Bool {
        guard cf_deadline_cancel(cf_wheel_shared(Self._clock), _ptr) != 0 else { return false }
        action = nil
        return true
    }

    /// Whether the clock has reached the deadline, whether or not the timer
    /// has fired yet (`cf_deadline_passed`): the clock's word.
    var hasPassed: Bool { cf_deadline_passed(cf_wheel_shared(Self._clock), _ptr) != 0 }

    /// The timer won: its payload makes the transition here (for a wheel's
    /// timer, on the driver's thread). Releasing it runs no user code: a
    /// source it held that dies makes its future immortal, which discards
    /// handlers unrun.
    final func fire() {
        let a = action
        action = nil
        a?()
    }
}

/// A timer on the suspending clock's wheel.
final class _SuspendingTimer: _Timer, @unchecked Sendable {
    override class var _clock: cf_clock { CF_CLOCK_SUSPENDING }
}

/// A timer on a clock the wheels do not read (a test's clock): a task
/// waits through the clock's own `sleep(until:)`, never earlier than the
/// deadline, and fires; `cancel()` releases the payload at once and
/// cancels the task, whose sleep then ends (a clock's sleep honours
/// cancellation), so nothing waits for the deadline. The firing runs on
/// the task's thread. One word decides between the firing and a cancel.
final class _SleepingTimer<C: Clock<Duration>>: _Timer, @unchecked Sendable {
    private let fate = Atomic<Int>(0)   // 0 armed, 1 cancelled, 2 fired
    @exclusivity(unchecked) private var task: Task<Void, Never>?
    private let clock: C
    private let deadline: C.Instant

    init(until deadline: C.Instant, clock: C, _ action: @escaping @Sendable () -> Void) {
        self.clock = clock
        self.deadline = deadline
        super.init(unarmed: action)
        // The task holds this timer until its sleep ends.
        task = Task { [self] in
            guard (try? await clock.sleep(until: deadline, tolerance: nil)) != nil else { return }
            // Acquiring-releasing: the winner sees the payload as armed.
            guard fate.compareExchange(expected: 0, desired: 2, ordering: .acquiringAndReleasing).exchanged else { return }
            fire()
        }
    }

    override var hasPassed: Bool { clock.now >= deadline }

    override func cancel() -> Bool {
        guard fate.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged else { return false }
        action = nil
        task?.cancel()
        return true
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
    let kind = ObjectIdentifier(type(of: owner))
    if kind == ObjectIdentifier(_DeadlineStorage.self) || kind == ObjectIdentifier(_SuspendingDeadlineStorage.self) {
        unsafeDowncast(owner, to: _DeadlineStorage.self).settle(_wCancelled)
    } else {
        unsafeDowncast(owner, to: _Timer.self).fire()
    }
}
