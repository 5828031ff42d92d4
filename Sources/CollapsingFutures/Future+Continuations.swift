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
        _then(f, .user(queue: queue), unless: unless)
    }

    /// Collapsing form of `then`: the result takes on the returned future's outcome.
    @inlinable @inline(__always)
    public func then<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (Value) throws -> Future<U>) -> Future<U> {
        _flatThen(f, .user(queue: queue), unless: unless)
    }

    /// When this fails, the value `f` recovers from the error; values pass through.
    /// Same threading, `unless` and immortality rules as `then`.
    @inlinable @inline(__always)
    public func `catch`(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (any Error) throws -> Value) -> Future<Value> {
        _StepFuture(from: self, _Function(f), .user(queue: queue), unless: unless) { input, f, out in
            switch input._result {
            case .success: out._trySet(input._result)
            case .failure(let e): out._trySet(Result { try f.call(e) })
            }
        }
    }

    /// Collapsing form of `catch`.
    @inlinable @inline(__always)
    public func `catch`(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (any Error) throws -> Future<Value>) -> Future<Value> {
        _StepFuture(from: self, _FutureFunction(f), .user(queue: queue), unless: unless) { input, f, out in
            switch input._result {
            case .success: out._trySet(input._result)
            case .failure(let e): out._setReturned { try f.call(e) }
            }
        }
    }

    /// When this completes either way, `f` of this (completed) future.
    @inlinable @inline(__always)
    public func finally<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                           _ f: @escaping @Sendable (Future<Value>) throws -> U) -> Future<U> {
        _StepFuture(from: self, _Function(f), .user(queue: queue), unless: unless) { input, f, out in
            out._trySet(Result { try f.call(input) })
        }
    }

    /// Collapsing form of `finally`.
    @inlinable @inline(__always)
    public func finally<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                           _ f: @escaping @Sendable (Future<Value>) throws -> Future<U>) -> Future<U> {
        _StepFuture(from: self, _FutureFunction(f), .user(queue: queue), unless: unless) { input, f, out in
            out._setReturned { try f.call(input) }
        }
    }

    /// Runs `f` with the value if this succeeds (never if `unless` is cancelled first).
    @inlinable @inline(__always)
    public func thenDo(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                       _ f: @escaping @Sendable (Value) -> Void) {
        _thenDoNode(f)._register(on: self, .user(queue: queue), unless: unless)
    }

    /// Runs `f` with the error if this fails (never if `unless` is cancelled first).
    @inlinable @inline(__always)
    public func catchDo(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (any Error) -> Void) {
        _catchDoNode(f)._register(on: self, .user(queue: queue), unless: unless)
    }

    /// Runs `f` with this future once it completes either way.
    @inlinable @inline(__always)
    public func finallyDo(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                          _ f: @escaping @Sendable (Future<Value>) -> Void) {
        _finallyDoNode(f)._register(on: self, .user(queue: queue), unless: unless)
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
        _ContinuationNode._make(output: out) { out._trySet(self._result) }._register(on: self, .library, unless: token)
        return out
    }
}

// MARK: the steps
//
// One node per kind of continuation, whatever its run policy: the public
// methods above (a queue, or the rule of `CancelToken.whenCancelled`) and
// the `on: MainActor` ones (`.mainActor`) register the same
// node. A `then`, `catch` or `finally` is its output future
// (`_StepFuture`). Each is built in the inlinable caller, so its step is
// specialized for the caller's types.

extension Future {
    /// `then`'s step, registered as `registration` says: `f` of the
    /// value; a failure passes through.
    @inlinable @inline(__always)
    func _then<U>(_ f: @escaping @Sendable (Value) throws -> U, _ registration: _Registration,
                  unless: CancelToken) -> Future<U> {
        _StepFuture(from: self, _Function(f), registration, unless: unless) { input, f, out in
            switch input._result {
            case .success(let v): out._trySet(Result { try f.call(v) })
            case .failure(let e): out._trySet(.failure(e))
            }
        }
    }

    /// The collapsing `then`'s step: the future `f` returns for the value.
    @inlinable @inline(__always)
    func _flatThen<U>(_ f: @escaping @Sendable (Value) throws -> Future<U>, _ registration: _Registration,
                      unless: CancelToken) -> Future<U> {
        _StepFuture(from: self, _FutureFunction(f), registration, unless: unless) { input, f, out in
            switch input._result {
            case .success(let v): out._setReturned { try f.call(v) }
            case .failure(let e): out._trySet(.failure(e))
            }
        }
    }

    /// A collapsing step's end: this future takes on the future `f`
    /// returns, or fails with what it throws.
    @inlinable @inline(__always)
    func _setReturned(_ f: () throws -> Future) {
        do { _trySetFuture(try f()) } catch { _trySet(.failure(error)) }
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
    /// failure is passed on to `out` (a combinator's output). Inlined:
    /// unspecialized, this generic call would look up `out`'s metadata on
    /// every run.
    @inlinable @inline(__always)
    func _value<U>(passingFailureTo out: Future<U>) -> Value? {
        switch _result {
        case .success(let v): return v
        case .failure(let e): out._trySet(.failure(e)); return nil
        }
    }
}
