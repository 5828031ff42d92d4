// The thin layer over the C core: handler nodes as Swift objects.
//
// A node is one Swift object whose FIRST stored property is the C `cf_node`;
// `_getUnsafePointerToStoredProperties` (the technique swift-atomics'
// ManagedAtomic uses) gives its stable address, so a registration costs one
// allocation for the node plus the caller's closure context. The token's list
// holds one +1 reference on the node (handed back with every C callback); each
// `CancelRegistration` holds another, so `remove()` is safe at any time.
//
// Whoever wins the node's CAS out of LIVE (run, discard or remove) owns the
// node's Swift fields from then on; before that only the registering thread
// wrote them, and the C release-CAS that published the node orders those
// writes. That is why the subclasses' `var`s need no lock, and why their
// dynamic exclusivity checks are turned off (`@exclusivity(unchecked)`): the
// C core's CAS already makes every access exclusive.
import CCollapsingFutures
import Dispatch

@usableFromInline
class _Node: @unchecked Sendable {
    /// Must stay the first stored property: the C core's view of this node.
    private final var _c = cf_node()
    /// Where to run: `_queue` if set; else the main queue when registered on
    /// the main thread and settled elsewhere; else inline.
    @exclusivity(unchecked)
    final var _queue: DispatchQueue?
    @exclusivity(unchecked)
    final var _mainSticky = false
    /// The unless-link registered on the `unless:` token, removed when this
    /// node settles so nothing accumulates on a long-lived `unless` token.
    @exclusivity(unchecked)
    final var _companion: CancelRegistration?

    @inline(__always)
    final var _ptr: UnsafeMutablePointer<cf_node> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: cf_node.self)
    }

    @usableFromInline init() {
        // The list's reference is taken in `_register`; ctx is this object.
        // The callback takes back that reference and performs the event.
        cf_node_init(_ptr, { ctx, event in
            let node = Unmanaged<_Node>.fromOpaque(ctx!).takeRetainedValue()
            if event == Int32(CF_EV_RUN.rawValue) {
                node._settleCompanion()
                node._dispatchRun()
            } else if event == Int32(CF_EV_DISCARD.rawValue) {
                let unlessOwner = node._companion?._owner
                node._settleCompanion()
                node._discarded(unless: unlessOwner)
            }
        }, Unmanaged.passUnretained(self).toOpaque())
        // The state word keeps its tags in the low four bits of node pointers.
        assert(UInt(bitPattern: _ptr) & 15 == 0, "cf_node must be 16-byte aligned")
    }

    /// Claimed by a cancel: run the handler (already on the right thread).
    @usableFromInline func _run() {}
    /// Claimed by an immortalize: drop the handler unrun.
    @usableFromInline func _discard() {}
    /// Claimed by an immortalize; `unless` is the owner of the `unless:`
    /// token this node was registered with (its link already removed), for
    /// nodes whose output that token can still fail. Default: `_discard()`.
    @usableFromInline func _discarded(unless: AnyObject?) { _discard() }
    /// Claimed by `remove()`; `byUnless` when the `unless:` token fired.
    @usableFromInline func _removed(byUnless: Bool) {}

    @inline(__always)
    final func _settleCompanion() {
        if let c = _companion {
            _companion = nil
            c._removeQuietly()
        }
    }

    /// Runs `_run` where the threading contract says.
    final func _dispatchRun() {
        if let q = _queue {
            q.async { self._run() }
        } else if _mainSticky && cf_is_main_thread() == 0 {
            DispatchQueue.main.async { self._run() }
        } else {
            _run()
        }
    }

    /// Records the threading contract for `_dispatchRun`.
    @inline(__always)
    final func _setThreading(_ queue: DispatchQueue?) {
        if let queue {
            if queue !== DispatchQueue.completingThread { _queue = queue }
        } else if cf_is_main_thread() != 0 {
            _mainSticky = true
        }
    }
}

/// The object a token's state word lives in: `_TokenStorage` for sources,
/// `Future` for completion tokens. Its first stored property is a `cf_token`.
@inlinable @inline(__always)
func _tokenPtr(_ owner: AnyObject) -> UnsafeMutablePointer<cf_token> {
    _getUnsafePointerToStoredProperties(owner).assumingMemoryBound(to: cf_token.self)
}

