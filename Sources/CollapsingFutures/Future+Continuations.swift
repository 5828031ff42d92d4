import CCollapsingFutures
import Dispatch

/// A continuation registered on a future's completion token.
///
/// Its body is a closure built by the (inlinable) public method, so it is
/// compiled specialized for the caller's types: running it touches no generic
/// metadata. A `then` step costs three allocations: the output future, this
/// node and the body's context (plus the caller's closure context, if its
/// closure captures anything).
@usableFromInline
final class _ContinuationNode: _Node, @unchecked Sendable {
    /// `body(true)`: the source completed; `body(false)`: `unless` fired first.
    @exclusivity(unchecked) @usableFromInline var body: ((Bool) -> Void)?
    /// The output future (made immortal if the source is), or nil for `Do` forms.
    @exclusivity(unchecked) @usableFromInline var output: AnyObject?

    @inlinable init(output: AnyObject?, _ body: @escaping (Bool) -> Void) {
        self.body = body
        self.output = output
        super.init()
    }

    @usableFromInline override func _run() {
        let b = body
        body = nil; output = nil
        b?(true)
    }

    @usableFromInline override func _discard() { _discarded(unless: nil) }

    /// The source became immortal: the body never runs. The output fails
    /// with `CancellationError` if the `unless` token is cancelled later (it
    /// was cancelled first), and becomes immortal if it cannot be.
    @usableFromInline override func _discarded(unless unlessOwner: AnyObject?) {
        let o = output, b = body
        body = nil; output = nil
        if let o, let b { _failOnUnless(o, unlessOwner, b) }
    }

    @usableFromInline override func _removed(byUnless: Bool) {
        let b = body
        body = nil; output = nil
        if byUnless { b?(false) } else { _settleCompanion() }
    }
}

/// Attaches a continuation to the future `source` (non-generic: the body was
/// specialized by the caller). `output` is failed or made immortal when the
/// continuation can never run. `inline`: library bookkeeping, run on the
/// completing thread whatever thread registered it (no main-queue hop).
/// Returns the registration (for combinators that remove their own).
@usableFromInline @discardableResult
func _chain(_ source: AnyObject, _ queue: DispatchQueue?, _ unless: CancelToken, output: AnyObject?,
            inline: Bool = false, _ body: @escaping (Bool) -> Void) -> CancelRegistration {
    // The source's own completion token is never cancelled *before* the
    // source completes: as `unless`, it never stops anything.
    let unless = unless._owner === source ? CancelToken.immortal : unless
    if unless.isCancelled {
        body(false)
        return CancelRegistration(neverRuns: true)
    }
    let w = cf_token_load(_tokenPtr(source))
    if w & _wImmortal != 0 {
        // Never runs; the output can still fail if `unless` is cancelled.
        if let output { _failOnUnless(output, unless._owner, body) }
        return CancelRegistration(neverRuns: true)
    }
    let node = _ContinuationNode(output: output, body)
    if !inline { node._setThreading(queue) }
    if w & _wCancelled != 0 && cf_drain_must_queue() == 0 {
        if cf_node_claim(node._ptr, UInt(CF_N_CLAIMED)) != 0 { node._dispatchRun() }
        return CancelRegistration(neverRuns: false)
    }
    return CancelToken(_owner: source)._add(node, unless: unless)
}

/// The output of a continuation that will never run (its source is
/// immortal): `body(false)` fails it with `CancellationError` when the
/// `unless` token (owned by `unlessOwner`) is cancelled; it becomes immortal
/// when that token does, or at once without one. The registration on the
/// `unless` token is the output's only owner, so nothing else keeps it pending.
@usableFromInline
func _failOnUnless(_ output: AnyObject, _ unlessOwner: AnyObject?, _ body: @escaping (Bool) -> Void) {
    guard let uo = unlessOwner else {
        _ = _tryImmortalizeFuture(output)
        return
    }
    _ = CancelToken(_owner: uo)._add(_ContinuationNode(output: output) { _ in body(false) }, unless: .immortal)
}

extension Future {
    // MARK: continuations

