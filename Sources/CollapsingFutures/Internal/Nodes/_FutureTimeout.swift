import CCollapsingFutures

/// `Future.timeout(_:unless:clock:)` in one object: the source of its output, its
/// registration on the input and the target of its timer. The input's
/// outcome, the timer or `unless`, whichever comes first, completes the
/// output; the other two are then stopped (the timer cancelled, this node
/// removed from the input, the registration on `unless` removed as the
/// output settles).
///
/// Who holds it: the input's list (until it runs, is discarded or
/// removed), the timer's payload (until it fires or is cancelled) and the
/// registration on `unless`. When the last of them lets go, nothing can
/// complete the output any more: `deinit` makes it immortal if it is still
/// pending, as a `FutureSource` that dies does.
///
/// Fields: all are written before the node is shared (the timer is armed
/// before `timer` is stored, but its payload does not read it), and only
/// read afterwards, so they need no lock.
final class _FutureTimeout<Value: Sendable>: _Node, @unchecked Sendable {
    let output = Future<Value>()
    let input: Future<Value>
    let duration: Duration
    /// Nil when the timeout never fires (100 years or more).
    @exclusivity(unchecked) var timer: _Timer?

    init(input: Future<Value>, duration: Duration) {
        self.input = input
        self.duration = duration
        super.init()
    }

    deinit { output._tryImmortalize() }

    /// Waits for the input.
    func start() {
        _register(on: input, .bookkeeping)
    }

    /// The timer fired (on the driver's thread).
    func timerFired() {
        guard output._trySet(.failure(TimeoutError(after: duration))) else { return }
        _ = _removeNode(_NodeRef(_ptr), from: input, byUnless: false)
    }

    /// `unless` was cancelled.
    func unlessCancelled() {
        guard output._trySet(.failure(CancellationError())) else { return }
        timer?.cancel()
        _ = _removeNode(_NodeRef(_ptr), from: input, byUnless: false)
    }

    /// The input completed.
    override func _run() {
        timer?.cancel()
        output._trySet(input._result)
    }
}
