import CCollapsingFutures

/// The handle `CancelToken.whenCancelled` returns.
///
/// Discarding it costs nothing and keeps the handler registered. Copies share
/// the one registration. `remove()` may be called from any thread, at any
/// time, any number of times.
public struct CancelRegistration: Sendable, CustomStringConvertible {
    /// The object holding the token's state word (keeps it alive for `remove`).
    @usableFromInline nonisolated(unsafe) let _owner: AnyObject?
    @usableFromInline let _node: _Node?
    /// For registrations that never linked a node: whether the handler will
    /// never run (immortal token, or `unless` already cancelled) or already ran.
    @usableFromInline let _neverRuns: Bool

    @inlinable init(owner: AnyObject, node: _Node) {
        _owner = owner
        _node = node
        _neverRuns = false
    }

    @inlinable init(neverRuns: Bool) {
        _owner = nil
        _node = nil
        _neverRuns = neverRuns
    }

    /// Removes the handler if it has not started running.
    ///
    /// - Returns: `true` if the handler will never run (removed now or
    ///   earlier, discarded by an immortal token, or never registered);
    ///   `false` if it already ran or is running. The closure is released
    ///   before this returns `true` for the first time.
    @discardableResult
    public func remove() -> Bool {
        guard let removed = _remove() else { return _neverRuns }
        if removed { return true }
        let node = _node.unsafelyUnwrapped._ptr
        defer { _NodePool.handOff(node) }
        return cf_node_state(node) != UInt(CF_N_CLAIMED)
    }

    /// `CancelRegistration(registered)`, `(removed)`, `(ran)` or
    /// `(never runs)` (discarded by an immortal token, or never registered).
    public var description: String {
        guard let node = _node else { return _neverRuns ? "CancelRegistration(never runs)" : "CancelRegistration(ran)" }
        defer { _NodePool.handOff(node._ptr) }
        switch cf_node_state(node._ptr) {
        case UInt(CF_N_LIVE): return "CancelRegistration(registered)"
        case UInt(CF_N_REMOVED): return "CancelRegistration(removed)"
        case UInt(CF_N_CLAIMED): return "CancelRegistration(ran)"
        default: return "CancelRegistration(never runs)"
        }
    }

    /// Removes the node if it is still registered: true if this call removed
    /// it, false if it had already run, been removed or discarded, nil if
    /// no node was ever linked. The node and the owner are borrowed, not
    /// copied: this registration holds both for the whole call, so they need
    /// no retain and release of their own.
    @inline(__always)
    private func _remove() -> Bool? {
        guard _node != nil, _owner != nil else { return nil }
        return _removeNode(_NodeRef(_node.unsafelyUnwrapped._ptr), from: _owner.unsafelyUnwrapped, byUnless: false)
    }
}

/// Removes `node` from the token stored in `owner` if it is still live
/// there (its `.removed` event); false when it had settled or was removed.
/// The caller holds the node's object.
@inline(__always)
func _removeNode(_ node: _NodeRef, from owner: AnyObject, byUnless: Bool) -> Bool {
    // Its list's thread may keep it (cf_node_pool.h).
    defer { _NodePool.handOff(node.c) }
    guard cf_node_remove(_tokenPtr(owner), node.c) != 0 else { return false }
    node._handle(.removed(byUnless: byUnless))
    return true
}
