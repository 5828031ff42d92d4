import CCollapsingFutures
import Dispatch

/// An eventual value or error, completed once through its `FutureSource`.
///
/// A future is built on its `completionToken`, which is cancelled when the
/// future completes. When the source dies unset, the future becomes immortal:
/// it can never complete and discards every continuation unrun, so a consumer
/// cycle `self -> future -> handler -> self` dies with the producer.
///
/// Collapsing: a future set to another future takes on its outcome (state
/// `.flattening` meanwhile); continuations that return a future are
/// flattened too. A future set to itself, directly or through any number of
/// others, becomes immortal (every future in the cycle) instead of hanging.
/// (Only links made by setting futures to futures count: a future set to a
/// continuation of itself, `then` of itself, waits for itself.)
///
/// Threading: every member may be used from any thread. Continuations follow
/// `CancelToken.whenCancelled`'s rules: on the completing thread, on the main
/// queue when registered on the main thread, or on `on:`'s queue.
public class Future<Value: Sendable>: @unchecked Sendable, CustomStringConvertible {
    /// Must stay the first stored property: the completion token's state
    /// word and the claim word (who may set the result).
    @usableFromInline final var _c: cf_future
    /// The outcome, written once by the claim winner before the token is
    /// cancelled (release) and read only after seeing it cancelled
    /// (acquire): a success value (inline when it fits in two words, as an
    /// Int, a String, an Array or a class reference do; otherwise a
    /// retained `_ValueBox`), or a failure's `any Error`, when the token's
    /// terminal word carries CF_W_FAILED (`_store` returns that word).
    /// Not a `Result<Value, any Error>?` field: a generic class's deinit is
    /// never specialized, and destroying that field there looks up the
    /// metadata of two derived generic types on every future. `deinit` below needs only `Value`'s own metadata,
    /// and nothing at all for a trivial `Value`. Not a separate error
    /// field either: without it a future takes glibc's 80-byte chunks,
    /// not 96. A step future (`_StepFuture`) holds its step here until it
    /// runs.
    @exclusivity(unchecked) @usableFromInline final var _words: (UInt, UInt) = (0, 0)
    /// The flattening target (a `Future<Value>`), written once by the claim
    /// winner before FLATTENING is published (`_publishTarget`) and read
    /// by cycle walkers on any thread (`_loadTarget`). Not a `weak var`:
    /// that allocates a side table for every target and costs a runtime
    /// call in every future's init and deinit. We hold an unowned count on
    /// the target instead (released in `deinit`), which keeps its memory
    /// valid, and walkers take a strong reference with `cf_try_retain`,
    /// which fails once the target is deinitializing: a weak reference's
    /// semantics (cf_swift_runtime.h). A step future (`_StepFuture`) holds
    /// its input here, retained, until its step runs; it is not flattening
    /// until then, so walkers never read it.
    @exclusivity(unchecked) @usableFromInline final var _targetRef: UnsafeMutableRawPointer?

    /// A pending future. (Subclassed by `_StepFuture` alone, internal: the
    /// class is not open, and every member but these is declared in
    /// extensions, so is never overridden and needs no dynamic dispatch.)
    @inlinable init() {
        _c = cf_future()
        cf_token_init(_ownTptr, 0)
        #if DEBUG
        cf_debug_futures_add(1)
        #endif
    }

    @inlinable init(_result r: Result<Value, any Error>) {
        _c = cf_future(token: cf_token(), claim: UInt(CF_F_CLAIMED))
        cf_token_init(_ownTptr, _store(r))
        #if DEBUG
        cf_debug_futures_add(1)
        #endif
    }

    @inlinable init(_immortal: ()) {
        _c = cf_future(token: cf_token(), claim: UInt(CF_F_CLAIMED))
        cf_token_init(_ownTptr, _wImmortal)
        #if DEBUG
        cf_debug_futures_add(1)
        #endif
    }

    deinit {
        #if DEBUG
        cf_debug_futures_add(-1)
        #endif
        // The last reference is gone, so every write to the fields is visible.
        if let t = _targetRef { cf_unowned_release(t) }
        // Our own word: a linked future's outcome is its root's, never stored here.
        let w = cf_token_load(_ownTptr)
        #if DEBUG
        if w & _wImmortal != 0 { _ImmortalSites.forget(self) }
        #endif
        guard w & _wCancelled != 0 else { _abandon(word: w); return }
        // Completed itself, yet its claim word names a root: a handler came
        // before the token link, and the forwarder on the root completed
        // it. (A plain load: nothing else can touch the claim word any more.)
        if _fptr.pointee.claim >= UInt(CF_F_LINK_MIN) { _dropLink() }
        if _isFailure(w) {
            _wordsAddress.assumingMemoryBound(to: (any Error).self).deinitialize(count: 1)
        } else if Self._inline {
            if !_isPOD(Value.self) { _wordsAddress.assumingMemoryBound(to: Value.self).deinitialize(count: 1) }
        } else {
            _box.release()
        }
    }
}

extension Future {
    // MARK: construction

