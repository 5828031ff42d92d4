import CCollapsingFutures
import Dispatch

/// What a continuation node does with its source's outcome. Stored inline
/// in the node, so a `then` step costs the result future, the node and the
/// caller's closure context: three allocations.
enum _Step<T: Sendable, U: Sendable> {
    case then(@Sendable (T) throws -> U)
    case thenFuture(@Sendable (T) throws -> Future<U>)
    case catchValue(@Sendable (any Error) throws -> U)           // U == T
    case catchFuture(@Sendable (any Error) throws -> Future<U>)  // U == T
    case finally(@Sendable (Future<T>) throws -> U)
    case finallyFuture(@Sendable (Future<T>) throws -> Future<U>)
    case forward                                                 // U == T
    case thenDo(@Sendable (T) -> Void)
    case catchDo(@Sendable (any Error) -> Void)
    case finallyDo(@Sendable (Future<T>) -> Void)
}

final class _StepNode<T: Sendable, U: Sendable>: _Node, @unchecked Sendable {
    var source: Future<T>?
    var step: _Step<T, U>?
    var output: Future<U>?

    init(source: Future<T>, step: _Step<T, U>, output: Future<U>?) {
        self.source = source
        self.step = step
        self.output = output
    }

    override func _run() {
        guard let source, let step else { return }
        let out = output
        self.source = nil; self.step = nil; self.output = nil
        let r = source._result!
        switch step {
        case .then(let f):
            switch r {
            case .success(let v): out!._trySet(Result { try f(v) })
            case .failure(let e): out!._trySet(.failure(e))
            }
        case .thenFuture(let f):
            switch r {
            case .success(let v):
                do { out!._trySetFuture(try f(v)) } catch { out!._trySet(.failure(error)) }
            case .failure(let e): out!._trySet(.failure(e))
            }
        case .catchValue(let f):
            switch r {
            case .success(let v): out!._trySet(.success(v as! U))
            case .failure(let e): out!._trySet(Result { try f(e) })
            }
        case .catchFuture(let f):
            switch r {
            case .success(let v): out!._trySet(.success(v as! U))
            case .failure(let e):
                do { out!._trySetFuture(try f(e)) } catch { out!._trySet(.failure(error)) }
            }
        case .finally(let f):
            out!._trySet(Result { try f(source) })
        case .finallyFuture(let f):
            do { out!._trySetFuture(try f(source)) } catch { out!._trySet(.failure(error)) }
        case .forward:
            out!._trySet(r.map { $0 as! U })
        case .thenDo(let f):
            if case .success(let v) = r { f(v) }
        case .catchDo(let f):
            if case .failure(let e) = r { f(e) }
        case .finallyDo(let f):
            f(source)
        }
    }

    override func _discard() {
        let out = output
        source = nil; step = nil; output = nil
        out?._tryImmortalize()
    }

    override func _removed(byUnless: Bool) {
        let out = output
        source = nil; step = nil; output = nil
        if byUnless {
            out?._trySet(.failure(CancellationError()))
        } else {
            _settleCompanion()
        }
    }
}

extension Future {
    /// Attaches `step`; returns `output` (or nil for the `Do` forms).
    @inline(__always)
    func _chain<U>(_ queue: DispatchQueue?, _ unless: CancelToken, _ step: _Step<Value, U>,
                   output: Future<U>?) {
        if unless.isCancelled {
            output?._trySet(.failure(CancellationError()))
            return
        }
        let w = _word
        if w & _wImmortal != 0 || unless._owner === self {
            // Never runs: the output can never complete either.
            output?._tryImmortalize()
            return
        }
        let node = _StepNode(source: self, step: step, output: output)
        node._setThreading(queue)
        if w & _wCancelled != 0 {
            if cf_node_claim(node._ptr, UInt(CF_N_CLAIMED)) != 0 { node._dispatchRun() }
            return
        }
        _ = completionToken._add(node, unless: unless)
    }

    // MARK: continuations

    /// When this succeeds, its value mapped by `f`; failures pass through.
    /// A throwing `f` fails the result. If `unless` is cancelled first, `f`
    /// never runs (it is released at once) and the result fails with
    /// `CancellationError`. Threading as `CancelToken.whenCancelled`.
    public func then<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (Value) throws -> U) -> Future<U> {
        let out = Future<U>()
        _chain(queue, unless, .then(f), output: out)
        return out
    }

    /// Collapsing form of `then`: the result takes on the returned future's outcome.
    public func then<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (Value) throws -> Future<U>) -> Future<U> {
        let out = Future<U>()
        _chain(queue, unless, .thenFuture(f), output: out)
        return out
    }

    /// When this fails, the value `f` recovers from the error; values pass through.
    public func `catch`(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (any Error) throws -> Value) -> Future<Value> {
        let out = Future<Value>()
        _chain(queue, unless, .catchValue(f), output: out)
        return out
    }

    /// Collapsing form of `catch`.
    public func `catch`(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (any Error) throws -> Future<Value>) -> Future<Value> {
        let out = Future<Value>()
        _chain(queue, unless, .catchFuture(f), output: out)
        return out
    }

    /// When this completes either way, `f` of this (completed) future.
    public func finally<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                           _ f: @escaping @Sendable (Future<Value>) throws -> U) -> Future<U> {
        let out = Future<U>()
        _chain(queue, unless, .finally(f), output: out)
        return out
    }

    /// Collapsing form of `finally`.
    public func finally<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                           _ f: @escaping @Sendable (Future<Value>) throws -> Future<U>) -> Future<U> {
        let out = Future<U>()
        _chain(queue, unless, .finallyFuture(f), output: out)
        return out
    }

    /// Runs `f` with the value if this succeeds.
    public func thenDo(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                       _ f: @escaping @Sendable (Value) -> Void) {
        _chain(queue, unless, _Step<Value, Value>.thenDo(f), output: nil)
    }

    /// Runs `f` with the error if this fails.
    public func catchDo(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (any Error) -> Void) {
        _chain(queue, unless, _Step<Value, Value>.catchDo(f), output: nil)
    }

    /// Runs `f` with this future once it completes either way.
    public func finallyDo(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                          _ f: @escaping @Sendable (Future<Value>) -> Void) {
        _chain(queue, unless, _Step<Value, Value>.finallyDo(f), output: nil)
    }

    /// The same outcome, or `CancellationError` if `token` is cancelled first.
    public func unless(_ token: CancelToken) -> Future<Value> {
        let out = Future<Value>()
        _chain(nil, token, .forward, output: out)
        return out
    }
}
