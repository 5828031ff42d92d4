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
// `unless` links and steps are then kept on their thread's free list for
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
// A node is registered once per life (a kept node starts a new one), with
// one exception: a flatten step's node
// (`_FlatStepNode`), once it has run, re-initialises its `cf_node` and
// registers itself on another token as its output's forwarder. That is safe
// only because nothing else can still touch its `cf_node` then: the drain
// reads nothing of a node after its callback, no `CancelRegistration` for it
// was handed out, and it never had an `unless` link
// (`_policy.hadUnlessLink` is false).
import CCollapsingFutures
import Dispatch

@usableFromInline
class _Node: @unchecked Sendable {
    /// Must stay the first stored property: the C core's view of this node.
    @usableFromInline final var _c = cf_node()
    /// When and where the action runs, and the link registered on the
    /// `unless:` token, if any (which then holds the threading), removed
    /// when this node settles. Written before the node is published.
    @exclusivity(unchecked) @usableFromInline
    final var _policy = _RunPolicy.inline

    @inlinable @inline(__always)
    final var _ptr: UnsafeMutablePointer<cf_node> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: cf_node.self)
    }

    /// A node with its fields empty: each class's `_make` stores them, in a
    /// new node or a kept one (`_reused`). Inlinable, as the subclasses'
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
    }

    // The node's actions, which `_handle` calls once its `unless` link is
    // gone.
    /// Run the handler (already on the right thread).
    @usableFromInline func _run() {}
    /// Its token became immortal: drop the handler unrun.
    @usableFromInline func _discard() {}
    /// `_discard`, with `unless` the owner of the `unless:` token this node
    /// was registered with, for nodes whose output that token can still
    /// fail. Default: `_discard()`.
    @usableFromInline func _discarded(unless: AnyObject?) { _discard() }
    /// Removed before it ran: by its registration, or, `byUnless`, by its
    /// `unless:` token, when it fired first or before a hop arrived.
    @usableFromInline func _removed(byUnless: Bool) {}

    /// This node is dead (the caller holds its only reference): clears
    /// what it still holds and keeps it on this thread's free list for its
    /// class (cf_node_pool.h), which takes the caller's reference. False
    /// when its class is not kept or the list is full: the caller frees it.
    @usableFromInline func _keep() -> Bool { false }

    /// `_keep` for the classes that are kept, once their own fields are
    /// clear: `_policy` is cleared (it may hold a queue), then the node
    /// goes on its class's free list.
    @inlinable @inline(__always)
    final func _keepCleared() -> Bool {
        if case .inline = _policy {} else { _policy = .inline }
        return cf_node_pool_keep(_classKey(type(of: self)), _ptr) != 0
    }

    /// Whether this thread keeps this node for reuse (tests: a node the
    /// library no longer needs is freed or kept, holding nothing).
    final var _isKeptOnThisThread: Bool { cf_node_pool_holds(_ptr) != 0 }

    /// A node of class `T` taken from this thread's free list for it
    /// (cf_node_pool.h), reinitialised for its next registration, its
    /// fields cleared when it was kept; nil if there is none.
    @inlinable @inline(__always)
    static func _reused<T: _Node>(as _: T.Type) -> T? {
        guard let c = cf_node_pool_take(_classKey(T.self)) else { return nil }
        cf_node_init(c)
        return Unmanaged<T>.fromOpaque(UnsafeRawPointer(c) - _nodeOffset).takeRetainedValue()
    }

    /// The node's lifecycle, in one place: an event in, the node's action
    /// out. Its `unless` link goes first — removed from the `unless` token,
    /// or dropped when it was never pushed or is the one that fired — so a
    /// node that ran, was discarded or was removed (which can stay linked
    /// in its list until a cleanup) holds nothing of the `unless` token's
    /// owner. A run whose threading says to hop re-checks `unless` when it
    /// arrives: a handler that cancels a later sibling's `unless` stops it
    /// on the main queue as it does inline (the original library re-checks
    /// `unless` on the main thread for the same reason), and a
    /// continuation's output fails with `CancellationError`.
    @inline(__always)
    @usableFromInline final func _handle(_ event: _NodeEvent) {
        switch event {
        case .cancelled(let linkPushed):
            guard case .linked(let link) = _policy else {
                if let hop = _policy.hop { _runAfterHop(to: hop, unless: CancelToken(_owner: nil)) } else { _run() }
                return
            }
            let hop = link.targetPolicy.hop
            // The link's token, read only when the run hops.
            let unless = hop == nil ? nil : link.unlessOwner
            _releaseUnlessLink(removingIt: linkPushed)
            if let hop { _runAfterHop(to: hop, unless: CancelToken(_owner: unless)) } else { _run() }
        case .immortalized(let linkPushed):
            // Both read before the link goes.
            let runsAnyway = if case .inlineWhenSettled = _policy.threading { true } else { false }
            let unlessOwner = _policy.unlessOwner
            _releaseUnlessLink(removingIt: linkPushed)
            if runsAnyway { _run() } else { _discarded(unless: unlessOwner) }
        case .removed(let byUnless):
            _releaseUnlessLink(removingIt: !byUnless)
            _removed(byUnless: byUnless)
        case .hopped(let unless):
            if unless.isCancelled { _removed(byUnless: true) } else { _run() }
        }
    }

    /// A node whose registration found its token settled, and which won
    /// its claim: runs it inline, or discards it, here (its link, never
    /// pushed, is dropped). Out of line: a race with the settle, rare.
    @inline(never)
    final func _settleUnlisted(cancelled: Bool) {
        if cancelled { _inline { _handle(.cancelled(linkPushed: false)) } } else { _handle(.immortalized(linkPushed: false)) }
    }

    /// A node whose registration found its token cancelled (`_register`),
    /// never listed nor linked to `unless`: runs here, as one counted inline
    /// run (`counted` false: bookkeeping, which runs now whatever the
    /// depth), or after a hop to its queue, where `unless` is checked again
    /// (`_runAfterHop`). The registering thread is the completing one here,
    /// so the main-thread rule holds without a hop; only a queue hops.
    @inline(__always)
    @usableFromInline final func _runNow(unless: CancelToken, counted: Bool) {
        if let hop = _policy.hop { return _runAfterHop(to: hop, unless: unless) }
        if counted { _inline { _run() } } else { _run() }
        // Dead once run, unless the run handed it on (a flatten step become
        // a forwarder): the caller's reference is then the only one, and
        // the node is kept for reuse, as a listed one is (`_nodeEvent`),
        // with a reference of its own that the caller's release leaves.
        let object = Unmanaged.passUnretained(self).toOpaque()
        guard cf_is_only_reference(object) != 0 else { return }
        cf_node_fields_acquired(_ptr)
        let kept = Unmanaged.passRetained(self)
        if !_keep() { kept.release() }
    }

    @inline(__always)
    private func _releaseUnlessLink(removingIt: Bool) {
        guard case .linked(let link) = _policy else { return }
        _policy = .unlinked
        if removingIt { link._removeFromUnless() }
        // Read (and, removing it, written) here; kept by its list's thread.
        cf_node_fields_released(link._ptr)
    }

    /// Runs this node where `hop` (`_RunPolicy.hop`) says: on its queue,
    /// or on the main actor (`_handle(.hopped)` there).
    @usableFromInline
    final func _runAfterHop(to hop: _RunPolicy, unless: CancelToken) {
        let run: @Sendable () -> Void = {
            self._handle(.hopped(unless: unless))
            // The thread that sent the hop may keep it (cf_node_pool.h).
            cf_node_fields_released(self._ptr)
        }
        if case .queue(let q) = hop { _hop(to: q, run) } else { Task { @MainActor in run() } }
    }

    /// Records the threading contract (which `_RunPolicy.hop` reads)
    /// on a node that has none yet (the library's bookkeeping never gets
    /// one: its `.inlineWhenSettled` must stay).
    @usableFromInline @inline(__always)
    final func _setThreading(_ queue: DispatchQueue?) {
        assert({ if case .inline = _policy { true } else { false } }(), "a node's threading is recorded once")
        if let queue {
            if queue !== DispatchQueue.completingThread { _policy = .queue(queue) }
        } else if _isOnMain() {
            _policy = .mainQueueUnlessThere
        }
    }
}

