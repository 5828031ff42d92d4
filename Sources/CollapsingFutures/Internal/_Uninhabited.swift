/// The discard outcome of `CancelToken.cancelled()` (mapped to `false`).
struct _Uninhabited: Error {}
