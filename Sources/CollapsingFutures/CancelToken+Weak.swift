import Dispatch

extension CancelToken {
    /// Runs `handler` with `object` when cancelled, unless `object` is gone by
    /// then; the handler holds `object` weakly, so it never keeps it alive.
    ///
    /// `queue` and `unless` as for `whenCancelled(on:unless:_:)`. The
    /// registration stays until the token settles, `unless` is cancelled or
    /// it is removed, even after `object` is gone (Swift offers no portable
    /// hook on an object's death): on a long-lived token, pass an `unless`
    /// that ends with `object`'s owner, or remove the returned registration.
    @discardableResult
    public func whenCancelled<O: AnyObject & Sendable>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                                                       weak object: O,
                                                       _ h: @escaping @Sendable (O) -> Void) -> CancelRegistration {
        let ref = _Weak(object)
        return whenCancelled(on: queue, unless: unless) { if let o = ref.object { h(o) } }
    }
}
