import Synchronization

/// Why an unless-style `withTimeout` stopped its operation, and whether the
/// operation's future became immortal: whichever of "stopped" and "gone"
/// comes second completes the result (one atomic word, no lock). Once the
/// operation has answered ("finished"), nothing stops it any more. Held
/// inline by the timeout (`_UnlessTimeout`).
struct _TimeoutStop: ~Copyable, Sendable {
    enum Reason: Int { case timeout = 1, unless = 2 }
    private static let gone = 4
    private static let finished = 8
    private let word = Atomic<Int>(0)

    /// Records the first reason. Returns nil if one was already recorded or
    /// the operation has finished (a timer that fired as it answered, its
    /// payload already queued, must not cancel the token of an operation
    /// whose answer is being delivered), else whether the operation's
    /// future was already gone.
    func stop(_ reason: Reason) -> Bool? {
        var old = word.load(ordering: .acquiring)
        while true {
            if old & (3 | _TimeoutStop.finished) != 0 { return nil }
            let (done, seen) = word.compareExchange(expected: old, desired: old | reason.rawValue,
                                                    ordering: .acquiringAndReleasing)
            if done { return old & _TimeoutStop.gone != 0 }
            old = seen
        }
    }

    /// Records that the operation's future became immortal; returns the
    /// reason already recorded, if any.
    func operationGone() -> Reason? {
        Reason(rawValue: word.bitwiseOr(_TimeoutStop.gone, ordering: .acquiringAndReleasing).oldValue & 3)
    }

    /// Records that the operation's future completed; returns the reason
    /// recorded before, if any (one read-modify-write: a stop either came
    /// first and is returned, or comes after and does nothing). A stop
    /// returned here may not have cancelled the token yet: the caller
    /// cancels it before publishing the answer. (Acquire-release like the
    /// other operations on the word, though it publishes no data: only the
    /// order of the marks in the word's one modification order matters.)
    func finish() -> Reason? {
        Reason(rawValue: word.bitwiseOr(_TimeoutStop.finished, ordering: .acquiringAndReleasing).oldValue & 3)
    }
}