    /// A future that already succeeded with `value`. Disfavored, so that
    /// `Future.succeeded(f)` with `f` a future collapses (below) rather than
    /// being ambiguous with a future of a future.
    @_disfavoredOverload
    @inlinable public static func succeeded(_ value: Value) -> Future { Future(_result: .success(value)) }
    /// Collapses: returns `future` itself, which is equivalent.
    public static func succeeded(_ future: Future) -> Future { future }
    /// A future that already failed with `error`.
    @inlinable public static func failed(_ error: any Error) -> Future { Future(_result: .failure(error)) }
    /// A future that already failed with `CancellationError`.
    public static var cancelled: Future { Future(_result: .failure(CancellationError())) }
    /// A future that already failed with `TimeoutError`.
    public static var timedOut: Future { Future(_result: .failure(TimeoutError())) }
    /// A future that never completes; continuations are released at once.
    public static var immortal: Future { Future(_immortal: ()) }

    // MARK: state

    /// The current state; `.pending` and `.flattening` are volatile.
    @inlinable public var state: FutureState {
        let c = cf_future_claim_load(_fptr)
        return _isLinked ? _linkedRoot._state(claim: c) : _state(claim: c)
    }

    /// `state` from this future's own word and outcome (the root's, for a
    /// linked one) and the claim word `c` of the future asked. The own word:
    /// resolving could see a link made since `_isLinked` found none and
    /// pair the root's word with the asker's (empty) outcome.
    @inlinable func _state(claim c: UInt) -> FutureState {
        let w = cf_token_load(_ownTptr)
        if w & _wCancelled != 0 {
            return _isFailure(w) ? .failed : .succeeded
        }
        if w & _wImmortal != 0 { return .immortal }
        // Linked: pending until its completer takes the claim through (to
        // set it to a future: completing would have ended the root's wait).
        if c >= UInt(CF_F_LINK_MIN) { return c & UInt(CF_F_TAKEN) != 0 ? .flattening : .pending }
        // FLATTENING or AWAITING (set to a future linked into it).
        return c &- UInt(CF_F_FLATTENING) < 2 ? .flattening : .pending
    }

    /// Pending, flattening or immortal.
    @inlinable public var isIncomplete: Bool { _word & _wCancelled == 0 }
    /// Succeeded.
    @inlinable public var hasResult: Bool { state == .succeeded }
    /// Failed (with any error).
    @inlinable public var hasFailed: Bool { state == .failed }
    /// Failed with `CancellationError`.
    public var hasFailedWithCancel: Bool {
        if case .failure(let e)? = result { return e is CancellationError }
        return false
    }
    /// Failed with `TimeoutError`.
    public var hasFailedWithTimeout: Bool {
        if case .failure(let e)? = result { return e is TimeoutError }
        return false
    }
    /// The outcome, or `nil` while incomplete.
    @inlinable public var result: Result<Value, any Error>? { _word & _wCancelled != 0 ? _result : nil }

    /// The value. Precondition: `hasResult`.
    @inlinable public func forceGetResult() -> Value {
        guard case .success(let v)? = result else {
            fatalError("Future.forceGetResult() requires a future that succeeded, but this one is \(state): \(self)\(_immortalNote)")
        }
        return v
    }

    /// The error. Precondition: `hasFailed`.
    public func forceGetFailure() -> any Error {
        guard case .failure(let e)? = result else {
            fatalError("Future.forceGetFailure() requires a future that failed, but this one is \(state): \(self)\(_immortalNote)")
        }
        return e
    }

    /// Debug builds: why an immortal future is immortal, when its source was
    /// deallocated unset (" (its FutureSource, created at File.swift:12, …)").
    /// Empty otherwise, and always empty in release builds.
    @usableFromInline var _immortalNote: String {
        #if DEBUG
        if _word & _wImmortal != 0, let site = _ImmortalSites.site(of: self) {
            return " (its FutureSource, created at \(site), was deallocated without setting it)"
        }
        #endif
        return ""
    }

    #if DEBUG
    /// Debug builds: futures created on the calling thread minus those freed
    /// on it (tests on one thread count what a chain keeps alive).
    @_spi(Testing) public static var _aliveOnThisThread: Int { cf_debug_futures_count() }
    #endif

    /// Cancelled when the future completes; immortal if the future is.
    @inlinable public var completionToken: CancelToken { CancelToken(_owner: self) }

    public var description: String {
        switch state {
        case .pending: return "Future(pending)"
        case .flattening: return "Future(flattening)"
        case .immortal: return "Future(immortal)"
        case .succeeded: return "Future(succeeded: \(forceGetResult()))"
        case .failed: return "Future(failed: \(forceGetFailure()))"
        }
    }
}

#if DEBUG
/// Debug builds: where the source that let a future become immortal was
/// created, for `_immortalNote`. Kept beside the futures, not in them, so a
/// future's layout is the same in every build. Recorded before the
/// immortalizing settle, forgotten as the future is freed.
enum _ImmortalSites {
    private static let sites = _Locked<[ObjectIdentifier: String]>([:])

    static func record(_ site: String, for future: AnyObject) {
        sites.withLock { $0[ObjectIdentifier(future)] = site }
    }

    static func site(of future: AnyObject) -> String? {
        sites.withLock { $0[ObjectIdentifier(future)] }
    }

    static func forget(_ future: AnyObject) {
        sites.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(future)) }
    }
}
#endif
