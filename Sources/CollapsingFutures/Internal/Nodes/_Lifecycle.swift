// The lifecycle of a node, every kind, in one place: each transition is a
// function here, and this file alone writes a node's run policy.
//
// A node object is a `_Node` or a step's output future (`_StepFuture`);
// the lifecycle works on its `cf_node` and run policy (`_NodeRef`), and
// only the action at the end differs by kind (`_NodeRef.perform`).
//
// State: the C node state (`cf_node.state`: LIVE until exactly one of
// CLAIMED, DISCARDED, REMOVED) and the run policy (`_RunPolicy`: the
// threading, `linked` while an `unless` link is out, then `unlinked`).
//
// Transitions, each taken by the winner of the node's CAS out of LIVE:
//   registered   `_enter`: runs now, is discarded now, is removed by an
//                `unless` already cancelled, or is pushed (stays LIVE);
//   cancelled    `_handle(.cancelled)`: its `unless` link goes; runs here,
//                or after a hop (`_runAfterHop`);
//   immortalized `_handle(.immortalized)`: the link goes; discarded (run,
//                for `inlineWhenSettled`);
//   removed      `_handle(.removed)`: by its registration, or its link;
//   hopped       `_handle(.hopped)`: arrived where it runs, `unless` read
//                again;
// then the list's reference goes (`_releaseListReference`), and a dead
// `_Node` is kept for reuse (cf_node_pool.h).
//
// Ownership: before publication only the registering thread writes a
// node's fields; the C release-CAS that publishes it orders those writes.
// From then on the winner of the CAS out of LIVE owns them: no lock, no
// dynamic exclusivity check (`@exclusivity(unchecked)`).
//
// References: the list holds one on the node object (`_enter`), handed
// back with every C callback (`_nodeEvent`); a `CancelRegistration`, an
// `unless` link's target and a hop each hold another. A node is dead when
// the reference in hand is its only one (`cf_is_only_reference`).
//
// Reuse and its ThreadSanitizer hand-offs: `_NodePool`.
import CCollapsingFutures
import Dispatch

/// An event of a node's lifecycle after its registration (`_enter`).
/// Each but `hopped` comes to the winner of the node's CAS out of LIVE, so
/// exactly one of them ends a node's registration.
@usableFromInline
enum _NodeEvent {
    /// Claimed by its token's cancel. `linkPushed`: its `unless` link was
    /// pushed, so it is removed from the `unless` token; false when the node
    /// found its token settled as it was pushed (the link, never pushed, is
    /// dropped).
    case cancelled(linkPushed: Bool)
    /// Claimed by its token becoming immortal (`linkPushed` as above).
    case immortalized(linkPushed: Bool)
    /// Claimed by its registration's `remove()`; `byUnless`: by its `unless`
    /// link, which fired (and so is dropped, not removed).
    case removed(byUnless: Bool)
    /// The run reached the queue or actor it hopped to, where `unless` is
    /// checked again.
    case hopped(unless: CancelToken)
}

/// What a node does at the end of its lifecycle, which each kind answers
/// (`_NodeRef.perform`: a `_Node`'s `_run`, `_discard` or `_removed`, or a
/// step future's step).
@usableFromInline
enum _NodeAction {
    /// Run (the token was cancelled, or the hop arrived).
    case run
    /// Never run: its token became immortal. `unlessOwner`: the owner of
    /// the `unless:` token that can still fail a continuation's output.
    case discard(unlessOwner: AnyObject?)
    /// Never run: removed by its registration, or, `byUnless`, by its
    /// `unless:` token, when it fired first or before a hop arrived.
    case remove(byUnless: Bool)
}

