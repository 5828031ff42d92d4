// Dead nodes kept for reuse (cf_node_pool.h): only a node nothing holds is
// kept, a kept node holds nothing, the next registration of its class on
// the thread takes it, a thread keeps a bounded number, and what it keeps
// is freed when it exits. Each test runs on a thread of its own, whose
// lists start empty (the test pool's threads keep what earlier tests left).
@_spi(Testing) @testable import CollapsingFutures
import CCollapsingFutures
import Foundation
import Testing
import TestSupport

/// What a test's thread saw, read on the test's own thread once it exited.
private final class Seen: @unchecked Sendable {
    var facts: [String: Bool] = [:]
    var counts: [String: Int] = [:]
}

/// How many nodes of class `cls` the calling thread keeps.
private func keptCount(_ cls: _Node.Type) -> Int {
    cf_node_pool_list(_NodePool.classKey(cls), 0).map { Int($0.pointee.count) } ?? 0
}

@Suite struct NodeReuse {
    /// A handler that ran, its registration dropped, leaves its node to
    /// the next handler registered on the thread.
    @Test func aHandlerThatRanLeavesItsNodeToTheNext() {
        let seen = Seen()
        onNewThread {
            let s = CancelTokenSource()
            let node = s.token.whenCancelled {}._node!._ptr
            s.cancel()
            seen.facts["kept"] = cf_node_pool_holds(node) != 0
            let next = CancelTokenSource()
            let r = next.token.whenCancelled {}
            seen.facts["reused"] = r._node?._ptr == node
            seen.facts["taken"] = cf_node_pool_holds(node) == 0
            seen.facts["registered"] = r.description == "CancelRegistration(registered)"
        }
        #expect(seen.facts == ["kept": true, "reused": true, "taken": true, "registered": true])
    }

    /// A node a registration still holds is not kept: the registration
    /// goes on describing it, and the next handler gets another node.
    @Test func aNodeARegistrationHoldsIsNotKept() {
        let seen = Seen()
        onNewThread {
            let s = CancelTokenSource()
            let held = s.token.whenCancelled {}
            s.cancel()
            seen.facts["kept"] = held._node?._isKeptOnThisThread
            seen.facts["ran"] = held.description == "CancelRegistration(ran)"
            seen.facts["removed"] = held.remove()
            let other = CancelTokenSource()
            let next = other.token.whenCancelled {}
            seen.facts["same"] = next._node == nil || next._node === held._node
        }
        #expect(seen.facts == ["kept": false, "ran": true, "removed": false, "same": false])
    }

    /// A kept node holds nothing of its last registration: the handler,
    /// the `unless` token's owner and the queue it was to run on are
    /// released.
    @Test func aKeptNodeHoldsNothing() {
        let deinits = Counter()
        let seen = Seen()
        final class Weak: @unchecked Sendable {
            weak var unlessOwner: AnyObject?
            weak var queue: DispatchQueue?
        }
        let weak = Weak()
        onNewThread {
            let u = CancelTokenSource()
            weak.unlessOwner = u.token._owner
            var s: CancelTokenSource? = CancelTokenSource()
            let t = Tracked(deinits)
            let handler = s!.token.whenCancelled(unless: u.token) { t.touch() }._node!._ptr
            u.cancel()   // the link runs (and is kept) and removes the handler,
            s = nil      // which its list lets go: it is kept too
            seen.facts["handler kept"] = cf_node_pool_holds(handler) != 0
            seen.counts["links kept"] = keptCount(_UnlessNode.self)

            let q = DispatchQueue(label: "reuse")
            weak.queue = q
            let s2 = CancelTokenSource()
            let removed: UnsafeMutablePointer<cf_node> = {
                let r = s2.token.whenCancelled(on: q) {}
                _ = r.remove()
                return r._node!._ptr
            }()
            s2.cancel()  // unlinks the removed node, which is kept
            seen.facts["removed kept"] = cf_node_pool_holds(removed) != 0
        }
        #expect(seen.facts == ["handler kept": true, "removed kept": true])
        #expect(seen.counts["links kept"] == 1)
        #expect(deinits.value == 1)
        #expect(weak.unlessOwner == nil)
        #expect(weak.queue == nil)
    }

    /// A `then` step is its output future: the input's list holds the
    /// output itself until the step runs (so an output dropped meanwhile
    /// lives until then, and is freed once it has run), and a chain of
    /// steps built on one thread after another ran there stays right.
    @Test func aStepIsItsOutputFuture() {
        let s = FutureSource<Int>()
        weak var weakOut: Future<Int>?
        do {
            let out = s.future.then { $0 + 1 }
            weakOut = out
            #expect(out is _StepFuture<Int>)
        }
        #expect(weakOut != nil)
        #expect(s.future.completionToken._linkedNodeCount == 1)
        s.trySetResult(1)
        #expect(weakOut == nil)
        let seen = Seen()
        onNewThread {
            for round in 0..<3 {
                let s = FutureSource<Int>()
                var f = s.future
                for _ in 0..<100 { f = f.then { $0 + 1 } }
                s.trySetResult(round)
                seen.facts["right \(round)"] = f.result.flatMap { try? $0.get() } == round + 100
            }
        }
        for round in 0..<3 { #expect(seen.facts["right \(round)"] == true) }
    }

    /// What a thread keeps is freed when it exits.
    @Test func keptNodesAreFreedWhenTheirThreadExits() {
        final class Box: @unchecked Sendable {
            weak var node: _Node?
            var keptThere = false
        }
        let box = Box()
        onNewThread {
            let s = CancelTokenSource()
            box.node = s.token.whenCancelled {}._node
            s.cancel()
            box.keptThere = box.node?._isKeptOnThisThread == true
        }
        #expect(box.keptThere)
        #expect(box.node == nil)
    }

    /// A thread keeps CF_NODE_LIST_MAX nodes of a class; the rest are
    /// freed, and the other classes still have room.
    @Test func aThreadKeepsABoundedNumberOfNodes() {
        final class Box: @unchecked Sendable {
            weak var last: _Node?
            var kept = 0
            var stepsKept = 0
        }
        let box = Box()
        onNewThread {
            let s = CancelTokenSource()
            for _ in 0..<(2 * Int(CF_NODE_LIST_MAX)) { box.last = s.token.whenCancelled {}._node }
            s.cancel()   // runs them in order: the first ones are kept
            box.kept = keptCount(_HandlerNode.self)
            let source = FutureSource<Int>()
            source.future.thenDo { _ in }
            source.trySetResult(1)
            box.stepsKept = keptCount(_SinkNode<Int>.self)
        }
        #expect(box.kept == Int(CF_NODE_LIST_MAX))
        #expect(box.last == nil)
        #expect(box.stepsKept == 1)
    }
}
