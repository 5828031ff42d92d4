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
//
// A `_NodeRef` is a raw pointer and holds nothing, and Swift ends an
// object's life after its last use, which may be the read of its `cf_node`:
// whoever makes one from an object holds that object until the receiver has
// a reference of its own (`retainObject`). A node's own method may, as its
// `self` is held for the call; any other code keeps the object in
// `withExtendedLifetime`.
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
}

// MARK: where a node lies in its object, in every build

/// Where a node's `cf_node` lies in the node object: right after the Swift
/// object header (two words on 64-bit), being its first stored property, of
/// pointer alignment, where `_getUnsafePointerToStoredProperties` puts it
/// (both checked in `_Node.init`, debug builds).
@inlinable @inline(__always)
var _nodeOffset: Int { 2 * MemoryLayout<UInt>.size }

/// Where `Future`'s outcome words lie in a future: after the object header
/// and the `cf_future` (checked in `_StepFuture.init`, debug builds).
@inlinable @inline(__always)
var _futureWordsOffset: Int { _nodeOffset + MemoryLayout<cf_future>.stride }

/// Where a step future's `cf_node` lies: right after `Future`'s fields
/// (the outcome words and the target reference), which end 16-byte
/// aligned on 64-bit platforms, as the core's node pointers need (checked
/// in `_StepFuture.init`, debug builds).
@inlinable @inline(__always)
var _futureNodeOffset: Int {
    _futureWordsOffset + MemoryLayout<(UInt, UInt)>.size + MemoryLayout<UnsafeMutableRawPointer?>.size
}
