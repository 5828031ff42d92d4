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
    #if DEBUG
    /// Debug builds: where the source that let this future become immortal
    /// was created. Written before the immortalizing settle (its full CAS
    /// publishes it), read only after seeing the immortal word (acquire).
    @exclusivity(unchecked) final var _immortalSite: String?
    #endif

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
    /// `deinit` of a future that did not complete itself (`w`: its own
    /// token's word): what is registered on it is discarded
    /// (`_settleAbandoned`), then its link goes (`_dropLink`).
    @usableFromInline func _abandon(word w: UInt) {
        _settleAbandoned(_ownTptr, word: w)
        _dropLink()
    }

    /// `deinit` of a linked future: releases the reference its claim word
    /// holds on the root, which becomes immortal if nobody took the claim
    /// through (its completer is gone; a root that completed stays so). The
    /// last reference is gone, so the claim word is final.
    @inlinable func _dropLink() {
        // A plain load: nothing else can touch the word any more.
        let c = _fptr.pointee.claim
        guard c >= UInt(CF_F_LINK_MIN) else { return }
        let root = Self._root(claim: c).takeRetainedValue()
        if c & UInt(CF_F_TAKEN) == 0 { _ = root._immortalizeClaimed() }
    }

    /// The root a linked future's claim word `c` names (a pointer with the
    /// reference the word holds, possibly with CF_F_TAKEN).
    @inlinable static func _root(claim c: UInt) -> Unmanaged<Future> {
        .fromOpaque(UnsafeRawPointer(bitPattern: c & ~UInt(CF_W_TAGS))!)
    }

    /// Whether our token is linked into a root's (`_link`): then our
    /// outcome is the root's (`_linkedRoot`), never stored here. Final once
    /// true. One inline load: every read of an outcome asks.
    @inlinable var _isLinked: Bool { cf_token_is_linked(_ownTptr) != 0 }

    /// The root a linked future's outcome is (only once `_isLinked`; a root
    /// is never linked). The claim word, which names the root with a
    /// reference to it, is written before the token word links, so the
    /// acquire load that saw the link sees it.
    @inlinable var _linkedRoot: Future {
        Self._root(claim: cf_future_claim_load(_fptr)).takeUnretainedValue()
    }

    /// The future whose outcome this one has: its root when linked, else
    /// itself.
    @inlinable var _root: Future { _isLinked ? _linkedRoot : self }

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
    /// `_complete(copying:)`) returning that type looks up its metadata on
    /// every call.
    @inlinable var _wordsAddress: UnsafeMutableRawPointer {
        withUnsafeMutablePointer(to: &_words) { UnsafeMutableRawPointer($0) }
    }

    /// A copy of the `Value` in `_words` (inline storage only), through a
    /// read access: concurrent readers of a completed future do not
    /// conflict (two readers through `_wordsAddress`'s modifying access
    /// would be a race, and TSan says so).
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

    /// Stores the outcome (once, by the claim holder, before the settle)
    /// and returns the terminal word to settle with.
    @inlinable func _store(_ r: Result<Value, any Error>) -> UInt {
        switch r {
        case .success(let v):
            if Self._inline {
                _wordsAddress.initializeMemory(as: Value.self, to: v)
            } else {
                _words.0 = UInt(bitPattern: Unmanaged.passRetained(_ValueBox(v)).toOpaque())
            }
            return _wCancelled
        case .failure(let e):
            _wordsAddress.initializeMemory(as: (any Error).self, to: e)
            return _wFailure
        }
    }

    /// `_complete` with `other`'s outcome (it has completed), copied without
    /// building a `Result`: called from `_FlattenNode`, whose methods are
    /// not specialized.
    @usableFromInline func _complete(copying other: Future) {
        if other._isLinked { return _complete(copying: other._linkedRoot) }
        if _isFailure(cf_token_load(other._ownTptr)) {
            _wordsAddress.initializeMemory(as: (any Error).self, to: other._storedError)
            cf_token_settle(_ownTptr, _wFailure)
            return
        }
        if Self._inline {
            // A trivial value is its bits: copied as they are, without the
            // value witness calls of a generic load and store (this method
            // is not specialized).
            if _isPOD(Value.self) {
                _words = other._words
            } else {
                _wordsAddress.initializeMemory(as: Value.self, to: other._inlineValue)
            }
        } else {
            _words.0 = UInt(bitPattern: other._box.retain().toOpaque())
        }
        cf_token_settle(_ownTptr, _wCancelled)
    }

    /// The stored failure. Only after seeing the future failed.
    @inlinable var _storedError: any Error {
        withUnsafePointer(to: _words) { UnsafeRawPointer($0).load(as: (any Error).self) }
    }

    /// The outcome. Only after seeing the future completed.
    @inlinable var _result: Result<Value, any Error> {
        if _slowPath(_isLinked) { return _linkedRoot._storedResult }
        return _storedResult
    }

    /// The outcome stored in this future (not linked, completed): its own
    /// terminal word says which.
    @inlinable var _storedResult: Result<Value, any Error> {
        if _isFailure(cf_token_load(_ownTptr)) { return .failure(_storedError) }
        return .success(_value)
    }

    @inlinable var _fptr: UnsafeMutablePointer<cf_future> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: cf_future.self)
    }
    /// The completion token every operation acts on (its root's when linked).
    @inlinable var _tptr: UnsafeMutablePointer<cf_token> { _tokenPtr(self) }
    /// Our own token, for initialization, deinit and linking.
    @inlinable var _ownTptr: UnsafeMutablePointer<cf_token> { _ownTokenPtr(self) }
    @inlinable var _word: UInt { cf_token_load(_tptr) }

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
        guard let f = _takeClaim() else { return false }
        f._withUnsafeGuaranteedRef { $0._complete(r) }
        return true
    }

    /// Takes the right to complete this future: its own claim (UNSET ->
    /// CLAIMED), or, when it is linked (`_link`) and nobody took its claim
    /// through yet, its root's (`_takeClaimOtherwise`).
    /// Returns the future the caller now completes, this one or that root
    /// (unretained: the caller holds this one, and this one's claim word
    /// the root); nil if someone else holds the claim. Every completer
    /// takes the claim here.
    @inlinable @inline(__always)
    func _takeClaim() -> Unmanaged<Future>? {
        if cf_future_claim(_fptr, UInt(CF_F_UNSET), UInt(CF_F_CLAIMED)) != 0 { return .passUnretained(self) }
        return _takeClaimOtherwise()
    }

    /// `_takeClaim` once the claim was not UNSET, from one load of the word:
    /// for a future linked into a root whose claim nobody took through
    /// yet, that root's: the CAS sets CF_F_TAKEN (full:
    /// it acquires the AWAITING word the link published). The root stays
    /// referenced by our claim word until we are freed, which the caller's
    /// reference to us prevents meanwhile. Out of line: the rare path.
    @usableFromInline func _takeClaimOtherwise() -> Unmanaged<Future>? {
        let c = cf_future_claim_load(_fptr)
        guard c >= UInt(CF_F_LINK_MIN), c & UInt(CF_F_TAKEN) == 0,
              cf_future_claim(_fptr, c, c | UInt(CF_F_TAKEN)) != 0 else { return nil }
        return .fromOpaque(UnsafeRawPointer(bitPattern: c)!)
    }

    /// Only the claim holder (or the flattening forwarder) calls this. Its
    /// own token: a future whose claim is held is never linked.
    @inlinable func _complete(_ r: Result<Value, any Error>) {
        cf_token_settle(_ownTptr, _store(r))
    }

    /// Makes this future (or the root it is linked into) immortal, if the
    /// claim is still to take.
    @inlinable @discardableResult
    func _tryImmortalize() -> Bool {
        // The claim word never returns to UNSET, and only a link is claimed
        // otherwise: a source dying after it set its future (the common
        // case) pays this load, not a failing CAS.
        let c = cf_future_claim_load(_fptr)
        guard c == UInt(CF_F_UNSET) || c >= UInt(CF_F_LINK_MIN),
              let f = _takeClaim() else { return false }
        return f._withUnsafeGuaranteedRef { $0._immortalizeClaimed() }
    }

    /// Collapses: this future takes on `other`'s outcome.
    @inlinable @discardableResult
    func _trySetFuture(_ other: Future) -> Bool { _setFuture(other).set }

    /// `_trySetFuture`, also saying how many flattening targets its walk
    /// followed (the work a test counts: a chain built outwards costs O(1)
    /// per set).
    /// The claim is this future's, or that of the root it is linked into,
    /// which then takes on `other`'s outcome.
    @inlinable
    func _setFuture(_ other: Future) -> (set: Bool, steps: Int) {
        guard let f = _takeClaim() else { return (false, 0) }
        return (true, f._withUnsafeGuaranteedRef { $0._setClaimed(other) })
    }

    /// The claim holder's half of `_setFuture`: this future (CLAIMED or
    /// AWAITING: ours) takes on `other`'s outcome: linked into the end of
    /// its chain, or a forwarder there (`_FlattenNode`). Returns the
    /// flattening targets walked.
    @inlinable @inline(__always)
    func _setClaimed(_ other: Future) -> Int {
        if other === self { _ = _immortalizeClaimed(); return 0 }
        let w = other._word
        if w & _wCancelled != 0 {
            _complete(copying: other)
            return 0
        }
        if w & _wImmortal != 0 { _ = _immortalizeClaimed(); return 0 }
        if w == 0, _link(other) { return 0 }
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
        let claimed = cf_future_claim_load(_fptr)
        cf_future_claim(_fptr, claimed, UInt(CF_F_FLATTENING))
        let (end, after) = _walk(from: start)
        guard let end else { _ = _immortalizeClaimed(); return before + after }
        // CLAIMED: nothing is linked into us by `_link` (AWAITING: something
        // may be). Our word empty: nothing is registered on us and no token
        // is linked into ours (an UNSET end others link into has a node on
        // its token), so ours can be linked. A word that is not empty never
        // is again: the link would fail, and our claim word would keep `end`
        // until we are freed, so the forwarder goes on `end` at once.
        if claimed == UInt(CF_F_CLAIMED) && cf_token_load(_ownTptr) == 0 && Self._isRoot(end)
            && _linkInto(end) { return before + after }
        _FlattenNode(output: self, target: end)._register(on: end, inline: true)
        return before + after
    }

    /// Links `other` (unset, nothing registered on it) into this future,
    /// whose claim the caller holds, instead of flattening into it: whoever
    /// completes `other` takes our claim through it and completes us
    /// (every completer takes its claim with `_takeClaim`, which follows
    /// the link, whether it is a source, a step or a combinator), if
    /// `other` dies with the claim not taken we become immortal
    /// (`_abandon`), and everyone else who holds `other` sees our
    /// outcome and registers on our token (its token is linked into ours,
    /// `cf_token_link`). No forwarder is registered, and `other` holds
    /// nothing of ours but one reference, so `other` is freed as soon as its
    /// producer and holders are done with it: a tail-recursive flatten chain
    /// (a retry loop returning the next `then` or `catch`) keeps the
    /// outermost future and the current step, not a future and a forwarder
    /// per level, without knowing who else holds the futures.
    ///
    /// Two CASes in this order. The claim first, which pins `other`: it
    /// fails if `other`'s producer claimed it meanwhile (then we flatten
    /// into it as usual), and after it no completer writes `other`'s own
    /// outcome. Then the token, from the empty word: it fails if a handler
    /// was registered on `other` meanwhile, and then a forwarder on us
    /// completes `other` with our outcome. The claim word's pointer is an
    /// edge to us for cycle walkers either way (`_walk`).
    @usableFromInline func _link(_ other: Future) -> Bool {
        // Claimed already: not linkable, and we stay CLAIMED, which lets us
        // link into it instead (`_linkInto`). A claim taken after this load
        // fails the CAS below.
        guard cf_future_claim_load(other._fptr) == UInt(CF_F_UNSET) else { return false }
        // Reported flattening from now on. We hold our claim, so nobody else
        // writes the word; full CAS, published by the link below.
        let mine = cf_future_claim_load(_fptr)
        if mine == UInt(CF_F_CLAIMED) {
            cf_future_claim(_fptr, mine, UInt(CF_F_AWAITING))
        }
        // The claim word holds a reference to us until `other` is freed.
        // Full CAS: its winner sees our AWAITING word.
        let me = Unmanaged.passRetained(self).toOpaque()
        guard cf_future_claim(other._fptr, UInt(CF_F_UNSET), UInt(bitPattern: me)) != 0 else {
            Unmanaged<Future>.fromOpaque(me).release()
            return false
        }
        if cf_token_link(other._ownTptr, _ownTptr) == 0 {
            _FlattenNode(output: other, target: self)._register(on: self, inline: true)
        }
        return true
    }

    /// Whether `end`, the end of a chain, is a root others may link into:
    /// AWAITING (others are linked into it), or UNSET. A CLAIMED end is not:
    /// its claimer may still link its own token (`_linkInto`). An UNSET end
    /// has a node on its token (a handler, or the forwarder of the future
    /// before it: one with nothing registered would have been linked,
    /// `_link`), and a token's word never returns to 0, so its token is
    /// never linked and never links itself, both of which need the empty
    /// word: whoever claims it later stays a root. (Its claim word may
    /// still take a `_link` that read the word empty before the node came;
    /// that link's token CAS fails, and a forwarder completes it.)
    @inlinable @inline(__always)
    static func _isRoot(_ end: Future) -> Bool {
        let c = cf_future_claim_load(end._fptr)
        return c == UInt(CF_F_AWAITING) || c == UInt(CF_F_UNSET)
    }

    /// Links us into `end`, the end of our chain, instead of registering a
    /// forwarder on it, when `end` is a root (AWAITING or UNSET: others may
    /// be linked into it, and a future set while AWAITING, or with a node on
    /// its token, never links itself): our claim word names `end` with a reference to
    /// it, taken (CF_F_TAKEN: nobody completes us but `end`), and our token
    /// is linked into its token, so we keep nothing of ours on `end` and are
    /// freed as soon as our holders are done with us; `end` is kept until
    /// then, its outcome being ours. That is what keeps a retry loop over
    /// synchronous failures from keeping a forwarder and a future per
    /// level: unwinding its inline runs sets each level's output to the
    /// inner one, already a root.
    ///
    /// We are FLATTENING, with nothing linked into us (our caller was
    /// CLAIMED, with an empty word), and our walk after publishing found no cycle through us.
    /// Of the threads closing a cycle, one whose walk sees it makes itself
    /// immortal without linking, so these references never form a cycle
    /// among futures. (With the fallback forwarder, `end`'s list holds us
    /// while we hold `end`: until `end` settles, as any forwarder holds its
    /// output; `end`'s claim holder, or its linked futures when they
    /// complete or die, settle it.)
    ///
    /// That also keeps a chain built outwards flat: each future set to the
    /// previous one links into the first, still unset, and the
    /// futures between are freed with their sources.
    ///
    /// The caller has seen `end` a root (`_isRoot`). Returns whether our token is
    /// linked; if not (a handler was registered on us meanwhile), the
    /// caller registers the forwarder, which completes us. `end`'s token is
    /// never linked (an AWAITING claim is not UNSET, and an UNSET end's word
    /// is not empty: `_isRoot`), so a token is one step from its root, as
    /// `cf_token_resolve` needs.
    @usableFromInline func _linkInto(_ end: Future) -> Bool {
        // Our claim word, which only we write, so the CAS cannot fail:
        // FLATTENING -> `end` | TAKEN. Walkers that see it follow it as they
        // followed the target; full, as every claim CAS, and written before
        // the token link below, whose full CAS publishes it to resolvers
        // (`_linkedRoot`).
        let e = UInt(bitPattern: Unmanaged.passRetained(end).toOpaque())
        let swapped = cf_future_claim(_fptr, UInt(CF_F_FLATTENING), e | UInt(CF_F_TAKEN))
        assert(swapped != 0, "only the claim holder writes its claim word")
        // Full CAS from the empty word: fails if a handler came first.
        return cf_token_link(_ownTptr, end._ownTptr) != 0
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
        cf_token_settle(_ownTptr, _wImmortal)
        return true
    }

    /// Follows flattening targets and links (a linked future's root) from
    /// `start` to the end of the chain (a future neither flattening nor
    /// linked) and returns it with the steps taken; `nil` if
    /// the targets lead back here (this future is in a cycle: before our
    /// publication the walk stops here because we are not flattening yet). Brent's
    /// algorithm stops on a cycle that does not contain us and returns one
    /// of its futures: its last publisher makes it immortal, and our
    /// forwarder with it.
    @inlinable @inline(__always) func _walk(from start: Future) -> (end: Future?, steps: Int) {
        // The common case, inline: `start` is not flattening (no copies of
        // it for the loop's cursors: two retains and releases per walk).
        if start === self { return (nil, 0) }
        let c = cf_future_claim_load(start._fptr)
        guard c == UInt(CF_F_FLATTENING) || c >= UInt(CF_F_LINK_MIN) else { return (start, 0) }
        return _walkFlattening(from: start)
    }

    /// The next future of a chain after `cur`, whose claim word is `c`: its
    /// flattening target (nil if that is already deinitializing: it has
    /// completed or become immortal, and so will `cur`), or its root when
    /// it is linked, kept alive by `cur`'s claim word; nil otherwise.
    @inlinable func _next(after cur: Future, claim c: UInt) -> Future? {
        if c == UInt(CF_F_FLATTENING) { return cur._loadTarget() }
        guard c >= UInt(CF_F_LINK_MIN) else { return nil }
        return Self._root(claim: c).takeUnretainedValue()
    }

    /// `_walk` from a flattening `start`.
    @inlinable func _walkFlattening(from start: Future) -> (end: Future?, steps: Int) {
        var cur = start
        var tortoise = start
        var power = 1, lam = 0, steps = 0
        while true {
            if cur === self { return (nil, steps) }
            guard let next = _next(after: cur, claim: cf_future_claim_load(cur._fptr)) else { return (cur, steps) }
            cur = next
            steps += 1
            if cur === tortoise && cur !== self { return (cur, steps) }
            lam += 1
            if lam == power { tortoise = cur; power *= 2; lam = 0 }
        }
    }
}
