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

    /// The library's wheel this timer arms on: the continuous clock's, or
    /// the suspending clock's for a `_SuspendingTimer` (its class says,
    /// so no field does).
    @inline(__always)
    final var _wheel: OpaquePointer {
        ObjectIdentifier(type(of: self)) == ObjectIdentifier(_SuspendingTimer.self) ? cf_wheel_suspending : cf_wheel_continuous
    }

    /// `_TimerClock.after` on the continuous clock.
    static func after(_ delay: Duration, _ action: @escaping @Sendable () -> Void) -> _Timer? {
        _TimerClock.continuous.after(delay, action)
    }

    /// Arms a wheel's timer.
    @inline(__always)
    init(_ ns: Int64, _ action: @escaping @Sendable () -> Void) {
        self.action = action
        assert(withUnsafeMutablePointer(to: &_c) { $0 } == _ptr, "a timer's cf_deadline must be at _wheelEntryOffset")
        // The wheel's reference, handed back by `_deadlineEvent`.
        _ = Unmanaged.passRetained(self)
        cf_deadline_arm(_wheel, _ptr, UInt64(ns))
    }

    /// A timer off the wheels (`_SleepingTimer`): not armed here.
    init(unarmed action: @escaping @Sendable () -> Void) {
        self.action = action
    }

    /// Stops the timer; the payload is released before this returns.
    /// `false` (no effect) once it has fired or was cancelled.
    @discardableResult
    func cancel() -> Bool {
        guard cf_deadline_cancel(_wheel, _ptr) != 0 else { return false }
        action = nil
        return true
    }

    /// Whether the clock has reached the deadline, whether or not the timer
    /// has fired yet (`cf_deadline_passed`): the clock's word.
    var hasPassed: Bool { cf_deadline_passed(_wheel, _ptr) != 0 }

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
final class _SuspendingTimer: _Timer, @unchecked Sendable {}

/// A timer on a clock the wheels do not read (a test's clock): a task
/// waits through the clock's own `sleep(until:)`, never earlier than the
/// deadline, and fires; `cancel()` releases the payload at once and
/// cancels the task, whose sleep then ends (a clock's sleep honours
/// cancellation), so nothing waits for the deadline. The task runs on the
/// library's thread for such timers (`_SleepExecutor`), where the firing
/// makes the transition. One word decides between the firing and a cancel.
final class _SleepingTimer<C: Clock<Duration>>: _Timer, @unchecked Sendable {
    private let fate = Atomic<Int>(0)   // 0 armed, 1 cancelled, 2 fired
    @exclusivity(unchecked) private var task: Task<Void, Never>?
    private let clock: C
    private let deadline: C.Instant

    init(until deadline: C.Instant, clock: C, _ action: @escaping @Sendable () -> Void) {
        self.clock = clock
        self.deadline = deadline
        super.init(unarmed: action)
        // The task holds this timer until its sleep ends. It runs on the
        // library's thread for them, not on Swift's cooperative pool.
        task = Task(executorPreference: _SleepExecutor.shared) { [self] in
            guard (try? await clock.sleep(until: deadline, tolerance: nil)) != nil else { return }
            // Acquiring-releasing: the winner sees the payload as armed.
            guard fate.compareExchange(expected: 0, desired: 2, ordering: .acquiringAndReleasing).exchanged else { return }
            fire()
            // What the transition handed to the firing pool: one group.
            cf_firing_end_group()
            cf_firing_publish()
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

/// The clock a timer runs on, with its type erased: one of the library's
/// wheels, or any other clock. A timed API takes a generic clock and hands
/// its work, with this, to code generic over its value alone: a closure
/// made where a clock's type is generic carries that type's metadata in a
/// context of its own, one allocation per closure and call.
@usableFromInline
struct _TimerClock: Sendable {
    /// The wheel of a `ContinuousClock` or a `SuspendingClock` (unless
    /// `sleeping` is set).
    let wheel: cf_clock
    /// Any other clock: makes a timer that waits through the clock's own
    /// `sleep(until:)`. A closure, so that copying a wheel's `_TimerClock`
    /// (nil here) costs nothing.
    let sleeping: (@Sendable (_ delay: Duration, _ action: @escaping @Sendable () -> Void) -> _Timer)?

    static let continuous = _TimerClock(wheel: CF_CLOCK_CONTINUOUS, sleeping: nil)

    private init(wheel: cf_clock, sleeping: (@Sendable (Duration, @escaping @Sendable () -> Void) -> _Timer)?) {
        self.wheel = wheel
        self.sleeping = sleeping
    }

    @usableFromInline init<C: Clock<Duration>>(_ clock: C) {
        if C.self == ContinuousClock.self {
            self.init(wheel: CF_CLOCK_CONTINUOUS, sleeping: nil)
        } else if C.self == SuspendingClock.self {
            self.init(wheel: CF_CLOCK_SUSPENDING, sleeping: nil)
        } else {
            self.init(wheel: CF_CLOCK_CONTINUOUS) { delay, action in
                _SleepingTimer(until: clock.now.advanced(by: delay), clock: clock, action)
            }
        }
    }

    /// A timer that runs `action` once `delay` has passed on this clock,
    /// or `nil` when `delay` is 100 years or more (`_Delay.neverSeconds`:
    /// it would never fire; the caller treats that as "never", and holds
    /// nothing for it). On a wheel's clock it is a deadline on that wheel;
    /// on any other clock it waits through the clock's own
    /// `sleep(until:)` (`_SleepingTimer`).
    @inline(__always)
    func after(_ delay: Duration, _ action: @escaping @Sendable () -> Void) -> _Timer? {
        guard let ns = _Delay.nanoseconds(delay) else { return nil }
        if let sleeping { return sleeping(delay, action) }
        return wheel == CF_CLOCK_SUSPENDING ? _SuspendingTimer(ns, action) : _Timer(ns, action)
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
