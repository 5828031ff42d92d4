// Node reuse as the Swift layer sees it (cf_node_pool.h): a dead node of a
// kept kind waits on its thread's free list for that thread's next
// registration of its class, and the hand-offs that tell ThreadSanitizer
// about reuse across threads.
//
// A node is dead when the reference in hand is its only one
// (`cf_is_only_reference`, the Swift runtime's count). That count crosses
// threads in a way TSan cannot see: so each holder other than the list
// says when it is done with a node (`handOff`), and keeping it says it
// takes the node over (`keep`).
import CCollapsingFutures

@usableFromInline
enum _NodePool {
    /// A holder other than the list (a registration, a remover, a hop, an
    /// `unless` link's target) is done with the node at `c`: the thread
    /// that keeps it may reuse it.
    @inlinable @inline(__always)
    static func handOff(_ c: UnsafeMutablePointer<cf_node>) { cf_node_fields_released(c) }

    /// The `_Node` at `object` (its cf_node is `c`), whose reference the
    /// caller holds: kept on this thread's free list when that reference is
    /// its only one (the list takes the reference, and true is returned),
    /// else handed off (`handOff`: another holder's thread may keep it).
    /// False also when its class is not kept or the list is full: the
    /// caller frees it.
    @inline(__always)
    static func keepIfDead(_ c: UnsafeMutablePointer<cf_node>, object: UnsafeMutableRawPointer) -> Bool {
        guard cf_is_only_reference(object) != 0 else {
            handOff(c)
            return false
        }
        return keep(c, object: object)
    }

    /// The dead `_Node` at `object` (its cf_node is `c`), cleared and kept
    /// on this thread's free list, which takes the caller's reference; false
    /// when its class is not kept or the list is full.
    @inline(__always)
    static func keep(_ c: UnsafeMutablePointer<cf_node>, object: UnsafeMutableRawPointer) -> Bool {
        cf_node_fields_acquired(c)
        return Unmanaged<_Node>.fromOpaque(object)._withUnsafeGuaranteedRef { $0._keep() }
    }

    /// `node`, dead and cleared, on this thread's free list for its class;
    /// false when the list is full.
    @inlinable @inline(__always)
    static func put(_ node: _Node) -> Bool { cf_node_pool_keep(classKey(type(of: node)), node._ptr) != 0 }

    /// A node of class `T` from this thread's free list for it,
    /// reinitialised for its next registration; nil if there is none.
    @inlinable @inline(__always)
    static func take<T: _Node>(_: T.Type) -> T? {
        guard let c = cf_node_pool_take(classKey(T.self)) else { return nil }
        cf_node_init(c)
        return Unmanaged<T>.fromOpaque(UnsafeRawPointer(c) - _nodeOffset).takeRetainedValue()
    }

    /// Whether this thread keeps `node` (tests: a node the library no
    /// longer needs is freed or kept, holding nothing).
    static func holds(_ node: _Node) -> Bool { cf_node_pool_holds(node._ptr) != 0 }

    /// The key of a node class's free lists: its metadata.
    @inlinable @inline(__always)
    static func classKey(_ cls: _Node.Type) -> UnsafeRawPointer { unsafeBitCast(cls, to: UnsafeRawPointer.self) }
}

/// Frees a kept node as its thread exits: the upcall `node_free`
/// (cf_upcalls.h).
@_cdecl("cf_swift_node_free")
func _nodeFree(_ c: UnsafeMutablePointer<cf_node>) {
    Unmanaged<_Node>.fromOpaque(UnsafeRawPointer(c) - _nodeOffset).release()
}
