// The registration path. Every registration is a node registered with
// `_register(on:queue:unless:...)`: user handlers (`whenCancelled`),
// continuations and steps, the library's bookkeeping
// (`_whenCancelledInline`, `_whenSettledInline`), `unless` links, awaiting
// tasks and flattening forwarders. Its `_enter`, the only function between
// it and `cf_token_register`, reads the token's word once and runs the node
// now, discards it, or pushes it. Running now runs the same node a settle
// would run: there is no second closure path.
// Nodes themselves (what run, discard and remove do) are in Internal/Nodes/.
import CCollapsingFutures
import Dispatch

/// The token every operation on `owner`'s token acts on: its own, or, for
/// a future linked into another (`Future._link`), that one's
/// (`cf_token_resolve`). `owner` is the object a token's state word lives
/// in: `_TokenStorage` for sources, `Future` for completion tokens.
@inlinable @inline(__always)
func _tokenPtr(_ owner: AnyObject) -> UnsafeMutablePointer<cf_token> {
    cf_token_resolve(_ownTokenPtr(owner))
}

/// The token stored in `owner` itself, its first stored property: for its
/// initializer and deinit, and for linking it.
@inlinable @inline(__always)
func _ownTokenPtr(_ owner: AnyObject) -> UnsafeMutablePointer<cf_token> {
    _getUnsafePointerToStoredProperties(owner).assumingMemoryBound(to: cf_token.self)
}

/// Called by the owner of the token `t` (a `Future`, a `_TokenStorage`) as
/// it is freed, with its own token's word `w`: nothing can settle it any more.
/// Nodes still linked in its list (handlers nobody else holds, or removed
/// ones a cleanup has not unlinked yet) would keep the list's reference
/// forever: a still-cancellable token with a list is settled immortal, as a
/// source's death does, which discards the live nodes and unlinks the rest.
/// Nothing a callback can reach holds the dying owner; inside a drain the
/// settle only queues the nodes, and the token is not read after it.
func _settleAbandoned(_ t: UnsafeMutablePointer<cf_token>, word w: UInt) {
    if w & (_wTerminal | UInt(CF_W_LINKED)) == 0 && w != 0 { cf_token_settle(t, _wImmortal) }
}

/// The state word's terminal tags, as Swift sees them.
@inlinable var _wCancelled: UInt { UInt(CF_W_CANCELLED) }
@inlinable var _wImmortal: UInt { UInt(CF_W_IMMORTAL) }
@inlinable var _wTerminal: UInt { UInt(CF_W_TERMINAL) }
/// A failed future's terminal word: cancelled, with CF_W_FAILED.
@inlinable var _wFailure: UInt { _wCancelled | UInt(CF_W_FAILED) }
/// Whether `w` is a failed future's terminal word. Both bits are tested:
/// in a pending word, CF_W_FAILED's bit belongs to a node's address.
@inlinable func _isFailure(_ w: UInt) -> Bool { w & _wFailure == _wFailure }

/// A registration's node object: a `_Node`, or a step's output future
/// (`_StepFuture`), which is its step's node.
@usableFromInline
protocol _Registrable: AnyObject {
    /// Its `cf_node` (`_NodeRef`).
    var _ptr: UnsafeMutablePointer<cf_node> { get }
    /// This object as the node a `CancelRegistration` holds; nil for a
    /// step future, whose registration is not handed out.
    var _asNode: _Node? { get }
}

