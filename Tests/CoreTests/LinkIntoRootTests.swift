@_spi(Testing) @testable import CollapsingFutures
import Dispatch
import Testing
import TestSupport

/// `Future._linkInto`: a future set to a chain whose end is a root (a step
/// output others are linked into) links its token into that root instead
/// of registering a forwarder on it, so the root keeps nothing of it.
@Suite struct LinkIntoRoot {
    /// A root: `x`, a step output that linked `y` (another step output,
    /// still pending, completed through `gate`) into itself. `y`'s step
    /// returns `box.next` when given one, else `gate`'s value plus one.
    final class Root: @unchecked Sendable {
        let gate = FutureSource<Int>()
        var next: Future<Int>?
        let x: Future<Int>
        let y: Future<Int>
        init() {
            let box = Box()
            y = gate.future.then { (v: Int) -> Future<Int> in box.root?.next ?? .succeeded(v + 1) }
            let y = y
            x = Future<Int>.succeeded(0).then { (_: Int) -> Future<Int> in y }
            box.root = self
        }
        final class Box: @unchecked Sendable { weak var root: Root? }
    }

    @Test func aFutureSetToARootLinksIntoItAndKeepsNothingThere() {
        let root = Root()
        #expect(root.x.state == .flattening)
        #expect(root.x.completionToken._linkedNodeCount == 0)
        let z = FutureSource<Int>()
        #expect(z.trySetResult(root.y))
        // Linked, not forwarded: nothing was registered on the root.
        #expect(root.x.completionToken._linkedNodeCount == 0)
        #expect(z.future.state == .flattening)
        #expect(!z.trySetResult(1))
        let seen = Log<Int>()
        z.future.thenDo { seen.append($0) }
        // Registered on the root's token, where the outcome arrives.
        #expect(root.x.completionToken._liveRegistrationCount == 1)
        root.gate.trySetResult(6)
        #expect(z.future.forceGetResult() == 7 && root.x.forceGetResult() == 7)
        #expect(seen.all == [7])
    }

    @Test func aHandlerRegisteredFirstIsCompletedByAForwarder() {
        let root = Root()
        let z = FutureSource<Int>()
        let seen = Log<Int>()
        z.future.thenDo { seen.append($0) }
        #expect(z.trySetResult(root.y))
        #expect(root.x.completionToken._linkedNodeCount == 1)
        root.gate.trySetResult(1)
        #expect(z.future.forceGetResult() == 2)
        #expect(seen.all == [2])
    }

    /// With a forwarder, the root's list would keep every future set to it
    /// until it completes; linked, a future goes with its last holder.
    @Test func aLinkedFutureIsFreedWhileItsRootIsPending() {
        let root = Root()
        weak var watched: Future<Int>?
        do {
            let z = FutureSource<Int>()
            z.trySetResult(root.y)
            watched = z.future
            #expect(watched != nil)
        }
        #expect(watched == nil)
        #expect(root.x.state == .flattening)
        root.gate.trySetResult(2)
        #expect(root.x.forceGetResult() == 3)
    }

    /// A future linked into its root holds it in its claim word until the
    /// future is freed, whether it completed through the link or was
    /// dropped pending: then the root goes with its last holder. A future
    /// with a handler registered on it first is completed by a forwarder
    /// and never names the root, which goes with its own holders.
    @Test(arguments: [Ending.completedLinked, .completedByForwarder, .droppedPending])
    func theRootGoesWithItsLastLinkedFuture(_ ending: Ending) {
        weak var watchedRoot: Future<Int>?
        var z: FutureSource<Int>? = FutureSource<Int>()
        do {
            let root = Root()
            watchedRoot = root.x
            if ending == .completedByForwarder { z!.future.thenDo { _ in } }
            z!.trySetResult(root.y)
            #expect(root.x.completionToken._linkedNodeCount == (ending == .completedByForwarder ? 1 : 0))
            if ending != .droppedPending {
                root.gate.trySetResult(1)
                #expect(z!.future.forceGetResult() == 2)
            }
        }
        // The root is held by `z`'s future alone now, if it linked.
        #expect((watchedRoot != nil) == (ending != .completedByForwarder))
        z = nil
        #expect(watchedRoot == nil)
    }