/// Registers `node` on the token stored in `owner`. Returns CF_REG_ADDED
/// (the list, or this thread's drain queue, took a reference) or the
/// terminal state found (nothing linked).
/// When it returns a terminal state, it has also settled the unlinked node
/// itself (claim, then run or discard), unless a remover got there first.
/// Companions are always pushed after their node, so a node that found its
/// token settled has an unpushed companion: it is dropped, not removed (no
/// token counts a removal of a node it never linked).
@inline(__always)
func _register(_ owner: AnyObject, _ node: _Node) -> Int32 {
    let u = Unmanaged.passRetained(node)
    let r = cf_token_register(_tokenPtr(owner), node._ptr)
    if r == Int32(CF_REG_ADDED) { return r }
    if r == Int32(CF_REG_CANCELLED) && cf_drain_must_queue() != 0 {
        // Inside a handler that has started work still waiting: queue behind
        // it (cf_core.h, "Drain order"). The queue takes `u`; the node keeps
        // its companion and can be removed until its turn, as if listed.
        cf_node_enqueue(node._ptr, _wCancelled)
        return Int32(CF_REG_ADDED)
    }
    u.release()
    let unlessOwner = node._companion?._owner
    node._companion = nil
    let cancelled = r == Int32(CF_REG_CANCELLED)
    if cf_node_claim(node._ptr, UInt(cancelled ? CF_N_CLAIMED : CF_N_DISCARDED)) != 0 {
        if cancelled { node._dispatchRun() } else { node._discarded(unless: unlessOwner) }
    }
    return r
}

/// Owns a plain token's state word (a `CancelTokenSource`'s token).
final class _TokenStorage: @unchecked Sendable {
    /// Must stay the first stored property.
    private var _c: cf_token

    init(terminal: UInt) {
        _c = cf_token()
        cf_token_init(_tokenPtr(self), terminal)
    }

    @inline(__always) var ptr: UnsafeMutablePointer<cf_token> { _tokenPtr(self) }

    @discardableResult
    func settle(_ terminal: UInt) -> Bool { cf_token_settle(ptr, terminal) != 0 }
}

@inlinable var _wCancelled: UInt { UInt(CF_W_CANCELLED) }
@inlinable var _wImmortal: UInt { UInt(CF_W_IMMORTAL) }
@inlinable var _wTerminal: UInt { UInt(CF_W_TERMINAL) }

/// A node that runs a closure.
@usableFromInline
final class _HandlerNode: _Node, @unchecked Sendable {
    @exclusivity(unchecked) @usableFromInline
    var handler: (@Sendable () -> Void)?

    /// Library bookkeeping that must happen whichever way the token settles
    /// (removing registrations that stopped mattering): run on discard too.
    @usableFromInline let runOnDiscard: Bool

    @inlinable init(_ handler: @escaping @Sendable () -> Void) {
        self.handler = handler
        self.runOnDiscard = false
        super.init()
    }

    init(runOnDiscard: Bool, _ handler: @escaping @Sendable () -> Void) {
        self.handler = handler
        self.runOnDiscard = runOnDiscard
        super.init()
    }

    @usableFromInline override func _run() {
        let h = handler
        handler = nil
        h?()
    }
    @usableFromInline override func _discard() {
        let h = handler
        handler = nil
        if runOnDiscard { h?() }
    }
    @usableFromInline override func _removed(byUnless: Bool) {
        handler = nil
        if !byUnless { _settleCompanion() } else { _companion = nil }
    }
}

/// Registered on an `unless:` token: when it is cancelled, removes `target`.
/// With `removeOnDiscard` it also removes `target` when the `unless` token
/// becomes immortal (used by linked sources, whose leaf must not outlive them).
final class _UnlessNode: _Node, @unchecked Sendable {
    @exclusivity(unchecked)
    var target: CancelRegistration?
    let removeOnDiscard: Bool

    init(target: CancelRegistration, removeOnDiscard: Bool) {
        self.target = target
        self.removeOnDiscard = removeOnDiscard
    }

    override func _run() {
        let t = target
        target = nil
        t?._removeByUnless()
    }
    override func _discard() {
        let t = target
        target = nil
        if removeOnDiscard { t?._removeQuietly() }
    }
    override func _removed(byUnless: Bool) { target = nil }
}