extension _Registrable {
    /// The one registration path: every registration — user handlers,
    /// continuations and steps, `unless` links, awaiting tasks, flattening
    /// forwarders and combinator bookkeeping — is this node registered on
    /// the token stored in `owner` here. What happens is `_enter`'s; this
    /// part, inlined into the caller, only builds the registration, so one
    /// the caller discards costs no reference counting.
    ///
    /// `queue`: the threading contract of `CancelToken.whenCancelled` (nil:
    /// the completing thread, or the main queue when registered on the
    /// main thread). `inline`: the library's bookkeeping, run on the
    /// completing thread whatever thread registered it (no threading is
    /// recorded; a policy set before, as `_whenSettledInline`'s, stays).
    /// `queueBehindStartedWork`: false for bookkeeping that runs now even
    /// inside a handler whose started work still waits (cf_core.h, "Drain
    /// order"); otherwise a registration on a cancelled token made there, or
    /// `CF_INLINE_DEPTH_MAX` inline runs deep ("Stack depth"), queues on
    /// this thread's drain. `removeOnUnlessImmortal`: the `unless` link also
    /// removes this node when `unless` becomes immortal. `mainActor`: the
    /// `on: MainActor` continuations, which always run on the main actor
    /// after a hop (`_RunPolicy.mainActor`).
    @inlinable @inline(__always) @discardableResult
    func _register(on owner: AnyObject, queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                   inline: Bool = false, queueBehindStartedWork: Bool = true,
                   removeOnUnlessImmortal: Bool = false, mainActor: Bool = false) -> CancelRegistration {
        let r = _NodeRef(_ptr)._enter(owner, queue, unless, inline: inline, queueBehindStartedWork: queueBehindStartedWork,
                                      removeOnUnlessImmortal: removeOnUnlessImmortal, mainActor: mainActor)
        guard r == Int32(CF_REG_ADDED) else { return CancelRegistration(neverRuns: r != Int32(CF_REG_CANCELLED)) }
        guard let node = _asNode else { return CancelRegistration(neverRuns: false) }
        return CancelRegistration(owner: owner, node: node)
    }
}

extension _NodeRef {