    /// A future with a handler registered on it, set to a chain whose end
    /// is unset with a handler of its own, cannot link its token (its word
    /// is not empty), so it registers the forwarder without naming the end
    /// in its claim word: once the end has completed it, the end goes with
    /// its own holders while the future lives on.
    @Test func aFutureWithAHandlerKeepsNoEndItWasSetTo() {
        weak var watchedEnd: Future<Int>?
        let a = FutureSource<Int>()
        let seen = Log<Int>()
        a.future.thenDo { seen.append($0) }
        do {
            let b = FutureSource<Int>()
            b.future.thenDo { _ in }
            watchedEnd = b.future
            #expect(a.trySetResult(b.future))
            #expect(b.future.completionToken._liveRegistrationCount == 2)
            b.trySetResult(5)
        }
        #expect(a.future.forceGetResult() == 5 && seen.all == [5])
        #expect(watchedEnd == nil)
    }

    enum Ending: Sendable { case completedLinked, completedByForwarder, droppedPending }

    @Test func aFutureLinkedIntoARootThatBecomesImmortalIsImmortal() {
        var root: Root? = Root()
        let x = root!.x
        let z = FutureSource<Int>()
        z.trySetResult(root!.y)
        let freed = Counter()
        do {
            let captured = Tracked(freed)
            z.future.thenDo { _ in captured.touch() }
        }
        root = nil  // `gate`'s source dies unset: `y`, then `x`, become immortal
        #expect(x.state == .immortal)
        #expect(z.future.state == .immortal)
        #expect(freed.value == 1)
        #expect(throws: FutureError.immortal) { try z.future.wait() }
    }

    /// The root's own chain closed back through a future linked into it:
    /// the cycle is found and every future in it becomes immortal.
    @Test func aCycleThroughALinkedFutureIsImmortal() {
        let root = Root()
        let z = FutureSource<Int>()
        z.trySetResult(root.y)
        root.next = z.future
        root.gate.trySetResult(0)  // `y`'s step returns `z`: x -> z -> x
        #expect(root.x.state == .immortal)
        #expect(root.y.state == .immortal)
        #expect(z.future.state == .immortal)
    }

    /// Linking into the root racing the root being set, through its claim,
    /// to the linking future (a cycle closed from both ends at once): every
    /// future ends immortal, and all of them are freed.
    @Test func aCycleClosedWhileLinkingIsImmortalAndFreed() {
        for _ in 0..<2_000 {
            weak var watched: Future<Int>?
            do {
                let root = Root()
                let z = FutureSource<Int>()
                root.next = z.future
                watched = root.x
                let group = DispatchGroup()
                DispatchQueue.global().async(group: group) { z.trySetResult(root.y) }
                DispatchQueue.global().async(group: group) { root.gate.trySetResult(0) }
                #expect(group.wait(timeout: patienceDeadline()) == .success)
                #expect(root.x.state == .immortal && z.future.state == .immortal)
            }
            #expect(watched == nil)
        }
    }

    /// A registration racing the link: the handler runs once, with the
    /// value, whichever of the two came first.
    @Test func aHandlerRacingTheLinkRunsOnce() {
        for _ in 0..<2_000 {
            let root = Root()
            let z = FutureSource<Int>()
            let seen = Log<Int>()
            let group = DispatchGroup()
            DispatchQueue.global().async(group: group) { z.future.thenDo { seen.append($0) } }
            DispatchQueue.global().async(group: group) { z.trySetResult(root.y) }
            #expect(group.wait(timeout: patienceDeadline()) == .success)
            root.gate.trySetResult(4)
            #expect(z.future.forceGetResult() == 5)
            #expect(seen.all == [5])
        }
    }
}
