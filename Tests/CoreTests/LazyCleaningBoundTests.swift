// API.md's bound on lazy cleaning: a list never holds more removed nodes
// than half its live ones plus 16, and none once it settles or becomes
// immortal. Measured on a token and on a pending future's steps, each with
// 50,000 live registrations and 100,000 removed by their `unless` token.
@_spi(Testing) import CollapsingFutures
import Testing
import TestSupport

@Suite struct LazyCleaningBound {
    static let live = 50_000, cancelled = 100_000

    static func removed(_ token: CancelToken) -> Int { token._linkedNodeCount - token._liveRegistrationCount }
    static var bound: Int { live / 2 + 16 }

    @Test func aTokensListHoldsAtMostHalfItsLiveNodesRemoved() {
        let s = CancelTokenSource(), unless = CancelTokenSource()
        let runs = Counter(), deinits = Counter()
        for i in 0..<(Self.live + Self.cancelled) {
            let p = Tracked(deinits)
            if i % 3 == 0 {
                s.token.whenCancelled { p.touch(); runs.increment() }
            } else {
                s.token.whenCancelled(unless: unless.token) { p.touch(); runs.increment() }
            }
        }
        unless.cancel()
        #expect(s.token._liveRegistrationCount == Self.live)
        #expect(Self.removed(s.token) <= Self.bound, "removed nodes still linked: \(Self.removed(s.token))")
        // The removed handlers' captures are freed at once, linked or not.
        #expect(deinits.value == Self.cancelled)
        s.cancel()
        #expect(s.token._linkedNodeCount == 0)
        #expect(runs.value == Self.live)
        #expect(deinits.value == Self.live + Self.cancelled)
    }

    @Test func aPendingFuturesStepsHoldAtMostHalfTheLiveOnesCancelled() {
        let input = FutureSource<Int>(), unless = CancelTokenSource()
        let deinits = Counter()
        var cancelledOutputs: [Future<Int>] = []
        var liveOutputs: [Future<Int>] = []
        for i in 0..<(Self.live + Self.cancelled) {
            let p = Tracked(deinits)
            if i % 3 == 0 {
                liveOutputs.append(input.future.then { p.touch(); return $0 })
            } else {
                cancelledOutputs.append(input.future.then(unless: unless.token) { p.touch(); return $0 })
            }
        }
        unless.cancel()
        let token = input.future.completionToken
        #expect(token._liveRegistrationCount == Self.live)
        #expect(Self.removed(token) <= Self.bound, "cancelled steps still linked: \(Self.removed(token))")
        #expect(cancelledOutputs.allSatisfy { $0.hasFailedWithCancel })
        #expect(deinits.value == Self.cancelled)
        // A cancelled step's node is its output: what stays linked is what
        // the bound allows, the rest is freed with the caller's references.
        weak var someCancelled = cancelledOutputs.last
        cancelledOutputs.removeAll()
        input.trySetResult(1)
        #expect(token._linkedNodeCount == 0)
        #expect(someCancelled == nil)
        #expect(liveOutputs.allSatisfy { $0.result.map { (try? $0.get()) == 1 } == true })
        #expect(deinits.value == Self.live + Self.cancelled)
    }
}