extension _NodeRef {
    /// Registered: the only caller of `cf_token_register`. From one read
    /// of the token's word it does one of four things with this node:
    /// - `unless` already cancelled: the node is removed by it
    ///   (`_removed(byUnless:)`: a continuation's output fails with
    ///   `CancellationError`); returns CF_REG_IMMORTAL (it never runs);
    /// - the token is cancelled: it runs now (`_runNow`: here, or on its
    ///   queue after a hop, where `unless` is checked again);
    ///   CF_REG_CANCELLED;
    /// - the token is immortal and there is no `unless`: it is discarded
    ///   here; CF_REG_IMMORTAL;
    /// - otherwise it is pushed, and its `unless` link after it:
    ///   CF_REG_ADDED (the list, or this thread's drain queue, took a
    ///   reference). A token that settled meanwhile is met by the push:
    ///   the unlisted node is claimed, then run or discarded here (unless a
    ///   remover got there first), and the terminal state is returned.
    /// Nodes settled here without the push were never listed, and their
    /// state says so, so a registration made for one before (`_ResumeNode`)
    /// cannot remove it from a list it was never in. Their link was never
    /// pushed: it is dropped, not removed (no token counts a removal of a
    /// node it never linked).
    @usableFromInline
    func _enter(_ owner: AnyObject, _ registration: _Registration, unless: CancelToken) -> Int32 {
        // The token stored in `owner` itself, as `unless`, is never
        // cancelled before this node runs: no `unless` at all. (Borrowed,
        // not copied: no reference counting on the common path.)
        let hasUnless = unless._owner != nil && unless._owner !== owner
        // Plain stores of the state, as `cf_node_init`'s: nothing else
        // sees the node before it is pushed (not `reachable`).
        if hasUnless && unless.isCancelled {
            cf_node_settle_private(c, UInt(CF_N_REMOVED))
            _handle(.removed(byUnless: true))
            return Int32(CF_REG_IMMORTAL)
        }
        // The threading, which `_RunPolicy.hop` reads. A new or kept node's
        // policy is `.inline` (`_keepCleared`), so that one needs no store.
        assert({ if case .inline = policy.pointee { true } else { false } }(), "a node is registered once per life")
        switch registration.threading {
        case .user:
            if let q = registration.queue?.takeUnretainedValue() {
                policy.pointee = q === DispatchQueue.completingThread ? .completingThread : .queue(q)
            } else {
                policy.pointee = _isOnMain() ? .mainQueueUnlessThere : .completingThread
            }
        case .mainActor: policy.pointee = .mainActor
        case .inline: break
        case .offTheDriver: policy.pointee = .completingThread
        case .whenSettled: policy.pointee = .inlineWhenSettled
        }
        // Its own word, and the root's only when that one is linked: the
        // common path loads once. A link made after this load is met by
        // the push.
        var w = registration.reachable ? 0 : cf_token_load(_ownTokenPtr(owner))
        if _slowPath(w & UInt(CF_W_LINKED) != 0) { w = cf_token_load(_tokenPtr(owner)) }
        let queues = registration.queuesBehindStartedWork
        if w & _wCancelled != 0 && !(queues && cf_drain_must_queue() != 0) {
            cf_node_settle_private(c, UInt(CF_N_CLAIMED))
            _runNow(unless: hasUnless ? unless : .immortal, counted: queues)
            return Int32(CF_REG_CANCELLED)
        }
        if w & _wImmortal != 0 && !hasUnless {
            cf_node_settle_private(c, UInt(CF_N_DISCARDED))
            _handle(.immortalized(linkPushed: false))
            return Int32(CF_REG_IMMORTAL)
        }
        // The link is recorded before this node is published (so its
        // settler reads it race-free), and pushed after it (so a link that
        // fires always finds this node in its list). Kept here: once
        // published, the policy is its settler's.
        var link: _UnlessNode?
        if hasUnless {
            link = _UnlessNode._make(target: self, of: owner, policy: policy.pointee,
                                     on: unless._owner.unsafelyUnwrapped,
                                     removeOnDiscard: registration.removedWhenUnlessImmortal)
            policy.pointee = .linked(link.unsafelyUnwrapped)
        }
        // The list's reference.
        retainObject()
        // Its own token first (one load less than resolving on every push);
        // linked, before or meanwhile: once more on the root, never linked.
        var r = cf_token_register(_ownTokenPtr(owner), c)
        if r == Int32(CF_REG_LINKED) { r = cf_token_register(_tokenPtr(owner), c) }
        if r == Int32(CF_REG_CANCELLED) && cf_drain_must_queue() != 0 {
            // Inside a handler that has started work still waiting, or too
            // many inline runs deep: queue behind it (cf_core.h, "Drain
            // order" and "Stack depth"). The queue takes that reference; the
            // node keeps its `unless` link and can be removed until its
            // turn, as if listed.
            cf_node_enqueue(c, _wCancelled)
            r = Int32(CF_REG_ADDED)
        }
        if r == Int32(CF_REG_ADDED) {
            // A terminal `unless` here is met by the link's own entry (it
            // runs and removes this node, or is discarded). If this node
            // settled first it already removed the link, which then sits in
            // the list as a removed node, counted, until cleanup or settle
            // unlinks it.
            // `link` is held until its registration has taken the list's
            // reference: once this node is listed, its settler may drop
            // the policy's reference to it.
            if let link { withExtendedLifetime(link) { _ = _NodeRef(link._ptr)._enter(unless._owner.unsafelyUnwrapped, .unlessLink, unless: .immortal) } }
            return r
        }
        releaseObject()
        let cancelled = r == Int32(CF_REG_CANCELLED)
        // The node's fields are touched only by the winner of its CAS out of
        // LIVE: a remover may already hold its registration (an unless
        // link's, held by the node it links, which can run meanwhile), and
        // then it owns them. A node with an `unless` link has no
        // registration out yet (it is handed out, and the link pushed, only
        // once the node is listed), so this claim is its to win.
        guard cf_node_claim(c, UInt(cancelled ? CF_N_CLAIMED : CF_N_DISCARDED)) != 0 else { return r }
        _settleUnlisted(cancelled: cancelled)
        return r
    }

