import Dispatch

extension Future {
    /// Runs `h` with `object` and the value if this succeeds and `object`
    /// still exists; the handler holds `object` weakly.
    ///
    /// `queue` and `unless` as for `thenDo(on:unless:_:)`; like
    /// `CancelToken.whenCancelled(on:unless:weak:_:)`, the handler stays registered
    /// until this future settles or `unless` is cancelled, even after
    /// `object` is gone.
    public func thenDo<O: AnyObject & Sendable>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                                                weak object: O, _ h: @escaping @Sendable (O, Value) -> Void) {
        let ref = _Weak(object)
        thenDo(on: queue, unless: unless) { v in if let o = ref.object { h(o, v) } }
    }
}
