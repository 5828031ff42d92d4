// The token's state word as Swift sees it: where a token lives in its
// owner, its terminal tags, and what an owner does with it as it dies.
import CCollapsingFutures

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
