import Dispatch
import Synchronization

public enum FutureState: Sendable, Hashable { case pending, flattening, succeeded, failed, immortal }
public struct TimeoutError: Error, Sendable, Hashable { public init() {} }
public enum FutureError: Error, Sendable, Hashable { case immortal }

/// Cycle detection under one global lock, as the original did.
let _flattenLock = _Lock()

public final class Future<Value: Sendable>: @unchecked Sendable, CustomStringConvertible {
    let _t: _TokenState
    // Guarded by _t.lock.
    var _result: Result<Value, any Error>?
    var _claim = 0            // 0 unset, 1 claimed, 2 flattening
    weak var _target: Future<Value>?   // guarded by _flattenLock once set

    init() { _t = _TokenState(.stillCancellable) }
    init(_result r: Result<Value, any Error>) { _t = _TokenState(.cancelled); _result = r; _claim = 1 }
    init(_immortal: ()) { _t = _TokenState(.immortal); _claim = 1 }

    @_disfavoredOverload  // `Future.succeeded(f)` collapses, as in the library
    public static func succeeded(_ value: Value) -> Future { Future(_result: .success(value)) }
    public static func succeeded(_ future: Future) -> Future { future }
    public static func failed(_ error: any Error) -> Future { Future(_result: .failure(error)) }
    public static var cancelled: Future { Future(_result: .failure(CancellationError())) }
    public static var timedOut: Future { Future(_result: .failure(TimeoutError())) }
    public static var immortal: Future { Future(_immortal: ()) }

    public var state: FutureState {
        _t.lock.sync {
            switch _t.state {
            case .cancelled: if case .success = _result! { return .succeeded } else { return .failed }
            case .immortal: return .immortal
            case .stillCancellable: return _claim == 2 ? .flattening : .pending
            }
        }
    }
    public var isIncomplete: Bool { result == nil }
    public var hasResult: Bool { state == .succeeded }
    public var hasFailed: Bool { state == .failed }
    public var hasFailedWithCancel: Bool { if case .failure(let e)? = result { return e is CancellationError }; return false }
    public var hasFailedWithTimeout: Bool { if case .failure(let e)? = result { return e is TimeoutError }; return false }
    public var result: Result<Value, any Error>? { _t.lock.sync { _t.state == .cancelled ? _result : nil } }
    public func forceGetResult() -> Value {
        guard case .success(let v)? = result else { fatalError("Future.forceGetResult() requires a future that succeeded, but this one is \(state)") }
        return v
    }
    public func forceGetFailure() -> any Error {
        guard case .failure(let e)? = result else { fatalError("Future.forceGetFailure() requires a future that failed, but this one is \(state)") }
        return e
    }
    public var completionToken: CancelToken { CancelToken(_s: _t) }
    public var description: String {
        switch state {
        case .pending: return "Future(pending)"
        case .flattening: return "Future(flattening)"
        case .immortal: return "Future(immortal)"
        case .succeeded: return "Future(succeeded: \(forceGetResult()))"
        case .failed: return "Future(failed: \(forceGetFailure()))"
        }
    }

    func _claimIt(_ to: Int) -> Bool {
        _t.lock.sync {
            guard _claim == 0 else { return false }
            _claim = to
            return true
        }
    }

    @discardableResult
    func _trySet(_ r: Result<Value, any Error>) -> Bool {
        guard _claimIt(1) else { return false }
        _complete(r)
        return true
    }

    func _complete(_ r: Result<Value, any Error>) {
        _t.lock.sync { _result = r }
        _t.settle(.cancelled)
    }

    @discardableResult
    func _tryImmortalize() -> Bool {
        guard _claimIt(1) else { return false }
        _t.settle(.immortal)
        return true
    }

    @discardableResult
    func _trySetFuture(_ other: Future) -> Bool {
        if other === self { return _tryImmortalize() }
        switch other.state {
        case .succeeded, .failed: return _trySet(other.result!)
        case .immortal: return _tryImmortalize()
        default: break
        }
        guard _claimIt(2) else { return false }
        let cycle: Bool = _flattenLock.sync {
            _target = other
            var cur: Future? = other
            var seen = Set<ObjectIdentifier>()
            while let c = cur {
                if c === self { return true }
                if !seen.insert(ObjectIdentifier(c)).inserted { return false }
                cur = c._target
            }
            return false
        }
        let e = _Entry { self._complete(other.result!) }
        e.onDiscard = { self._t.settle(.immortal) }
        _ = other.completionToken._add(e, unless: .immortal)
        if cycle { _t.settle(.immortal) }
        return true
    }

    func _chain<U>(_ queue: DispatchQueue?, _ unless: CancelToken, _ output: Future<U>?,
                   _ run: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        // Our own completion token is never cancelled before we complete: as
        // `unless` it never stops anything.
        let unless = unless == completionToken ? CancelToken.immortal : unless
        let e = _Entry { run(self.result!) }
        if let queue { e.queue = queue } else if _isMainThread() { e.mainSticky = true }
        if let output {
            // An immortal input: `run` is released; the output can still fail
            // through a live `unless`, and is immortal once it cannot.
            e.onDiscard = {
                let fail = _Entry { output._trySet(.failure(CancellationError())) }
                fail.onDiscard = { output._tryImmortalize() }
                _ = unless._add(fail, unless: .immortal)
            }
            e.onUnlessRemoved = { output._trySet(.failure(CancellationError())) }
        }
        if unless.isCancelled { e.handler = nil; e.onUnlessRemoved?(); return }
        _ = completionToken._add(e, unless: unless)
    }

