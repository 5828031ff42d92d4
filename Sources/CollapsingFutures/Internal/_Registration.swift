// The registration path: every registration — user handlers, continuations
// and `then`/`thenDo` steps, the library's bookkeeping — takes `_attach`,
// which meets the token's C state word once and does what the meeting says:
//   _meet      one read of the word (and of `unless`): a `_Meeting` —
//              run now (no node is allocated unless the run hops), never
//              run, `unless` came first, or push;
//   _add       push a node with its `unless` link;
//   _register  the C push, and the fallback when the token settled between
//              `_meet` and the push (claim the unlinked node, run or discard).
// Callers say only what running now, never running and `unless` first mean
// for them, and which node to push: `whenCancelled`, `_whenCancelledInline`,
// `_whenSettledInline`, `_chain` (continuations as a body closure) and
// `_chainStep`/`_chainFlatStep`/`_chainSink` (steps as data), the last four
// through `_attachContinuation`.
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

/// Registers `node` on the token stored in `owner`. Returns CF_REG_ADDED
/// (the list, or this thread's drain queue, took a reference) or the
/// terminal state found (nothing linked).
/// When it returns a terminal state, it has also settled the unlinked node
/// itself (claim, then run or discard), unless a remover got there first.
/// Links are always pushed after their node, so a node that found its
/// token settled has an unpushed link: it is dropped, not removed (no
/// token counts a removal of a node it never linked).
/// Also called directly for nodes with no `unless` link and no threading:
/// the flattening forwarder, `_failOnUnless`'s watch and an awaiting
/// task's node (`_ResumeNode`).
@usableFromInline @inline(__always)
func _register(_ owner: AnyObject, _ node: _Node) -> Int32 {
    let u = Unmanaged.passRetained(node)
    // Its own token first (one load less than resolving on every push);
    // linked, before or meanwhile: once more on the root, never linked.
    var r = cf_token_register(_ownTokenPtr(owner), node._ptr)
    if r == Int32(CF_REG_LINKED) { r = cf_token_register(_tokenPtr(owner), node._ptr) }
    if r == Int32(CF_REG_ADDED) { return r }
    if r == Int32(CF_REG_CANCELLED) && cf_drain_must_queue() != 0 {
        // Inside a handler that has started work still waiting, or too many
        // inline runs deep: queue behind it (cf_core.h, "Drain order" and
        // "Stack depth"). The queue takes `u`; the node keeps its `unless` link
        // and can be removed until its turn, as if listed.
        cf_node_enqueue(node._ptr, _wCancelled)
        return Int32(CF_REG_ADDED)
    }
    u.release()
    let cancelled = r == Int32(CF_REG_CANCELLED)
    // The node's fields are touched only by the winner of its CAS out of
    // LIVE: a remover may already hold its registration (an unless link's,
    // held by the node it links, which can run meanwhile), and then it owns
    // them. A node with an `unless` link has no registration out yet (it
    // is handed out, and the link pushed, only once the node is listed),
    // so this claim is its to win.
    guard cf_node_claim(node._ptr, UInt(cancelled ? CF_N_CLAIMED : CF_N_DISCARDED)) != 0 else { return r }
    node._settleUnlisted(cancelled: cancelled)
    return r
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

/// Decides how a registration on the token stored in `owner` meets it.
/// `queueBehindStartedWork`: a registration on a cancelled token made inside
/// a handler that has started work still waiting queues behind that work
/// (cf_core.h, "Drain order"), and so does one made `CF_INLINE_DEPTH_MAX`
/// inline runs deep ("Stack depth"), instead of running now; the library's
/// inline bookkeeping runs now.
@usableFromInline @inline(__always)
func _meet(_ owner: AnyObject, unless: CancelToken, queueBehindStartedWork: Bool) -> _Meeting {
    if unless.isCancelled { return .unlessFirst }
    // Its own word, and the root's only when that one is linked: the
    // common path loads once. A link made after this load is met by
    // `_register`'s push.
    var w = cf_token_load(_ownTokenPtr(owner))
    if _slowPath(w & UInt(CF_W_LINKED) != 0) { w = cf_token_load(_tokenPtr(owner)) }
    if w & _wImmortal != 0 { return .neverRuns }
    if w & _wCancelled != 0 && !(queueBehindStartedWork && cf_drain_must_queue() != 0) { return .runNow }
    return .push
}

/// The one registration path, on the token stored in `owner`: what the
/// meeting (`_meet`) says is done here, once —
/// - `unless` already cancelled: `stopped()`;
/// - the token is immortal: `never()`;
/// - the token is cancelled: `run()` here, as one counted inline run (the
///   token bookkeeping, `queueBehindStartedWork` false, uncounted: it runs
///   now whatever the depth); or, when `queue` says to hop, `node()` runs
///   there after the hop, unless `unless` was cancelled meanwhile (then it
///   is removed by it, as a queued node is: `_Node._runAfterHop`);
/// - still cancellable: `node()` is pushed, with its `unless` link.
/// `inline`: the library's bookkeeping, run on the completing thread
/// whatever thread registered it (no queue, no main-queue hop).
/// `queueBehindStartedWork`: false for the token bookkeeping that runs now
/// even inside a handler whose started work still waits.
/// The registration is built here, inlined into the caller, so one the
/// caller discards costs no reference counting.
@inlinable @inline(__always)
func _attach(_ owner: AnyObject, _ queue: DispatchQueue?, unless: CancelToken, inline: Bool = false,
             queueBehindStartedWork: Bool = true, removeOnUnlessImmortal: Bool = false,
             stopped: () -> Void, never: () -> Void, run: () -> Void,
             node: () -> _Node) -> CancelRegistration {
    switch _meet(owner, unless: unless, queueBehindStartedWork: queueBehindStartedWork) {
    case .unlessFirst:
        stopped()
        return CancelRegistration(neverRuns: true)
    case .neverRuns:
        never()
        return CancelRegistration(neverRuns: true)
    case .runNow:
        // The registering thread is the completing one here, so the
        // main-thread rule holds without a hop; only a queue hops. Such a
        // node is never registered nor linked to `unless`: a flatten step's
        // node may become its output's forwarder when it runs there.
        if !inline, !_runsInline(queue), let queue {
            node()._runAfterHop(to: queue, unless: unless)
        } else if queueBehindStartedWork {
            _inline(run)
        } else {
            run()
        }
        return CancelRegistration(neverRuns: false)
    case .push:
        let n = node()
        let r = _pushHandler(owner, n, queue, unless, inline: inline, removeOnUnlessImmortal: removeOnUnlessImmortal)
        return r == Int32(CF_REG_ADDED) ? CancelRegistration(owner: owner, node: n)
                                        : CancelRegistration(neverRuns: r != Int32(CF_REG_CANCELLED))
    }
}

/// `_attach`'s push: records the threading contract (unless `inline`) and
/// pushes `node` with its `unless` link (`_add`).
@usableFromInline
func _pushHandler(_ owner: AnyObject, _ node: _Node, _ queue: DispatchQueue?, _ unless: CancelToken,
                  inline: Bool, removeOnUnlessImmortal: Bool) -> Int32 {
    if !inline { node._setThreading(queue) }
    // The common case here, without the unless link: `_register` inlined.
    guard unless._owner != nil else { return _register(owner, node) }
    return CancelToken(_owner: owner)._add(node, unless: unless, removeOnUnlessImmortal: removeOnUnlessImmortal)
}

/// Runs `work` on `queue`; on the main queue after every hop sent there
/// before it (`_MainQueueHops`, which `Future.wait()` serves).
func _hop(to queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) {
    if _MainQueueHops.isMain(queue) { _MainQueueHops.send(work) } else { queue.async(execute: work) }
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

/// Attaches a continuation to the future `source` (non-generic: the body was
/// specialized by the caller). `output` is failed or made immortal when the
/// continuation can never run. `body(false)` (`unless` came first) must do
/// nothing but fail `output` with `CancellationError`: when the source
/// becomes immortal first, `_failOnUnless` does exactly that without the
/// body, which is released at once. `inline`: library bookkeeping, run on the
/// completing thread whatever thread registered it (no main-queue hop).
/// Returns the registration (for combinators that remove their own).
@usableFromInline @discardableResult
func _chain(_ source: AnyObject, _ queue: DispatchQueue?, _ unless: CancelToken, output: AnyObject?,
            inline: Bool = false, _ body: @escaping (Bool) -> Void) -> CancelRegistration {
    _attachContinuation(source, queue, unless, output, inline: inline, run: body,
                        node: { _ContinuationNode(output: output, body) })
}

/// `_chain` for a `then` step (`_StepNode`): the input, the user's function
/// and the output are passed to `step` rather than captured in a body
/// closure. Specialized in the caller.
@inlinable @inline(__always)
func _chainStep<A, R>(_ input: Future<A>, _ queue: DispatchQueue?, _ unless: CancelToken,
                      _ f: @escaping (A) throws -> R, _ output: Future<R>,
                      _ step: @escaping _StepNode<A, R>.Step) {
    _attachContinuation(input, queue, unless, output, run: { step(input, f, output, $0) },
                        node: { _StepNode._make(input, f, output, step) })
}

/// `_chainStep` for a collapsing step (`_FlatStepNode`: `then`, `catch`,
/// `finally`; `f` takes an `A` made from the input's `I` by `step`).
@inlinable @inline(__always)
func _chainFlatStep<I, A, R>(_ input: Future<I>, _ queue: DispatchQueue?, _ unless: CancelToken,
                             _ f: @escaping (A) throws -> Future<R>, _ output: Future<R>,
                             _ step: @escaping _FlatStepNode<I, A, R>.Step) {
    _attachContinuation(input, queue, unless, output, run: { if let inner = step(input, f, output, $0) { output._trySetFuture(inner.takeRetainedValue()) } },
                        node: { _FlatStepNode._make(input, f, output, step) })
}

/// `_chainStep` for a `thenDo` (`_SinkNode`): nothing to fail or make
/// immortal when it never runs.
@inlinable
func _chainSink<A>(_ input: Future<A>, _ queue: DispatchQueue?, _ unless: CancelToken,
                   _ f: @escaping (A) -> Void, _ step: @escaping _SinkNode<A>.Step) {
    _attachContinuation(input, queue, unless, nil, run: { if $0 { step(input, f) } },
                        node: { _SinkNode._make(input, f, step) })
}

/// `_attach` for a continuation on the future `input`: `run(ok)` runs it
/// (`ok` false: `unless` came first); when it never runs, `output` (nil for
/// the `Do` forms) follows `unless` (`_failOnUnless`).
@inlinable @inline(__always) @discardableResult
func _attachContinuation(_ input: AnyObject, _ queue: DispatchQueue?, _ unless: CancelToken, _ output: AnyObject?,
                         inline: Bool = false, run: (Bool) -> Void, node: () -> _Node) -> CancelRegistration {
    let unless = _unless(unless, forContinuationOn: input)
    return _attach(input, queue, unless: unless, inline: inline, stopped: { run(false) },
                   never: { if let output { _failOnUnless(output, unless._owner) } },
                   run: { run(true) }, node: node)
}

/// The `unless` a continuation on the future `source` obeys: the source's
/// own completion token is never cancelled *before* the source completes,
/// so as `unless` it never stops anything.
@inlinable @inline(__always)
func _unless(_ unless: CancelToken, forContinuationOn source: AnyObject) -> CancelToken {
    unless._owner === source ? .immortal : unless
}

/// Whether a registration on a cancelled token runs inline rather than
/// after a hop to `queue`.
@inlinable @inline(__always)
func _runsInline(_ queue: DispatchQueue?) -> Bool {
    queue == nil || queue === DispatchQueue.completingThread
}

/// The output of a continuation that will never run (its source is
/// immortal): it fails with `CancellationError` when the `unless` token
/// (owned by `unlessOwner`) is cancelled, and becomes immortal when that
/// token does, or at once without one. The registration on the `unless`
/// token holds the output alone: the continuation's function and its input
/// are already released, so a long-lived `unless` keeps nothing the
/// continuation captured alive.
@usableFromInline
func _failOnUnless(_ output: AnyObject, _ unlessOwner: AnyObject?) {
    guard let uo = unlessOwner else {
        _ = _tryImmortalizeFuture(output)
        return
    }
    guard let out = output as? any _ContinuationOutput else {
        fatalError("CollapsingFutures: a continuation's output must be a Future (got \(type(of: output)))")
    }
    _ = _register(uo, _ContinuationNode(output: output) { _ in out._failCancelled() })
}

/// Claims an unset future and makes it immortal (non-generic: C only); a
/// linked one (`Future._link`) makes its root immortal, taking the claim
/// through it.
@usableFromInline
func _tryImmortalizeFuture(_ f: AnyObject) -> Bool {
    let p = _getUnsafePointerToStoredProperties(f).assumingMemoryBound(to: cf_future.self)
    // The claim word never returns to UNSET, so a future seen claimed cannot
    // be claimed here: the common case (a source dying after it set its
    // future) costs two loads (this one and `_takeClaimThrough`'s), not a
    // failing CAS.
    if cf_future_claim_load(p) == UInt(CF_F_UNSET), cf_future_claim(p, UInt(CF_F_UNSET), UInt(CF_F_CLAIMED)) != 0 {
        cf_token_settle(_ownTokenPtr(f), _wImmortal)
        return true
    }
    guard let root = _takeClaimThrough(p) else { return false }
    cf_token_settle(_ownTokenPtr(Unmanaged<AnyObject>.fromOpaque(root).takeUnretainedValue()), _wImmortal)
    return true
}

/// For a completer that lost the claim CAS on the future `p`: if it is
/// linked (`Future._link`) and nobody took its claim through yet, takes it
/// (sets CF_F_TAKEN) and returns its root, whose claim is the caller's now;
/// otherwise nil (already claimed). The root stays referenced by `p`'s
/// claim word until `p`'s future is freed, which the caller's reference to
/// it prevents meanwhile. Full CAS: acquires the AWAITING word the link
/// published. Non-generic: C only.
@usableFromInline
func _takeClaimThrough(_ p: UnsafeMutablePointer<cf_future>) -> UnsafeMutableRawPointer? {
    let c = cf_future_claim_load(p)
    guard c >= UInt(CF_F_LINK_MIN), c & UInt(CF_F_TAKEN) == 0,
          cf_future_claim(p, c, c | UInt(CF_F_TAKEN)) != 0 else { return nil }
    return UnsafeMutableRawPointer(bitPattern: c)
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
        return _attach(owner, nil, unless: unless, inline: true, queueBehindStartedWork: false,
                       removeOnUnlessImmortal: removeOnUnlessImmortal,
                       stopped: {}, never: {}, run: action, node: { _HandlerNode._make(action) })
    }

    /// Library bookkeeping that must happen once the token settles either
    /// way (removing registrations that stopped mattering, stopping a
    /// timer): `action` runs inline on the settling thread when the token is
    /// cancelled or becomes immortal, at once if it already has. Returns the
    /// registration, for bookkeeping that itself stops mattering earlier.
    @discardableResult
    func _whenSettledInline(_ action: @escaping @Sendable () -> Void) -> CancelRegistration {
        guard let owner = _owner else { action(); return CancelRegistration(neverRuns: false) }
        let r = _attach(owner, nil, unless: .immortal, inline: true, queueBehindStartedWork: false,
                        stopped: action, never: action, run: action,
                        node: { let n = _HandlerNode._make(action); n._policy = .inlineWhenSettled; return n })
        // Not pushed: `action` has run, whichever way the token settled.
        return r._node != nil ? r : CancelRegistration(neverRuns: false)
    }

    /// Removes `registrations` (O(n), once) when this token settles either
    /// way: what a combinator registered on its inputs stops mattering with
    /// its result.
    func _removeWhenSettled(_ registrations: [CancelRegistration]) {
        _whenSettledInline { for r in registrations { r.remove() } }
    }

    /// Registers `node` with its link on `unless`, which is not `.immortal`
    /// (a node without a link takes `_register`). Returns CF_REG_ADDED, or
    /// the terminal state `_register` found and settled the node for
    /// (CF_REG_CANCELLED: it ran; CF_REG_IMMORTAL: it never will). Callers
    /// that hand out a registration build it from the node.
    ///
    /// Order matters: the link is recorded before `node` is published
    /// (so its settler reads it race-free), and the link is pushed after
    /// `node` (so a link that fires always finds `node` in its list).
    @usableFromInline
    func _add(_ node: _Node, unless: CancelToken, removeOnUnlessImmortal: Bool) -> Int32 {
        let owner = _owner.unsafelyUnwrapped
        let uo = unless._owner.unsafelyUnwrapped
        let link = _UnlessNode._make(target: CancelRegistration(owner: owner, node: node), policy: node._policy,
                               on: uo, removeOnDiscard: removeOnUnlessImmortal)
        node._policy = .linked(link)
        let r = _register(owner, node)
        if r != Int32(CF_REG_ADDED) { return r }
        // A terminal `unless` here is settled by `_register` (the link runs
        // and removes `node`, or is discarded). If `node` settled first it
        // already removed the link, which then sits in the list as a
        // removed node, counted, until cleanup or settle unlinks it.
        _ = _register(uo, link)
        return r
    }
}