/// The key of a node class's free lists (cf_node_pool.h): its metadata.
@inlinable @inline(__always)
func _classKey(_ cls: _Node.Type) -> UnsafeRawPointer {
    unsafeBitCast(cls, to: UnsafeRawPointer.self)
}

/// Where a node's `cf_node` lies in the node object: right after the Swift
/// object header (two words on 64-bit), being its first stored property, of
/// pointer alignment, where `_getUnsafePointerToStoredProperties` puts it
/// (both checked in `init`, debug builds).
@inlinable @inline(__always)
var _nodeOffset: Int { 2 * MemoryLayout<UInt>.size }

/// The C callback of every node (`CF_NODE_EVENT` in cf_core.h): takes
/// back the reference the list (or the drain queue) held on the node object
/// whose `cf_node` is `c`, and performs the event. When that reference is
/// then the only one (`cf_is_only_reference`: no registration, link or hop
/// holds the node), the node is dead and is kept for reuse (`_keep`)
/// instead of freed.
@_cdecl("cf_swift_node_event") @usableFromInline
func _nodeEvent(_ c: UnsafeMutablePointer<cf_node>, _ event: Int32) {
    let object = UnsafeRawPointer(c) - _nodeOffset
    let node = Unmanaged<_Node>.fromOpaque(object)
    node._withUnsafeGuaranteedRef { node in
        if event == Int32(CF_EV_RUN.rawValue) {
            node._handle(.cancelled(linkPushed: true))
        } else if event == Int32(CF_EV_DISCARD.rawValue) {
            node._handle(.immortalized(linkPushed: true))
        }
    }
    if cf_is_only_reference(object) != 0 {
        cf_node_fields_acquired(c)
        if node._withUnsafeGuaranteedRef({ $0._keep() }) { return }
    } else {
        // Another holder's thread may keep it (cf_node_pool.h).
        cf_node_fields_released(c)
    }
    node.release()
}

/// Frees a kept node as its thread exits (cf_node_pool.c).
@_cdecl("cf_swift_node_free")
func _nodeFree(_ c: UnsafeMutablePointer<cf_node>) {
    Unmanaged<_Node>.fromOpaque(UnsafeRawPointer(c) - _nodeOffset).release()
}