    /// When this succeeds, its value mapped by `f`; failures pass through.
    ///
    /// A throwing `f` fails the result. If `unless` is cancelled first, `f`
    /// never runs (it is released at once) and the result fails with
    /// `CancellationError`. If this future becomes immortal, so does the
    /// result — once `unless` can no longer fail it (until then, cancelling
    /// `unless` fails it with `CancellationError`).
    /// Threading as `CancelToken.whenCancelled`: on the completing thread, on
    /// the main queue when registered on the main thread, or on `queue`.
    @inlinable
    public func then<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (Value) throws -> U) -> Future<U> {
        let out = Future<U>()
        _chain(self, queue, unless, output: out) { ok in
            guard ok else { out._trySet(.failure(CancellationError())); return }
            switch self._result! {
            case .success(let v): out._trySet(Result { try f(v) })
            case .failure(let e): out._trySet(.failure(e))
            }
        }
        return out
    }

    /// Collapsing form of `then`: the result takes on the returned future's outcome.
    @inlinable
    public func then<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (Value) throws -> Future<U>) -> Future<U> {
        let out = Future<U>()
        _chain(self, queue, unless, output: out) { ok in
            guard ok else { out._trySet(.failure(CancellationError())); return }
            switch self._result! {
            case .success(let v):
                do { out._trySetFuture(try f(v)) } catch { out._trySet(.failure(error)) }
            case .failure(let e): out._trySet(.failure(e))
            }
        }
        return out
    }

    /// When this fails, the value `f` recovers from the error; values pass through.
    /// Same threading, `unless` and immortality rules as `then`.
    @inlinable
    public func `catch`(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (any Error) throws -> Value) -> Future<Value> {
        let out = Future<Value>()
        _chain(self, queue, unless, output: out) { ok in
            guard ok else { out._trySet(.failure(CancellationError())); return }
            switch self._result! {
            case .success: out._trySet(self._result!)
            case .failure(let e): out._trySet(Result { try f(e) })
            }
        }
        return out
    }

    /// Collapsing form of `catch`.
    @inlinable
    public func `catch`(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (any Error) throws -> Future<Value>) -> Future<Value> {
        let out = Future<Value>()
        _chain(self, queue, unless, output: out) { ok in
            guard ok else { out._trySet(.failure(CancellationError())); return }
            switch self._result! {
            case .success: out._trySet(self._result!)
            case .failure(let e):
                do { out._trySetFuture(try f(e)) } catch { out._trySet(.failure(error)) }
            }
        }
        return out
    }

    /// When this completes either way, `f` of this (completed) future.
    @inlinable
    public func finally<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                           _ f: @escaping @Sendable (Future<Value>) throws -> U) -> Future<U> {
        let out = Future<U>()
        _chain(self, queue, unless, output: out) { ok in
            guard ok else { out._trySet(.failure(CancellationError())); return }
            out._trySet(Result { try f(self) })
        }
        return out
    }

    /// Collapsing form of `finally`.
    @inlinable
    public func finally<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                           _ f: @escaping @Sendable (Future<Value>) throws -> Future<U>) -> Future<U> {
        let out = Future<U>()
        _chain(self, queue, unless, output: out) { ok in
            guard ok else { out._trySet(.failure(CancellationError())); return }
            do { out._trySetFuture(try f(self)) } catch { out._trySet(.failure(error)) }
        }
        return out
    }

    /// Runs `f` with the value if this succeeds (never if `unless` is cancelled first).
    @inlinable
    public func thenDo(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                       _ f: @escaping @Sendable (Value) -> Void) {
        _chain(self, queue, unless, output: nil) { ok in
            if ok, case .success(let v) = self._result! { f(v) }
        }
    }

    /// Runs `f` with the error if this fails (never if `unless` is cancelled first).
    @inlinable
    public func catchDo(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (any Error) -> Void) {
        _chain(self, queue, unless, output: nil) { ok in
            if ok, case .failure(let e) = self._result! { f(e) }
        }
    }

    /// Runs `f` with this future once it completes either way.
    @inlinable
    public func finallyDo(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                          _ f: @escaping @Sendable (Future<Value>) -> Void) {
        _chain(self, queue, unless, output: nil) { ok in
            if ok { f(self) }
        }
    }

    /// The same outcome, or `CancellationError` if `token` is cancelled first.
    ///
    /// No user code runs, so no threading rule applies: the result completes
    /// on the thread that completes this future or cancels `token`. If this
    /// future becomes immortal, the result fails when `token` is cancelled
    /// and is immortal once it cannot be.
    @inlinable
    public func unless(_ token: CancelToken) -> Future<Value> {
        let out = Future<Value>()
        _chain(self, nil, token, output: out, inline: true) { ok in
            out._trySet(ok ? self._result! : .failure(CancellationError()))
        }
        return out
    }
}
