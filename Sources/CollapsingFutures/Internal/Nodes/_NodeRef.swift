// What the registration path and the lifecycle work on: a registration's
// `cf_node`, and through it the object it lives in and its run policy.
// There are two kinds of node object:
// - a `_Node` (handlers, links, Do forms, bookkeeping): its `cf_node` is its
//   first stored property, `_nodeOffset` into the object;
// - a step's output future (`_StepFuture`: `then`, `catch`, `finally`): its
//   `cf_node` is its first stored property after `Future`'s,
//   `_futureNodeOffset` into the object, and carries the core's owner bit
//   (`cf_node_in_future`).
// In both the run policy is the stored property right after the `cf_node`.
// So one registration path (`_enter`) and one lifecycle (`_handle`) serve
// both, and only the action at the end (`perform`) asks which kind it is.
import CCollapsingFutures
import Dispatch

@usableFromInline @frozen
struct _NodeRef: @unchecked Sendable {
    @usableFromInline let c: UnsafeMutablePointer<cf_node>

    @inlinable @inline(__always)
    init(_ c: UnsafeMutablePointer<cf_node>) { self.c = c }

    /// Whether the node lives in a step's output future
    /// (`cf_node_in_future`).
    @inlinable @inline(__always)
    var inFuture: Bool { cf_node_in_future(c) != 0 }

    /// The object the node lives in.
    @inlinable @inline(__always)
    var object: UnsafeMutableRawPointer { object(inFuture: inFuture) }

    /// The object the node lives in, for a caller that has read `inFuture`
    /// already (one load of the state word, not two).
    @inlinable @inline(__always)
    func object(inFuture: Bool) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(c) - (inFuture ? _futureNodeOffset : _nodeOffset)
    }

    /// The run policy: the object's stored property after the `cf_node`
    /// (`_Node._policy`, `_StepFuture._policy`; both checked in their
    /// `init`, debug builds).
    @inlinable @inline(__always)
    var policy: UnsafeMutablePointer<_RunPolicy> {
        (UnsafeMutableRawPointer(c) + MemoryLayout<cf_node>.stride).assumingMemoryBound(to: _RunPolicy.self)
    }

    /// One more reference to the object: the list's (`_enter`), an
    /// `unless` link's on its target, a hop's.
    @inlinable @inline(__always)
    func retainObject() { _ = Unmanaged<AnyObject>.fromOpaque(object).retain() }

    @inlinable @inline(__always)
    func releaseObject() { Unmanaged<AnyObject>.fromOpaque(object).release() }

    /// The node's action: a `_Node`'s method, or a step future's step,
    /// which its outcome words hold until it runs (`_StepFuture`).
    @inline(__always)
    func perform(_ action: _NodeAction) {
        let inFuture = inFuture, o = object(inFuture: inFuture)
        if inFuture {
            (o + _futureWordsOffset).load(as: _Step.self).perform(o, action)
        } else {
            Unmanaged<_Node>.fromOpaque(o)._withUnsafeGuaranteedRef { node in
                switch action {
                case .run: node._run()
                case .discard(let unlessOwner): node._discard(unless: unlessOwner)
                case .remove(let byUnless): node._removed(byUnless: byUnless)
                }
            }
        }
    }
}
