import Dispatch

/// A one-shot Dispatch timer whose payload is released the moment it is
/// cancelled (not when the deadline passes).
///
/// Timers only complete futures: the payload runs on a serial queue of its
/// own, never on the shared timer queue nor on a global queue. So a slow
/// continuation of one timer's future delays no other timer, and a global
/// pool saturated by blocking work (it is as wide as the machine has cores)
/// delays none: a serial queue runs on Dispatch's overcommitting pool,
/// which starts a thread when none is free.
final class _Timer: @unchecked Sendable {  // DispatchSourceTimer is thread-safe
    private let source: any DispatchSourceTimer
    private let action: _Locked<(@Sendable () -> Void)?>

    /// A timer that runs `action` after `delay`, or `nil` when `delay` is
    /// longer than `_Delay.never` (it would never fire: the caller treats
    /// that as "never", and holds nothing for it).
    static func after(_ delay: Duration, _ action: @escaping @Sendable () -> Void) -> _Timer? {
        guard let ns = _Delay.nanoseconds(delay) else { return nil }
        return _Timer(ns, action)
    }

    private init(_ ns: Int64, _ action: @escaping @Sendable () -> Void) {
        self.action = _Locked(action)
        // A private serial queue (overcommitting): timers fire on time even
        // while the global pool is saturated by blocking work.
        source = DispatchSource.makeTimerSource(queue: _timerQueue)
        source.schedule(deadline: .now() + .nanoseconds(Int(ns)), leeway: .nanoseconds(0))
        // The handler keeps the timer alive until it fires or is cancelled
        // (a cycle that both of those break).
        source.setEventHandler { self.fire() }
        source.activate()
    }

    /// The payload, taken out under the lock (and released by the caller
    /// after it: its release can run deinit cascades — a source dying makes
    /// its future immortal, running user code — which must not run under
    /// our mutex).
    private func takeAction() -> (@Sendable () -> Void)? {
        action.withLock { a in defer { a = nil }; return a }
    }

    private func fire() {
        let a = takeAction()
        source.setEventHandler(handler: nil)
        source.cancel()
        // One queue per firing: cheaper than a queue per timer (most are
        // cancelled before they fire), and a block keeps its queue alive.
        if let a { DispatchQueue(label: "CollapsingFutures.timer-payload").async(execute: a) }
    }

    /// Stops the timer; the payload is released before this returns.
    func cancel() {
        _ = takeAction()  // released here, after the lock
        source.setEventHandler(handler: nil)
        source.cancel()
    }
}

/// Where timers fire (and only hand their payload to a queue of its own).
let _timerQueue = DispatchQueue(label: "CollapsingFutures.timers")