    public func then<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (Value) throws -> U) -> Future<U> {
        let out = Future<U>()
        _chain(queue, unless, out) { r in
            switch r {
            case .success(let v): out._trySet(Result { try f(v) })
            case .failure(let e): out._trySet(.failure(e))
            }
        }
        return out
    }

    public func then<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (Value) throws -> Future<U>) -> Future<U> {
        let out = Future<U>()
        _chain(queue, unless, out) { r in
            switch r {
            case .success(let v): do { out._trySetFuture(try f(v)) } catch { out._trySet(.failure(error)) }
            case .failure(let e): out._trySet(.failure(e))
            }
        }
        return out
    }

    public func `catch`(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (any Error) throws -> Value) -> Future<Value> {
        let out = Future<Value>()
        _chain(queue, unless, out) { r in
            switch r {
            case .success: out._trySet(r)
            case .failure(let e): out._trySet(Result { try f(e) })
            }
        }
        return out
    }

    public func `catch`(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                        _ f: @escaping @Sendable (any Error) throws -> Future<Value>) -> Future<Value> {
        let out = Future<Value>()
        _chain(queue, unless, out) { r in
            switch r {
            case .success: out._trySet(r)
            case .failure(let e): do { out._trySetFuture(try f(e)) } catch { out._trySet(.failure(error)) }
            }
        }
        return out
    }

    public func finally<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                           _ f: @escaping @Sendable (Future<Value>) throws -> U) -> Future<U> {
        let out = Future<U>()
        _chain(queue, unless, out) { _ in out._trySet(Result { try f(self) }) }
        return out
    }

    public func finally<U>(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal,
                           _ f: @escaping @Sendable (Future<Value>) throws -> Future<U>) -> Future<U> {
        let out = Future<U>()
        _chain(queue, unless, out) { _ in
            do { out._trySetFuture(try f(self)) } catch { out._trySet(.failure(error)) }
        }
        return out
    }

    public func thenDo(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal, _ f: @escaping @Sendable (Value) -> Void) {
        _chain(queue, unless, nil as Future<Value>?) { r in if case .success(let v) = r { f(v) } }
    }
    public func catchDo(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal, _ f: @escaping @Sendable (any Error) -> Void) {
        _chain(queue, unless, nil as Future<Value>?) { r in if case .failure(let e) = r { f(e) } }
    }
    public func finallyDo(on queue: DispatchQueue? = nil, unless: CancelToken = .immortal, _ f: @escaping @Sendable (Future<Value>) -> Void) {
        _chain(queue, unless, nil as Future<Value>?) { _ in f(self) }
    }
    public func unless(_ token: CancelToken) -> Future<Value> {
        let out = Future<Value>()
        _chain(nil, token, out) { r in out._trySet(r) }
        return out
    }
}

public final class FutureSource<Value: Sendable>: Sendable {
    public let future: Future<Value>
    public init() { future = Future() }
    public init(until token: CancelToken) {
        let f = Future<Value>()
        future = f
        if token.isCancelled { f._trySet(.failure(CancellationError())) }
        else if token.canStillBeCancelled {
            _ = token._add(_Entry { f._trySet(.failure(CancellationError())) }, unless: f.completionToken,
                           removeOnUnlessImmortal: true)
        }
    }
    deinit { future._tryImmortalize() }
    @discardableResult public func trySetResult(_ value: Value) -> Bool { future._trySet(.success(value)) }
    @discardableResult public func trySetResult(_ future: Future<Value>) -> Bool { self.future._trySetFuture(future) }
    @discardableResult public func trySetFailure(_ error: any Error) -> Bool { future._trySet(.failure(error)) }
    @discardableResult public func trySetFailedWithCancel() -> Bool { future._trySet(.failure(CancellationError())) }
    @discardableResult public func trySetFailedWithTimeout() -> Bool { future._trySet(.failure(TimeoutError())) }
    @discardableResult public func trySet(_ result: Result<Value, any Error>) -> Bool { future._trySet(result) }
    public func forceSetResult(_ value: Value) { if !trySetResult(value) { fatalError("FutureSource.forceSetResult(_:) on a future that was already set") } }
    public func forceSetResult(_ future: Future<Value>) { if !trySetResult(future) { fatalError("FutureSource.forceSetResult(_:) on a future that was already set") } }
    public func forceSetFailure(_ error: any Error) { if !trySetFailure(error) { fatalError("FutureSource.forceSetFailure(_:) on a future that was already set") } }
    public func forceSetFailedWithCancel() { if !trySetFailedWithCancel() { fatalError("FutureSource.forceSetFailedWithCancel() on a future that was already set") } }
    public func forceSetFailedWithTimeout() { if !trySetFailedWithTimeout() { fatalError("FutureSource.forceSetFailedWithTimeout() on a future that was already set") } }
}

extension FutureSource where Value == Void {
    @discardableResult public func trySetResult() -> Bool { trySetResult(()) }
    public func forceSetResult() { forceSetResult(()) }
}
