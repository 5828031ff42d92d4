// The thin layer over the C core: handler nodes as Swift objects.
//
// A node is one Swift object whose FIRST stored property is the C `cf_node`;
// `_getUnsafePointerToStoredProperties` (the technique swift-atomics'
// ManagedAtomic uses) gives its stable address, so a registration costs one
// allocation for the node plus the caller's closure context. The token's list
// holds one +1 reference on the node (handed back with every C callback); each
// `CancelRegistration` holds another, so `remove()` is safe at any time.
//
// A node whose list hands back the last reference is dead: handlers,
// `unless` links and `thenDo`s are then kept on their thread's free list for
// their class (cf_node_pool.h, `_keep`) and reused by the next registration
// of that class there, which then allocates nothing for the node.
//
// Whoever wins the node's CAS out of LIVE (run, discard or remove) owns the
// node's Swift fields from then on; before that only the registering thread
// wrote them, and the C release-CAS that published the node orders those
// writes. That is why the subclasses' `var`s need no lock, and why their
// dynamic exclusivity checks are turned off (`@exclusivity(unchecked)`): the
// C core's CAS already makes every access exclusive.
//
// A node is registered once per life (a kept node starts a new one).
//
// A step of `then`, `catch` or `finally` is not a `_Node`: its output
// future is its node (`_StepFuture`). Both kinds keep the `cf_node` and
// the run policy in the same order, and the registration path and the
// lifecycle work on that pair (`_NodeRef`).
import CCollapsingFutures
import Dispatch

@usableFromInline
class _Node: @unchecked Sendable {
    /// Must stay the first stored property: the C core's view of this node.
    @usableFromInline final var _c = cf_node()
    /// When and where the action runs, and the link registered on the
    /// `unless:` token, if any (which then holds the threading), removed
    /// when this node settles. Written before the node is published. Must
    /// follow `_c` (`_NodeRef.policy`).
    @exclusivity(unchecked) @usableFromInline
    final var _policy = _RunPolicy.inline

    @inlinable @inline(__always)
    final var _ptr: UnsafeMutablePointer<cf_node> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: cf_node.self)
    }

    /// A node with its fields empty: each class's `_make` stores them, in a
    /// new node or a kept one (`_NodePool.take`). Inlinable, as the subclasses'
    /// `init()`, so that a new node's empty fields are known in the caller.
    @inlinable @inline(__always) init() {
        // The list's reference is taken in `_enter`. The core's callback
        // for every node (`_nodeEvent`) finds this object from its
        // `cf_node`, takes back that reference and performs the event.
        cf_node_init(_ptr)
        // The state word keeps its tags in the low four bits of node pointers.
        assert(UInt(bitPattern: _ptr) & 15 == 0, "cf_node must be 16-byte aligned")
        // `_nodeEvent` finds this object `_nodeOffset` before `_ptr`, and
        // `_ptr` must be `_c`: the stored properties start where
        // `_nodeOffset` says, and a link written through `_ptr` is the one
        // `_c` reads.
        assert(UnsafeRawPointer(_ptr) - _nodeOffset == UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
               && { _ptr.pointee.next = _ptr; defer { cf_node_init(_ptr) }; return _c.next == _ptr }(),
               "a node's cf_node must be its first stored property")
        assert(UnsafeMutableRawPointer(_NodeRef(_ptr).policy) == withUnsafeMutablePointer(to: &_policy) { UnsafeMutableRawPointer($0) },
               "a node's run policy must follow its cf_node")
    }

    // The node's actions, which `_handle` calls once its `unless` link is
    // gone.
    /// Run the handler (already on the right thread).
    @usableFromInline func _run() {}
    /// Its token became immortal: drop the handler unrun. `unless` is the
    /// owner of the `unless:` token this node was registered with, which
    /// can still fail a continuation's output.
    @usableFromInline func _discard(unless: AnyObject?) {}
    /// Removed before it ran: by its registration, or, `byUnless`, by its
    /// `unless:` token, when it fired first or before a hop arrived.
    @usableFromInline func _removed(byUnless: Bool) {}

    /// This node is dead (the caller holds its only reference): clears
    /// what it still holds and keeps it on this thread's free list for its
    /// class (cf_node_pool.h), which takes the caller's reference. False
    /// when its class is not kept or the list is full: the caller frees it.
    @usableFromInline func _keep() -> Bool { false }

    /// Whether this thread keeps this node for reuse (tests).
    final var _isKeptOnThisThread: Bool { _NodePool.holds(self) }
}
