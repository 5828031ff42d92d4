/// The shared state of one `Future.race`: its result's owner and the
/// operations' token sources. Held by the registrations on the operations'
/// futures and on `until`, so it (and the result's source) dies, making the
/// result immortal, once none of them can complete it.
final class _Race<Value: Sendable>: Sendable {
    let source = FutureSource<Value>()
    let tokens: [CancelTokenSource]
    let failures: _Slots<any Error>
    let won = _Once()
    let until: CancelToken

    init(_ n: Int, until: CancelToken) {
        tokens = (0..<n).map { _ in CancelTokenSource() }
        failures = _Slots(n)
        self.until = until
    }

    /// Operation `i`'s future `f` settled.
    func arrived(_ i: Int, _ f: Future<Value>) {
        switch f.result {
        case .success(let v)?:
            guard won.claim() else {
                tokens[i].cancel()   // a late winner: its result's lifetime ends now
                return
            }
            // Cancel first: whoever sees the result sees the losers cancelled.
            for (j, s) in tokens.enumerated() where j != i { s.cancel() }
            let winner = tokens[i]
            until._whenCancelledInline(unless: winner.token) { winner.cancel() }
            source.trySetResult(v)
        case .failure(let e)?:
            guard failures.fill(i, e), won.claim() else { return }
            for s in tokens { s.cancel() }
            source.trySetFailure(until.isCancelled ? CancellationError() : RaceFailure(failures: failures.values()))
        case nil:
            break   // immortal: it can never win; this registration (and its hold on the race) is gone
        }
    }

    /// `until` was cancelled before the race settled.
    func untilCancelled() {
        for s in tokens { s.cancel() }
        source.trySetFailedWithCancel()
    }
}
