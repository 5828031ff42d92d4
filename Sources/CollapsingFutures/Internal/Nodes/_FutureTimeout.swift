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
///
/// Made by the caller's specialized code (`timeout(_:unless:clock:)` is
/// inlinable), output included: there the metadata of this class and of
/// `Future<Value>` is a cached load, where the library's unspecialized
/// code would look both up on every call. Its methods, unspecialized,
/// build no `Result` (`_trySet(copying:)`, `_tryFail`) for the same reason.
@usableFromInline
final class _FutureTimeout<Value: Sendable>: _Node, @unchecked Sendable {
    let output: Future<Value>
    let input: Future<Value>
    let duration: Duration
    /// Nil when the timeout never fires (100 years or more).
    @exclusivity(unchecked) var timer: _Timer?

    @usableFromInline init(input: Future<Value>, output: Future<Value>, duration: Duration) {
        self.input = input
        self.output = output
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
        guard output._tryFail(TimeoutError(after: duration)) else { return }
        _ = _removeNode(_NodeRef(_ptr), from: input, byUnless: false)
    }

    /// `unless` was cancelled.
    func unlessCancelled() {
        guard output._tryFail(CancellationError()) else { return }
        timer?.cancel()
        _ = _removeNode(_NodeRef(_ptr), from: input, byUnless: false)
    }

    /// The input completed.
    override func _run() {
        timer?.cancel()
        output._trySet(copying: input)
    }
}
