import CCollapsingFutures

/// Owns a plain token's state word (a `CancelTokenSource`'s token).
@usableFromInline
final class _TokenStorage: @unchecked Sendable {
    /// Must stay the first stored property.
    private var _c: cf_token

    init(terminal: UInt) {
        _c = cf_token()
        cf_token_init(_tokenPtr(self), terminal)
    }

    @inline(__always) var ptr: UnsafeMutablePointer<cf_token> { _tokenPtr(self) }

    /// A source settles its token before it goes; a token nobody can cancel
    /// any more (the result of `CancelToken.all` whose nodes are all gone)
    /// is settled immortal here, so nodes still linked are released, as in
    /// `Future.deinit`.
    deinit {
        let w = cf_token_load(ptr)
        if w & _wTerminal == 0 && w != 0 { cf_token_settle(ptr, _wImmortal) }
    }

    @discardableResult
    func settle(_ terminal: UInt) -> Bool { cf_token_settle(ptr, terminal) != 0 }
}