    /// Every event after the registration: an event in, the node's action
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
        retainObject()
        if !_NodePool.keep(c, object: o) { releaseObject() }
    }

    /// Releases the reference the list (or the drain queue) held, which
    /// the core's callback hands back. A `_Node` whose only reference it
    /// is (`cf_is_only_reference`: no registration, link or hop holds it)
    /// is dead, and is kept for reuse (`_keep`) instead of freed.
    @inline(__always)
    func _releaseListReference() {
        let inFuture = inFuture, o = object(inFuture: inFuture)
        if !inFuture && _NodePool.keepIfDead(c, object: o) { return }
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
        // Each hands the link off (its list's thread may keep it) as its
        // last step, while the call holds it.
        if removingIt { link._removeFromUnless() } else { link._dropTarget() }
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
        // The thread that sent the hop may keep it.
        _NodePool.handOff(c)
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

/// The callback of every node (the upcall `node_event`, cf_upcalls.h): performs
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

extension _Node {
    /// `_keep` for the classes that are kept, once their own fields are
    /// clear: `_policy` is cleared (it may hold a queue), then the node
    /// goes on its class's free list.
    @inlinable @inline(__always)
    final func _keepCleared() -> Bool {
        if case .inline = _policy {} else { _policy = .inline }
        return _NodePool.put(self)
    }
}

/// Runs `body` here and now as one inline run of a handler or continuation,
/// counted, so that registrations nested too deep queue on this thread's
/// drain instead of recursing (cf_core.h, "Stack depth").
@inlinable @inline(__always)
func _inline(_ body: () -> Void) {
    cf_inline_enter()
    body()
    cf_inline_exit()
}

/// Runs `work` here, or, on the timer driver's thread, on the firing pool
/// (cf_firing_pool.h): for the library's bookkeeping that ends in user
/// code, such as `Task.cancel()`, which runs the task's cancellation
/// handlers where it is called. The driver never runs user code.
func _runOffTheDriver(_ work: @escaping @Sendable () -> Void) {
    guard cf_wheel_on_driver_thread() != 0 else { return work() }
    // A raw `_NodeRef` does not hold its object, and Swift ends a value's
    // life after its last use: `node` is held until the hop has taken its
    // own reference.
    let node = _HandlerNode._make(work)
    withExtendedLifetime(node) { _NodeRef(node._ptr)._runAfterHop(to: .completingThread, unless: .immortal) }
}
