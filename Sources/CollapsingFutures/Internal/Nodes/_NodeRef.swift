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
            Unmanaged<_Node>.fromOpaque(o)._withUnsafeGuaranteedRef { $0._perform(action) }
        }
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
    func _handle(_ event: _NodeEvent) {
        switch event {
        case .cancelled(let linkPushed):
            guard case .linked(let link) = policy.pointee else {
                if let hop = policy.pointee.hop { _runAfterHop(to: hop, unless: CancelToken(_owner: nil)) } else { perform(.run) }
                return
            }
            let hop = link.targetPolicy.hop
            // The link's token, read only when the run hops.
            let unless = hop == nil ? nil : link.unlessOwner
            _releaseUnlessLink(removingIt: linkPushed)
            if let hop { _runAfterHop(to: hop, unless: CancelToken(_owner: unless)) } else { perform(.run) }
        case .immortalized(let linkPushed):
            // Both read before the link goes.
            let runsAnyway = if case .inlineWhenSettled = policy.pointee.threading { true } else { false }
            let unlessOwner = policy.pointee.unlessOwner
            _releaseUnlessLink(removingIt: linkPushed)
            perform(runsAnyway ? .run : .discard(unlessOwner: unlessOwner))
        case .removed(let byUnless):
            _releaseUnlessLink(removingIt: !byUnless)
            perform(.remove(byUnless: byUnless))
        case .hopped(let unless):
            perform(unless.isCancelled ? .remove(byUnless: true) : .run)
        }
    }

    /// A node whose registration found its token settled, and which won
    /// its claim: runs it inline, or discards it, here (its link, never
    /// pushed, is dropped). Out of line: a race with the settle, rare.
    @inline(never)
    func _settleUnlisted(cancelled: Bool) {
        if cancelled { _inline { _handle(.cancelled(linkPushed: false)) } } else { _handle(.immortalized(linkPushed: false)) }
    }

    /// A node whose registration found its token cancelled (`_enter`),
    /// never listed nor linked to `unless`: runs here, as one counted inline
    /// run (`counted` false: bookkeeping, which runs now whatever the
    /// depth), or after a hop to its queue, where `unless` is checked again
    /// (`_runAfterHop`). The registering thread is the completing one here,
    /// so the main-thread rule holds without a hop; only a queue hops.
    @inline(__always)
    func _runNow(unless: CancelToken, counted: Bool) {
        if let hop = policy.pointee.hop { return _runAfterHop(to: hop, unless: unless) }
        if counted { _inline { perform(.run) } } else { perform(.run) }
        // A `_Node` is dead once run: the caller's reference is then the
        // only one, and the node is kept for reuse, as a listed one is
        // (`_releaseListReference`), with a reference of its own that the
        // caller's release leaves.
        guard !inFuture else { return }
        let o = object(inFuture: false)
        guard cf_is_only_reference(o) != 0 else { return }
        cf_node_fields_acquired(c)
        let kept = Unmanaged<_Node>.fromOpaque(o).retain()
        if !kept._withUnsafeGuaranteedRef({ $0._keep() }) { kept.release() }
    }

    /// Releases the reference the list (or the drain queue) held, which
    /// the core's callback hands back. A `_Node` whose only reference it
    /// is (`cf_is_only_reference`: no registration, link or hop holds it)
    /// is dead, and is kept for reuse (`_keep`) instead of freed.
    @inline(__always)
    func _releaseListReference() {
        let inFuture = inFuture, o = object(inFuture: inFuture)
        if !inFuture {
            if cf_is_only_reference(o) != 0 {
                cf_node_fields_acquired(c)
                if Unmanaged<_Node>.fromOpaque(o)._withUnsafeGuaranteedRef({ $0._keep() }) { return }
            } else {
                // Another holder's thread may keep it (cf_node_pool.h).
                cf_node_fields_released(c)
            }
        }
        Unmanaged<AnyObject>.fromOpaque(o).release()
    }

    /// Lets the `unless` link go: removes it from its token
    /// (`removingIt`), or drops it, when it was never pushed (its
    /// reference to this node goes with it) or is the one that fired
    /// (it has let this node go already).
    @inline(__always)
    private func _releaseUnlessLink(removingIt: Bool) {
        guard case .linked(let link) = policy.pointee else { return }
        policy.pointee = .unlinked
        if removingIt { link._removeFromUnless() } else { link._dropTarget() }
        // Read (and, removing it, written) here; kept by its list's thread.
        cf_node_fields_released(link._ptr)
    }

    /// Runs this node where `hop` (`_RunPolicy.hop`) says: on its queue,
    /// on the main actor, or on the firing pool (`_handle(.hopped)` there).
    /// The hop holds the object.
    @usableFromInline
    func _runAfterHop(to hop: _RunPolicy, unless: CancelToken) {
        retainObject()
        switch hop {
        case .queue(let q): _hop(to: q) { [self] in _arrived(unless: unless) }
        case .mainActor: Task { @MainActor in _arrived(unless: unless) }
        default:
            // The firing pool's item holds the object and `unless`' owner.
            cf_firing_add(c, unless._owner.map { Unmanaged.passRetained($0).toOpaque() })
        }
    }

    /// A hop arrived: the run, with `unless` read again; then the hop's
    /// reference goes.
    func _arrived(unless: CancelToken) {
        _handle(.hopped(unless: unless))
        // The thread that sent the hop may keep it (cf_node_pool.h).
        cf_node_fields_released(c)
        releaseObject()
    }
}

/// The firing pool's callback (cf_firing_pool.h): a node the timer driver
/// handed over arrives, on a pool thread.
@_cdecl("cf_swift_firing_run")
func _firingRun(_ c: UnsafeMutablePointer<cf_node>, _ unless: UnsafeMutableRawPointer?) {
    let owner = unless.map { Unmanaged<AnyObject>.fromOpaque($0).takeRetainedValue() }
    _NodeRef(c)._arrived(unless: CancelToken(_owner: owner))
}

/// The C callback of every node (`CF_NODE_EVENT` in cf_core.h): performs
/// the event on the node whose `cf_node` is `c`, then releases the
/// reference the list (or the drain queue) held on its object.
@_cdecl("cf_swift_node_event") @usableFromInline
func _nodeEvent(_ c: UnsafeMutablePointer<cf_node>, _ event: Int32) {
    let node = _NodeRef(c)
    if event == Int32(CF_EV_RUN.rawValue) {
        node._handle(.cancelled(linkPushed: true))
    } else if event == Int32(CF_EV_DISCARD.rawValue) {
        node._handle(.immortalized(linkPushed: true))
    }
    node._releaseListReference()
}
