extension CancelToken {
    /// Runs `handler` with `object` when cancelled, unless `object` is gone by
    /// then; the handler holds `object` weakly, so it never keeps it alive.
    public func whenCancelled<O: AnyObject & Sendable>(weak object: O, _ h: @escaping @Sendable (O) -> Void) {
        let ref = _Weak(object)
        whenCancelled { if let o = ref.object { h(o) } }
    }
}
