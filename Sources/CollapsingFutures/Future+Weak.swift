extension Future {
    /// Runs `h` with `object` and the value if this succeeds and `object`
    /// still exists; the handler holds `object` weakly.
    public func thenDo<O: AnyObject & Sendable>(weak object: O, _ h: @escaping @Sendable (O, Value) -> Void) {
        let ref = _Weak(object)
        thenDo { v in if let o = ref.object { h(o, v) } }
    }
}
