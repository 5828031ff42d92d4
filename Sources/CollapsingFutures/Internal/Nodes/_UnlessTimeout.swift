import CCollapsingFutures

/// An unless-style `Future.withTimeout` in one object: the source of its
/// output, its registration on the operation's future, the target of its
/// timer and the source of the operation's token, with the stop word that
/// orders them (`_TimeoutStop`). So a pending timed operation costs this
/// node, its output, the token's storage and the timer's entry.
///
/// Who holds it: the operation's future's list (until the node runs), the
/// timer's payload (until it fires or is cancelled, which releases it at
/// once) and the registration on `unless` (until it runs, or is removed as
/// the output settles). When the last of them lets go, nothing can complete
/// the output or cancel the token any more: `deinit` makes both immortal
/// if they are still pending, as a `FutureSource` and a `CancelTokenSource`
/// that die do.
///
/// Fields: all are written before the node is shared (the timer is armed
/// before `timer` is stored, but its payload reads neither `timer` nor
/// `operation`), and only read afterwards, so they need no lock.
///
/// Made by the caller's specialized code, output included, and its
/// methods build no `Result`: as `_FutureTimeout`, for the same reason.
@usableFromInline
final class _UnlessTimeout<Value: Sendable>: _Node, @unchecked Sendable {
    let output: Future<Value>
    /// The operation's token's storage (`token`).
    let attempt = _TokenStorage(terminal: 0)
    let timeout: Duration
    let unless: CancelToken
    let stop = _TimeoutStop()
    /// Nil when the timeout never fires (100 years or more).
    @exclusivity(unchecked) var timer: _Timer?
    /// The operation's future: set by `start`, which registers this node on it.
    @exclusivity(unchecked) var operation: Future<Value>?

    @usableFromInline init(timeout: Duration, unless: CancelToken, output: Future<Value>) {
        self.output = output
        self.timeout = timeout
        self.unless = unless
        super.init()
    }

    deinit {
        attempt.settle(_wImmortal)
        output._tryImmortalize()
    }

    /// The token the operation gets: cancelled by the timer or `unless`.
    var token: CancelToken { CancelToken(_owner: attempt) }

    /// Waits for `operation`'s answer: at once, without registering, when
    /// it is already there (a cache hit).
    func start(_ operation: Future<Value>) {
        self.operation = operation
        if operation._word & _wCancelled != 0 { return _run() }
        _register(on: operation, .whenSettled)
    }

    /// The timer fired (on the driver's thread).
    func timerFired() {
        guard let gone = stop.stop(.timeout) else { return }
        attempt.settle(_wCancelled)
        if gone { output._tryFail(TimeoutError(after: timeout)) }
    }

    /// `unless` was cancelled. The timer can do nothing any more: it goes
    /// now, with what its payload holds, rather than at a deadline that may
    /// be hours away (the output may still wait for the operation).
    func unlessCancelled() {
        guard let gone = stop.stop(.unless) else { return }
        timer?.cancel()
        attempt.settle(_wCancelled)
        if gone { output._failCancelled() }
    }

    /// The operation's future settled, or became immortal.
    override func _run() {
        let operation = operation.unsafelyUnwrapped
        guard operation._word & _wCancelled != 0 else {
            switch stop.operationGone() {
            case .timeout?: output._tryFail(TimeoutError(after: timeout))
            case .unless?: output._failCancelled()
            case nil: break   // the timer or `unless` will say
            }
            return
        }
        timer?.cancel()
        // A stop recorded first may not have cancelled the token yet:
        // cancel it here, before the answer is published (the stopper's
        // own cancel is then a no-op), so nothing cancels it after the
        // answer.
        let stoppedBy = stop.finish()
        if stoppedBy != nil { attempt.settle(_wCancelled) }
        // As the original: a cancelled operation timed out unless `unless`
        // was cancelled (only those two cancel its token), so the answer
        // does not depend on whether the timer's payload has run yet.
        // Without a timer (never), a cancel is the operation's own.
        let timedOut: Bool
        switch stoppedBy {
        case .timeout?: timedOut = true
        case .unless?: timedOut = false
        case nil: timedOut = timer != nil && !unless.isCancelled
        }
        if timedOut, operation._completedFailure is CancellationError {
            // After the timer, the time it waited; before it (the operation
            // cancelled itself), none is known.
            output._tryFail(stoppedBy == .timeout ? TimeoutError(after: timeout) : TimeoutError())
        } else {
            output._trySet(copying: operation)
        }
    }
}
