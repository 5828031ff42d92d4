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
public final class Future<Value: Sendable>: @unchecked Sendable, CustomStringConvertible {
    /// Must stay the first stored property: the completion token's state
    /// word and the claim word (who may set the result).
    @usableFromInline var _c: cf_future
    /// The outcome, written once by the claim winner before the token is
    /// cancelled (release) and read only after seeing it cancelled
    /// (acquire): a success value in `_words` (inline when it fits in two
    /// words, as an Int, a String, an Array or a class reference do;
    /// otherwise a retained `_ValueBox`), a failure in `_error`. A completed
    /// future holds a value exactly when `_error` is nil.
    /// Not a `Result<Value, any Error>?` field: a generic class's deinit is
    /// never specialized, and destroying that field there looks up the
    /// metadata of two derived generic types on every future (a third of a
    /// `then`+set; DESIGN.md). `deinit` below needs only `Value`'s own
    /// metadata, and nothing at all for a trivial `Value`.
    @exclusivity(unchecked) @usableFromInline var _words: (UInt, UInt) = (0, 0)
    @exclusivity(unchecked) @usableFromInline var _error: (any Error)?
    /// The flattening target (a `Future<Value>`), written once by the claim
    /// winner before FLATTENING is published (`_publishTarget`) and read
    /// by cycle walkers on any thread (`_loadTarget`). Not a `weak var`:
    /// that allocates a side table for every target and costs a runtime
    /// call in every future's init and deinit. We hold an unowned count on
    /// the target instead (released in `deinit`), which keeps its memory
    /// valid, and walkers take a strong reference with `cf_try_retain`,
    /// which fails once the target is deinitializing: a weak reference's
    /// semantics (cf_swift_runtime.h).
    @exclusivity(unchecked) @usableFromInline var _targetRef: UnsafeMutableRawPointer?
    /// A step's output (`then`, or a collapsing `catch` or `finally`): its
    /// step node is its only producer and never hands it out, so when the
    /// step's caller returns it from another collapsing step's function and
    /// nothing else holds it, it can be redirected into that step's output
    /// instead of being flattened (`_redirect`). Free in size: the object
    /// stays within the same malloc size class.
    @usableFromInline let _unexposed: Bool
    #if DEBUG
    /// Debug builds: where the source that let this future become immortal
    /// was created. Written before the immortalizing settle (its full CAS
    /// publishes it), read only after seeing the immortal word (acquire).
    @exclusivity(unchecked) var _immortalSite: String?
    #endif

    /// A pending future; `_unexposed` for a step node's output.
    @inlinable init(_unexposed: Bool = false) {
        _c = cf_future()
        self._unexposed = _unexposed
        cf_token_init(_tptr, 0)
        #if DEBUG
        cf_debug_futures_add(1)
        #endif
    }

    @inlinable init(_result r: Result<Value, any Error>) {
        _c = cf_future(token: cf_token(), claim: UInt(CF_F_CLAIMED))
        _unexposed = false
        _store(r)
        cf_token_init(_tptr, _wCancelled)
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
        let w = _word
        guard w & _wCancelled != 0 else { _abandon(word: w); return }
        // Completed: a success value is stored exactly when there is no error.
        guard _error == nil else { return }
        if Self._inline {
            if !_isPOD(Value.self) { _wordsAddress.assumingMemoryBound(to: Value.self).deinitialize(count: 1) }
        } else {
            _box.release()
        }
    }

    /// `deinit` of a future that did not complete: what is registered on it
    /// is discarded (`_settleAbandoned`), and a redirected future nobody
    /// completed makes the future it was redirected into immortal: its
    /// completer is gone. The last reference is gone, so the claim word is
    /// final.
    @usableFromInline func _abandon(word w: UInt) {
        _settleAbandoned(_tptr, word: w)
        let c = cf_future_claim_load(_fptr)
        if c >= UInt(CF_F_REDIRECT_MIN) {
            _ = Unmanaged<Future>.fromOpaque(UnsafeRawPointer(bitPattern: c)!).takeRetainedValue()._immortalizeClaimed()
        }
    }

    // MARK: result storage

    /// Whether a `Value` is stored in `_words` itself.
    @inlinable static var _inline: Bool {
        MemoryLayout<Value>.size <= MemoryLayout<(UInt, UInt)>.size
            && MemoryLayout<Value>.alignment <= MemoryLayout<UInt>.alignment
    }