    /// `_register`'s work, the only caller of `cf_token_register`. From one
    /// read of the token's word it does one of four things with this node:
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
    ///
    /// `reachable`: another thread may already reach this node — an
    /// `unless` link, whose target is published before it — so it takes no
    /// shortcut: the push, and on a settled token its claim, decide (a
    /// remover may win).
    @usableFromInline
    func _enter(_ owner: AnyObject, _ queue: DispatchQueue?, _ unless: CancelToken, inline: Bool,
                      queueBehindStartedWork: Bool, removeOnUnlessImmortal: Bool, mainActor: Bool,
                      reachable: Bool = false) -> Int32 {
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
        // The threading contract, which `_RunPolicy.hop` reads.
        assert(inline || { if case .inline = policy.pointee { true } else { false } }(),
               "a node's threading is recorded once")
        switch (mainActor, inline, queue) {
        case (true, _, _): policy.pointee = .mainActor
        case (false, false, let q?) where q !== DispatchQueue.completingThread: policy.pointee = .queue(q)
        case (false, false, nil) where _isOnMain(): policy.pointee = .mainQueueUnlessThere
        case (false, false, _): policy.pointee = .completingThread
        default: break   // inline: the library's bookkeeping keeps its policy
        }
        // Its own word, and the root's only when that one is linked: the
        // common path loads once. A link made after this load is met by
        // the push.
        var w = reachable ? 0 : cf_token_load(_ownTokenPtr(owner))
        if _slowPath(w & UInt(CF_W_LINKED) != 0) { w = cf_token_load(_tokenPtr(owner)) }
        if w & _wCancelled != 0 && !(queueBehindStartedWork && cf_drain_must_queue() != 0) {
            cf_node_settle_private(c, UInt(CF_N_CLAIMED))
            _runNow(unless: hasUnless ? unless : .immortal, counted: queueBehindStartedWork)
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
                                     on: unless._owner.unsafelyUnwrapped, removeOnDiscard: removeOnUnlessImmortal)
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
            // order" and "Stack depth"). The queue takes that reference; the node keeps
            // its `unless` link and can be removed until its turn, as if
            // listed.
            cf_node_enqueue(c, _wCancelled)
            r = Int32(CF_REG_ADDED)
        }
        if r == Int32(CF_REG_ADDED) {
            // A terminal `unless` here is met by the link's own entry (it
            // runs and removes this node, or is discarded). If this node
            // settled first it already removed the link, which then sits in
            // the list as a removed node, counted, until cleanup or settle
            // unlinks it.
            if let link {
                _ = _NodeRef(link._ptr)._enter(unless._owner.unsafelyUnwrapped, nil, .immortal, inline: true,
                                queueBehindStartedWork: true, removeOnUnlessImmortal: false, mainActor: false,
                                reachable: true)
            }
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
}

/// The `unless` a continuation on the token stored in `owner` obeys: that
/// token itself is never cancelled *before* the continuation runs, so as
/// `unless` it never stops anything.
@inlinable @inline(__always)
func _unless(_ unless: CancelToken, forContinuationOn owner: AnyObject) -> CancelToken {
    unless._owner === owner ? .immortal : unless
}

/// Runs `work` on `queue`; on the main queue after every hop sent there
/// before it (`_MainQueueHops`, which `Future.wait()` serves).
func _hop(to queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) {
    if _MainQueueHops.isMain(queue) { _MainQueueHops.send(work) } else { queue.async(execute: work) }
}

/// Runs `work` here, or, on the timer driver's thread, on the firing pool
/// (cf_firing_pool.h): for the library's bookkeeping that ends in user
/// code, such as `Task.cancel()`, which runs the task's cancellation
/// handlers where it is called. The driver never runs user code.
func _runOffTheDriver(_ work: @escaping @Sendable () -> Void) {
    guard cf_wheel_on_driver_thread() != 0 else { return work() }
    let node = _HandlerNode._make(work)
    node._policy = .completingThread
    _NodeRef(node._ptr)._runAfterHop(to: .completingThread, unless: .immortal)
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

/// The output of a continuation that will never run (its source is
/// immortal): it fails with `CancellationError` when the `unless` token
/// (owned by `unlessOwner`) is cancelled, and becomes immortal when that
/// token does, or at once without one. The registration on the `unless`
/// token holds the output alone: the continuation's function and its input
/// are already released, so a long-lived `unless` keeps nothing the
/// continuation captured alive.
@usableFromInline
func _failOnUnless(_ output: any _ContinuationOutput, _ unlessOwner: AnyObject?) {
    guard let uo = unlessOwner else {
        output._tryImmortalize()
        return
    }
    _ContinuationNode._make(output: output) { output._failCancelled() }._register(on: uo, inline: true)
}

extension CancelToken {
    /// The library's own handlers (links between sources, timers, combinator
    /// bookkeeping): `action` runs inline on the cancelling thread, with no
    /// main-queue hop and no queue — at once if this token is already
    /// cancelled; never if it is or becomes immortal (nothing is registered on
    /// `.immortal` or a settled token), or if `unless` is cancelled first.
    /// `removeOnUnlessImmortal`: the registration also goes when `unless`
    /// becomes immortal.
    @discardableResult
    func _whenCancelledInline(unless: CancelToken, removeOnUnlessImmortal: Bool = false,
                              _ action: @escaping @Sendable () -> Void) -> CancelRegistration {
        guard let owner = _owner else { return CancelRegistration(neverRuns: true) }
        return _HandlerNode._make(action)._register(on: owner, unless: unless, inline: true, queueBehindStartedWork: false,
                                                    removeOnUnlessImmortal: removeOnUnlessImmortal)
    }

    /// Library bookkeeping that must happen once the token settles either
    /// way (removing registrations that stopped mattering, stopping a
    /// timer): `action` runs inline on the settling thread when the token is
    /// cancelled or becomes immortal, at once if it already has. Returns the
    /// registration, for bookkeeping that itself stops mattering earlier.
    @discardableResult
    func _whenSettledInline(_ action: @escaping @Sendable () -> Void) -> CancelRegistration {
        guard let owner = _owner else { action(); return CancelRegistration(neverRuns: false) }
        let n = _HandlerNode._make(action)
        n._policy = .inlineWhenSettled
        let r = n._register(on: owner, inline: true, queueBehindStartedWork: false)
        // Not pushed: `action` has run, whichever way the token settled.
        return r._node != nil ? r : CancelRegistration(neverRuns: false)
    }

    /// Removes `registrations` (O(n), once) when this token settles either
    /// way: what a combinator registered on its inputs stops mattering with
    /// its result.
    func _removeWhenSettled(_ registrations: [CancelRegistration]) {
        _whenSettledInline { for r in registrations { r.remove() } }
    }
}
