@_spi(Testing) @testable import CollapsingFutures
import Testing
import TestSupport

#if DEBUG  // the future count exists in debug builds only
/// `Future._link` driven directly, for the two paths a race decides: a
/// handler registered on the returned future before the link (its token
/// keeps its own list, and a forwarder on the root completes it), and a
/// returned future its producer drops unset. Every future is counted freed
/// afterwards (the claim word's reference on the root included).
@Suite struct Link {
    @Test func aHandlerRegisteredBeforeTheLinkRunsAndNothingIsKept() {
        let before = Future<Int>._aliveOnThisThread
        let seen = Log<Int>()
        do {
            let returned = Future<Int>()
            returned.thenDo { seen.append($0) }
            let root = Future<Int>()
            #expect(root._takeClaim() != nil)
            #expect(root._link(returned))
            #expect(returned.state == .pending && root.state == .flattening)
            #expect(returned._trySet(.success(5)))       // taken through to the root
            #expect(root.forceGetResult() == 5 && returned.forceGetResult() == 5)
        }
        #expect(seen.all == [5])
        #expect(Future<Int>._aliveOnThisThread == before)
    }

    @Test func aLinkedFutureItsProducerDropsUnsetMakesTheRootImmortal() {
        let before = Future<Int>._aliveOnThisThread
        do {
            let root = Future<Int>()
            #expect(root._takeClaim() != nil)
            var returned: Future<Int>? = Future<Int>()
            #expect(root._link(returned!))
            #expect(returned!.completionToken.canStillBeCancelled)
            #expect(root.state == .flattening)
            returned = nil
            #expect(root.state == .immortal)
        }
        #expect(Future<Int>._aliveOnThisThread == before)
    }

    @Test func aLinkedFutureSeesTheRootsOutcomeAndRegistersOnIt() {
        let before = Future<Int>._aliveOnThisThread
        let seen = Log<Int>()
        do {
            let root = Future<Int>()
            #expect(root._takeClaim() != nil)
            let returned = Future<Int>()
            #expect(root._link(returned))
            returned.thenDo { seen.append($0) }
            #expect(returned.completionToken._linkedNodeCount == 1)      // on the root's token
            #expect(root.completionToken._linkedNodeCount == 1)
            #expect(returned._trySet(.failure(Boom())))
            #expect(returned.state == .failed && returned.forceGetFailure() is Boom)
            #expect(!returned._trySet(.success(1)))                      // the claim was taken
        }
        #expect(seen.all.isEmpty)
        #expect(Future<Int>._aliveOnThisThread == before)
    }

    /// A chain built outwards (each new source's future set to the
    /// previous one): the first future, unset with nothing registered, is
    /// linked into the second, and every later level links into that one,
    /// the end of its chain. Once their sources are gone the levels between
    /// are freed, so the chain keeps three futures (the first, the second
    /// and the outermost), not one per level, and both ends still see the
    /// outcome.
    @Test func aChainBuiltOutwardsKeepsNoFuturePerLevel() {
        let before = Future<Int>._aliveOnThisThread
        do {
            let root = FutureSource<Int>()
            let outer = chainBuiltOutwards(onto: root.future, levels: 1_000) { _, _, set in #expect(set) }
            #expect(Future<Int>._aliveOnThisThread - before == 3)
            #expect(outer.state == .flattening && root.future.state == .pending)
            let seen = Log<Int>()
            outer.thenDo(on: .completingThread) { seen.append($0) }
            #expect(root.trySetResult(8))
            #expect(outer.forceGetResult() == 8 && seen.all == [8])
        }
        #expect(Future<Int>._aliveOnThisThread == before)
    }

    /// The same chain whose first source dies unset: every level that is
    /// left becomes immortal with it.
    @Test func aChainBuiltOutwardsBecomesImmortalWithItsUnsetRoot() {
        let outer: Future<Int>
        do {
            let root = FutureSource<Int>()
            outer = chainBuiltOutwards(onto: root.future, levels: 100)
            #expect(outer.state == .flattening)
        }
        #expect(outer.state == .immortal)
    }
}
#endif