    /// `_words`' address (inline storage only), for the writes: the claim
    /// holder's store and `deinit`. A modifying access, so never for reads:
    /// any number of threads may read a completed future at once. Raw, not
    /// an `UnsafeMutablePointer<Value>`: in unspecialized code (`deinit`,
    /// `_store(copying:)`) returning that type looked up its metadata on
    /// every call, 7% of a flatten step (callgrind).
    @inlinable var _wordsAddress: UnsafeMutableRawPointer {
        withUnsafeMutablePointer(to: &_words) { UnsafeMutableRawPointer($0) }
    }

    /// A copy of the `Value` in `_words` (inline storage only), through a
    /// read access: concurrent readers of a completed future do not
    /// conflict (TSan reported two readers through `_wordsAddress`'s
    /// modifying access as a race).
    @inlinable var _inlineValue: Value {
        withUnsafePointer(to: _words) { UnsafeRawPointer($0).load(as: Value.self) }
    }

    /// The retained `_ValueBox` in `_words.0` (boxed storage only).
    @inlinable var _box: Unmanaged<AnyObject> { .fromOpaque(UnsafeRawPointer(bitPattern: _words.0)!) }

    /// The stored value. Only after seeing the future succeeded.
    @inlinable var _value: Value {
        if Self._inline { return _inlineValue }
        return unsafeDowncast(_box.takeUnretainedValue(), to: _ValueBox<Value>.self).value
    }

    /// Stores the outcome (once, by the claim holder, before the settle).
    @inlinable func _store(_ r: Result<Value, any Error>) {
        switch r {
        case .success(let v):
            if Self._inline {
                _wordsAddress.initializeMemory(as: Value.self, to: v)
            } else {
                _words.0 = UInt(bitPattern: Unmanaged.passRetained(_ValueBox(v)).toOpaque())
            }
        case .failure(let e):
            _error = e
        }
    }

    /// Copies `other`'s outcome (it has completed) without building a
    /// `Result`: called from `_FlattenNode`, whose methods are not specialized.
    @usableFromInline func _store(copying other: Future) {
        if let e = other._error {
            _error = e
            return
        }
        if Self._inline {
            // A trivial value is its bits: copied as they are, without the
            // value witness calls of a generic load and store (this method
            // is not specialized).
            if _isPOD(Value.self) { _words = other._words; return }
            _wordsAddress.initializeMemory(as: Value.self, to: other._inlineValue)
        } else {
            _words.0 = UInt(bitPattern: other._box.retain().toOpaque())
        }
    }

    /// The outcome. Only after seeing the future completed.
    @inlinable var _result: Result<Value, any Error> {
        if let e = _error { return .failure(e) }
        return .success(_value)
    }

    @inlinable init(_immortal: ()) {
        _c = cf_future(token: cf_token(), claim: UInt(CF_F_CLAIMED))
        _unexposed = false
        cf_token_init(_tptr, _wImmortal)
        #if DEBUG
        cf_debug_futures_add(1)
        #endif
    }

