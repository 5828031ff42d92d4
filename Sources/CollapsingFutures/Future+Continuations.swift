import CCollapsingFutures
import Dispatch

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
    @inlinable @inline(__always)
    public func then<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (Value) throws -> U) -> Future<U> {
        let out = Future<U>()
        _thenNode(f, out)._register(on: self, queue: queue, unless: unless)
        return out
    }

    /// Collapsing form of `then`: the result takes on the returned future's outcome.
    @inlinable
    public func then<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (Value) throws -> Future<U>) -> Future<U> {
        let out = Future<U>()
        _flatThenNode(f, out)._register(on: self, queue: queue, unless: unless)
        return out
    }

    /// When this fails, the value `f` recovers from the error; values pass through.
    /// Same threading, `unless` and immortality rules as `then`.
    @inlinable
    public func `catch`(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (any Error) throws -> Value) -> Future<Value> {
        let out = Future<Value>()
        _ContinuationNode._make(output: out) {
            switch self._result {
            case .success: out._trySet(self._result)
            case .failure(let e): out._trySet(Result { try f(e) })
            }
        }._register(on: self, queue: queue, unless: unless)
        return out
    }

    /// Collapsing form of `catch`.
    @inlinable
    public func `catch`(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (any Error) throws -> Future<Value>) -> Future<Value> {
        let out = Future<Value>()
        _FlatStepNode._make(self, f, out, Self._catchStep((any Error).self))._register(on: self, queue: queue, unless: unless)
        return out
    }

    /// When this completes either way, `f` of this (completed) future.
    @inlinable
    public func finally<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                           _ f: @escaping @Sendable (Future<Value>) throws -> U) -> Future<U> {
        let out = Future<U>()
        _ContinuationNode._make(output: out) { out._trySet(Result { try f(self) }) }._register(on: self, queue: queue, unless: unless)
        return out
    }

    /// Collapsing form of `finally`.
    @inlinable
    public func finally<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                           _ f: @escaping @Sendable (Future<Value>) throws -> Future<U>) -> Future<U> {
        let out = Future<U>()
        _FlatStepNode._make(self, f, out, Self._finallyStep(Future<Value>.self))._register(on: self, queue: queue, unless: unless)
        return out
    }

    /// The collapsing `catch`'s step, `A` being `any Error`. Written in a
    /// generic function so that the closure's `f: (A) throws -> Future<Value>`
    /// parameter is emitted at the generic abstraction `_FlatStepNode.Step`
    /// has: a closure literal with a concrete `any Error` there is wrapped
    /// in a reabstraction thunk, whose run allocates a thunk for `f` on
    /// every step. The casts are to the same type: no-ops once specialized.
    @inlinable
    static func _catchStep<A: Sendable>(_: A.Type) -> _FlatStepNode<Value, A, Value>.Step {
        { input, f, out in
            switch input._result {
            case .success: out._trySet(input._result)
            case .failure(let e):
                do { return Unmanaged.passRetained(try f(e as! A)) } catch { out._trySet(.failure(error)) }
            }
            return nil
        }
    }

    /// The collapsing `finally`'s step, `A` being `Future<Value>` (as
    /// `_catchStep`).
    @inlinable
    static func _finallyStep<A: Sendable, U>(_: A.Type) -> _FlatStepNode<Value, A, U>.Step {
        { input, f, out in
            do { return Unmanaged.passRetained(try f(input as! A)) } catch { out._trySet(.failure(error)) }
            return nil
        }
    }

    /// Runs `f` with the value if this succeeds (never if `unless` is cancelled first).
    @inlinable
    public func thenDo(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                       _ f: @escaping @Sendable (Value) -> Void) {
        _thenDoNode(f)._register(on: self, queue: queue, unless: unless)
    }

    /// Runs `f` with the error if this fails (never if `unless` is cancelled first).
    @inlinable
    public func catchDo(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (any Error) -> Void) {
        _catchDoNode(f)._register(on: self, queue: queue, unless: unless)
    }

    /// Runs `f` with this future once it completes either way.
    @inlinable
    public func finallyDo(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                          _ f: @escaping @Sendable (Future<Value>) -> Void) {
        _finallyDoNode(f)._register(on: self, queue: queue, unless: unless)
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
        _ContinuationNode._make(output: out) { out._trySet(self._result) }._register(on: self, unless: token, inline: true)
        return out
    }
}

// MARK: the steps
//
// One node per kind of continuation, whatever its run policy: the public
// methods above (a queue, or the rule of `CancelToken.whenCancelled`) and
// the `on: MainActor` ones (`_Node._register(mainActor: true)`) register
// the same node. Each is built in the inlinable caller, so its step is
// specialized for the caller's types.

extension Future {
    /// `then`'s step: `f` of the value; a failure passes through.
    @inlinable @inline(__always)
    func _thenNode<U>(_ f: @escaping @Sendable (Value) throws -> U, _ out: Future<U>) -> _StepNode<Value, U> {
        _StepNode._make(self, f, out) { input, f, out in
            if let v = input._value(passingFailureTo: out) { out._trySet(Result { try f(v) }) }
        }
    }

    /// The collapsing `then`'s step: the future `f` returns for the value.
    @inlinable @inline(__always)
    func _flatThenNode<U>(_ f: @escaping @Sendable (Value) throws -> Future<U>, _ out: Future<U>) -> _FlatStepNode<Value, Value, U> {
        _FlatStepNode._make(self, f, out) { input, f, out in
            guard let v = input._value(passingFailureTo: out) else { return nil }
            do { return Unmanaged.passRetained(try f(v)) } catch { out._trySet(.failure(error)) }
            return nil
        }
    }

    /// `thenDo`'s step.
    @inlinable @inline(__always)
    func _thenDoNode(_ f: @escaping @Sendable (Value) -> Void) -> _SinkNode<Value> {
        _SinkNode._make(self, f) { input, f in
            if case .success(let v) = input._result { f(v) }
        }
    }

    /// `catchDo`'s step.
    @inlinable @inline(__always)
    func _catchDoNode(_ f: @escaping @Sendable (any Error) -> Void) -> _ContinuationNode {
        _ContinuationNode._make(output: nil) {
            if case .failure(let e) = self._result { f(e) }
        }
    }

    /// `finallyDo`'s step.
    @inlinable @inline(__always)
    func _finallyDoNode(_ f: @escaping @Sendable (Future<Value>) -> Void) -> _ContinuationNode {
        _ContinuationNode._make(output: nil) { f(self) }
    }

    /// The value of this completed future, or nil when it failed: then its
    /// failure is passed on to `out` (a step's output), here, for every
    /// step built in specialized (inlinable) code; unspecialized, this
    /// generic call would look up `out`'s metadata on every run.
    @inlinable @inline(__always)
    func _value<U>(passingFailureTo out: Future<U>) -> Value? {
        switch _result {
        case .success(let v): return v
        case .failure(let e): out._trySet(.failure(e)); return nil
        }
    }
}
