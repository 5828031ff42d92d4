import CCollapsingFutures

/// Owns a plain token's state word (a `CancelTokenSource`'s token).
@usableFromInline
final class _TokenStorage: @unchecked Sendable {
    /// Must stay the first stored property.
    private var _c: cf_token

    init(terminal: UInt) {
        _c = cf_token()
        cf_token_init(_ownTokenPtr(self), terminal)
    }

    /// A source's token is never linked: its own.
    @inline(__always) var ptr: UnsafeMutablePointer<cf_token> { _ownTokenPtr(self) }

    /// A source settles its token before it goes; one nobody can cancel any
    /// more (the result of `CancelToken.all` whose nodes are all gone) is
    /// settled here.
    deinit { _settleAbandoned(ptr, word: cf_token_load(ptr)) }

    @discardableResult
    func settle(_ terminal: UInt) -> Bool { cf_token_settle(ptr, terminal) != 0 }
}