    @inlinable var _fptr: UnsafeMutablePointer<cf_future> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: cf_future.self)
    }
    @inlinable var _tptr: UnsafeMutablePointer<cf_token> { _tokenPtr(self) }
    @inlinable var _word: UInt { cf_token_load(_tptr) }

    // MARK: construction

    /// A future that already succeeded with `value`.
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
        let w = _word
        if w & _wCancelled != 0 {
            return _error == nil ? .succeeded : .failed
        }
        if w & _wImmortal != 0 { return .immortal }
        // FLATTENING or AWAITING (set to a future redirected into it).
        return cf_future_claim_load(_fptr) &- UInt(CF_F_FLATTENING) < 2 ? .flattening : .pending
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
        if _word & _wImmortal != 0, let site = _immortalSite {
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

    // MARK: setting (internal; FutureSource and the continuations call these)

    @inlinable @discardableResult
    func _trySet(_ r: Result<Value, any Error>) -> Bool {
        if cf_future_claim(_fptr, UInt(CF_F_UNSET), UInt(CF_F_CLAIMED)) != 0 {
            _complete(r)
            return true
        }
        guard let t = _claimThrough() else { return false }
        t._complete(r)
        return true
    }

    /// Claims the right to complete this future without completing it yet:
    /// for "cancel first, publish second" (claim, cancel the operation's
    /// token, then `_complete`), so nothing the cancel triggers can complete
    /// it first. Not for step outputs, which may be redirected.
    @inlinable func _claim() -> Bool {
        assert(!_unexposed, "_claim() does not follow redirections")
        return cf_future_claim(_fptr, UInt(CF_F_UNSET), UInt(CF_F_CLAIMED)) != 0
    }

    /// A completer that lost the claim CAS: the future this one was
    /// redirected into, whose claim the caller now holds and which it
    /// completes instead (`_takeClaimThrough`); nil if already claimed.
    @usableFromInline func _claimThrough() -> Future? {
        _takeClaimThrough(_fptr).map { Unmanaged<Future>.fromOpaque($0).takeRetainedValue() }
    }

    /// Only the claim holder (or the flattening forwarder) calls this.
    @inlinable func _complete(_ r: Result<Value, any Error>) {
        _store(r)
        cf_token_settle(_tptr, _wCancelled)
    }

    /// `_complete` with a completed future's outcome (the flatten forwarder).
    @usableFromInline func _complete(copying other: Future) {
        _store(copying: other)
        cf_token_settle(_tptr, _wCancelled)
    }

    @inlinable @discardableResult
    func _tryImmortalize() -> Bool { _tryImmortalizeFuture(self) }

    /// Collapses: this future takes on `other`'s outcome.
    @inlinable @discardableResult
    func _trySetFuture(_ other: Future) -> Bool { _setFuture(other).set }

    /// `_trySetFuture`, also saying how many flattening targets its walk
    /// followed (the work a test counts: a chain built outwards costs O(1)
    /// per set).
    @inlinable
    func _setFuture(_ other: Future) -> (set: Bool, steps: Int) {
        _setFuture(other, redirecting: false) { _FlattenNode(output: $0, target: $1) }
    }

    /// `_setFuture`, with the forwarder registered on the end of the chain
    /// built by `forwarder(output, end)` (a `_FlattenNode`, or a flatten
    /// step's own node reused). `output` is the future the claim was taken
    /// for: this one, or the one it was redirected into. `redirecting`: the
    /// caller holds `other` by the one reference a step function's result
    /// is, so `_redirect` may count references (only `_FlatStepNode._run`).
    @inlinable @inline(__always)
    func _setFuture(_ other: Future, redirecting: Bool,
                    forwarder: (_ output: Future, _ end: Future) -> _Node) -> (set: Bool, steps: Int) {
        if cf_future_claim(_fptr, UInt(CF_F_UNSET), UInt(CF_F_CLAIMED)) != 0 {
            return (true, _setClaimed(other, redirecting: redirecting, forwarder: forwarder))
        }
        guard let t = _claimThrough() else { return (false, 0) }
        return (true, t._setClaimed(other, redirecting: redirecting, forwarder: forwarder))
    }

    /// The claim holder's half of `_setFuture`: this future (CLAIMED or
    /// AWAITING: ours) takes on `other`'s outcome. Returns the flattening
    /// targets walked.
    @inlinable @inline(__always)
    func _setClaimed(_ other: Future, redirecting: Bool, forwarder: (_ output: Future, _ end: Future) -> _Node) -> Int {
        if other === self { _ = _immortalizeClaimed(); return 0 }
        let w = other._word
        if w & _wCancelled != 0 {
            _complete(copying: other)
            return 0
        }
        if w & _wImmortal != 0 { _ = _immortalizeClaimed(); return 0 }
        // Not `a && b`: its autoclosure would capture `other`, one more
        // reference for `_redirect` to count (in debug builds).
        if redirecting, w == 0, other._unexposed, _redirect(other) { return 0 }
        // Target the end of `other`'s chain as it is now, not `other`: the
        // targets between them never change once published, so the end's
        // outcome is `other`'s, and a chain built outwards (each new future
        // set to the previous one) walks one step per set, not the chain.
        let (start, before) = _walk(from: other)
        guard let start else { _ = _immortalizeClaimed(); return before }
        _publishTarget(start)
        // Publish-then-walk: full CAS, so of two threads closing a cycle at
        // once at least the later one sees the other's link in its walk
        // (store-buffering: the walk's loads must not pass this store).
        // From CLAIMED or AWAITING: only the claim holder (us) writes the
        // word now, so the value loaded is the one to replace.
        cf_future_claim(_fptr, cf_future_claim_load(_fptr), UInt(CF_F_FLATTENING))
        let (end, after) = _walk(from: start)
        guard let end else { _ = _immortalizeClaimed(); return before + after }
        _ = _register(end, forwarder(self, end))
        return before + after
    }

    /// Redirects `other` into this future (claimed by the caller) instead
    /// of flattening into it: from now on whoever completes `other` takes
    /// our claim through it and completes us (`_claimThrough`); if `other`
    /// dies unset, we become immortal (`_abandon`). No forwarder is
    /// registered and `other` holds nothing of ours but one reference, so
    /// `other` is freed as soon as its producer is done with it: a
    /// tail-recursive flatten chain (a retry loop returning the next `then`
    /// or `catch`) keeps the outermost future and the current step, not a
    /// future and a forwarder per level.
    ///
    /// Only when nobody else can observe `other`: a step's output
    /// (`_unexposed`: its step node never hands it out), unset, with nothing
    /// registered on it, and referenced exactly twice — by its step node and
    /// by the caller's step-function result — with no weak or unowned
    /// reference (cf_held_only_by). A third holder could read its state or
    /// register on it later, and it would never complete. Only the step node
    /// can create a reference meanwhile: when its input becomes immortal it
    /// hands `other` to `_failOnUnless`, which completes it only through
    /// `_trySet` / `_tryImmortalizeFuture`, and both follow a redirection;
    /// nobody else can observe it. A producer that dropped its reference
    /// can no longer complete `other`, which then behaves the same
    /// redirected or not (pending until it dies, then immortal, and so are
    /// we).
    @usableFromInline func _redirect(_ other: Future) -> Bool {
        // (No closure around the count: capturing `other` would be a third
        // reference. `other` is used below, so it is alive here.)
        // The token word again, after the count: a holder that registered
        // on `other` and let go before the count is seen here (the fence in
        // cf_held_only_by), and no one can register after it.
        guard cf_future_claim_load(other._fptr) == UInt(CF_F_UNSET),
              cf_held_only_by(Unmanaged.passUnretained(other).toOpaque(), 2) != 0,
              other._word == 0 else { return false }
        // Reported flattening from now on. We hold our claim, so nobody else
        // writes the word; full CAS, published by the redirection below.
        if cf_future_claim_load(_fptr) == UInt(CF_F_CLAIMED) {
            cf_future_claim(_fptr, UInt(CF_F_CLAIMED), UInt(CF_F_AWAITING))
        }
        // The redirection word holds a reference to us, taken by its
        // completer (THROUGH) or released by `other`'s `_abandon`. Full CAS:
        // its winner sees our AWAITING word. It fails if `other`'s producer
        // claimed it meanwhile: then we flatten into it as usual.
        let me = Unmanaged.passRetained(self).toOpaque()
        if cf_future_claim(other._fptr, UInt(CF_F_UNSET), UInt(bitPattern: me)) != 0 { return true }
        Unmanaged<Future>.fromOpaque(me).release()
        return false
    }

    /// Records `target` as ours (the claim holder, once, before publishing
    /// FLATTENING, whose full CAS publishes it): an unowned count on it,
    /// released in `deinit`.
    @inlinable func _publishTarget(_ target: Future) {
        let p = Unmanaged.passUnretained(target).toOpaque()
        cf_unowned_retain(p)
        _targetRef = p
    }

    /// Our target, or nil if it is already deinitializing (then it has
    /// completed or become immortal, and so will we: it ends the walk).
    /// Only after seeing FLATTENING (acquire), which orders the write.
    /// Our unowned count keeps its memory valid for `cf_try_retain`; the
    /// caller keeps us alive, and so that count.
    @inlinable func _loadTarget() -> Future? {
        guard let p = _targetRef, cf_try_retain(p) != 0 else { return nil }
        return Unmanaged<Future>.fromOpaque(p).takeRetainedValue()
    }

    /// A cycle through us: immortal, and so, through their forwarders, every
    /// future flattening into us. Only the claim holder calls this, or our
    /// forwarder (it holds the claim for us) when our target became immortal.
    @inlinable func _immortalizeClaimed() -> Bool {
        cf_token_settle(_tptr, _wImmortal)
        return true
    }

    /// Follows flattening targets from `start` to the end of the chain (a
    /// future not flattening) and returns it with the steps taken; `nil` if
    /// the targets lead back here (this future is in a cycle: before our
    /// publication the walk stops here because we are not flattening yet). Brent's
    /// algorithm stops on a cycle that does not contain us and returns one
    /// of its futures: its last publisher makes it immortal, and our
    /// forwarder with it.
    @inlinable @inline(__always) func _walk(from start: Future) -> (end: Future?, steps: Int) {
        // The common case, inline: `start` is not flattening (no copies of
        // it for the loop's cursors: two retains and releases per walk).
        if start === self { return (nil, 0) }
        guard cf_future_claim_load(start._fptr) == UInt(CF_F_FLATTENING) else { return (start, 0) }
        return _walkFlattening(from: start)
    }

    /// `_walk` from a flattening `start`.
    @inlinable func _walkFlattening(from start: Future) -> (end: Future?, steps: Int) {
        var cur = start
        var tortoise = start
        var power = 1, lam = 0, steps = 0
        while true {
            if cur === self { return (nil, steps) }
            guard cf_future_claim_load(cur._fptr) == UInt(CF_F_FLATTENING), let next = cur._loadTarget() else {
                return (cur, steps)
            }
            cur = next
            steps += 1
            if cur === tortoise && cur !== self { return (cur, steps) }
            lam += 1
            if lam == power { tortoise = cur; power *= 2; lam = 0 }
        }
    }
}
