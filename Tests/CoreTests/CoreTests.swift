// Properties of the lock-free core that the Dispatch-lock version does not
// share: memory bounds of the handler list under churn.
@_spi(Testing) import CollapsingFutures
import Testing

/// Counts deinits across threads.
final class Deinits: @unchecked Sendable {
    private var n = 0
    func increment() { n += 1 }   // single-threaded use in these tests
    var value: Int { n }
}

final class Captured: @unchecked Sendable {
    let deinits: Deinits
    init(_ d: Deinits) { deinits = d }
    deinit { deinits.increment() }
}

@Suite struct HandlerListMemory {
    @Test func registerRemoveChurnOnLongLivedTokenKeepsListSmall() {
        let s = CancelTokenSource()
        var peak = 0
        for i in 0..<1_000_000 {
            let r = s.token.whenCancelled {}
            #expect(r.remove())
            if i % 1000 == 0 { peak = max(peak, s.token._linkedNodeCount) }
        }
        let after = s.token._linkedNodeCount
        print("churn: linked nodes after 1,000,000 register/remove = \(after), peak sampled = \(peak)")
        #expect(after <= 32)
        #expect(peak <= 32)
    }

    @Test func churnWithLiveHandlersStaysProportionalToLiveOnes() {
        let s = CancelTokenSource()
        var keep: [CancelRegistration] = []
        for _ in 0..<1000 { keep.append(s.token.whenCancelled {}) }
        for _ in 0..<200_000 { s.token.whenCancelled {}.remove() }
        let n = s.token._linkedNodeCount
        print("churn with 1000 live: linked nodes = \(n)")
        #expect(n >= 1000)
        #expect(n <= 1000 + 1000 / 2 + 32)
        s.cancel()
        #expect(s.token._linkedNodeCount == 0)
    }

    @Test func unlessRegistrationsOnLongLivedTokenDoNotAccumulate() {
        let longLived = CancelTokenSource()
        let s = CancelTokenSource()
        for _ in 0..<1_000_000 {
            s.token.whenCancelled(unless: longLived.token) {}.remove()
        }
        let n = longLived.token._linkedNodeCount
        print("unless churn: linked nodes on the unless token after 1,000,000 = \(n)")
        #expect(n <= 32)
        #expect(s.token._linkedNodeCount <= 32)
    }

    @Test func unlessLinksOfHandlersThatRanAreUnlinked() {
        let longLived = CancelTokenSource()
        for _ in 0..<100_000 {
            let s = CancelTokenSource()
            s.token.whenCancelled(unless: longLived.token) {}
            s.cancel()
        }
        #expect(longLived.token._linkedNodeCount <= 32)
    }

    @Test func removedRegistrationFreesItsClosureAtOnce() {
        let d = Deinits()
        let s = CancelTokenSource()
        var regs: [CancelRegistration] = []
        for _ in 0..<100 {
            let c = Captured(d)
            regs.append(s.token.whenCancelled { _ = c })
        }
        for (i, r) in regs.enumerated() {
            #expect(r.remove())
            #expect(d.value == i + 1)
        }
    }

    @Test func settledTokenHasNoLinkedNodes() {
        let s = CancelTokenSource()
        for _ in 0..<10 { s.token.whenCancelled {} }
        #expect(s.token._linkedNodeCount == 10)
        s.cancel()
        #expect(s.token._linkedNodeCount == 0)
    }
}
