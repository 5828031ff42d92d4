// A future's outcome: where it is stored (inline in the future's words, or
// boxed), how it is read, and the claim that lets exactly one setter
// complete it.
import CCollapsingFutures

extension Future {
    /// Whether a `Value` is stored in `_words` itself.
    @inlinable @inline(__always) static var _inline: Bool {
        MemoryLayout<Value>.size <= MemoryLayout<(UInt, UInt)>.size
            && MemoryLayout<Value>.alignment <= MemoryLayout<UInt>.alignment
    }

    /// `_words`' address (inline storage only), for the writes: the claim
    /// holder's store and `deinit`. A modifying access, so never for reads:
    /// any number of threads may read a completed future at once. Raw, not
    /// an `UnsafeMutablePointer<Value>`: in unspecialized code (`deinit`,
    /// `_complete(copying:)`) returning that type looks up its metadata on
    /// every call.
    @inlinable @inline(__always) var _wordsAddress: UnsafeMutableRawPointer {
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
    @inlinable @inline(__always) var _box: Unmanaged<AnyObject> { .fromOpaque(UnsafeRawPointer(bitPattern: _words.0)!) }

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
        if _isFailure(cf_token_load(other._ownTptr)) { return _complete(failure: other._storedError) }
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

    /// `_complete` with a failure, without building a `Result`.
    @usableFromInline func _complete(failure e: any Error) {
        _wordsAddress.initializeMemory(as: (any Error).self, to: e)
        cf_token_settle(_ownTptr, _wFailure)
    }

    /// `_trySet` with `other`'s outcome (it has completed), for code that
    /// is not specialized: building a `Result<Value, any Error>` there
    /// looks up that type's metadata on every call; this needs none.
    @usableFromInline @discardableResult
    func _trySet(copying other: Future) -> Bool {
        guard let f = _takeClaim() else { return false }
        f._withUnsafeGuaranteedRef { $0._complete(copying: other) }
        return true
    }

    /// `_trySet(.failure(e))`, for code that is not specialized (as
    /// `_trySet(copying:)`).
    @usableFromInline @discardableResult
    func _tryFail(_ e: any Error) -> Bool {
        guard let f = _takeClaim() else { return false }
        f._withUnsafeGuaranteedRef { $0._complete(failure: e) }
        return true
    }

    /// The failure of a completed future (its root's when linked), nil if
    /// it succeeded: read without building a `Result`.
    @usableFromInline var _completedFailure: (any Error)? {
        guard _isFailure(_word) else { return nil }
        return _slowPath(_isLinked) ? _linkedRoot._storedError : _storedError
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

    @inlinable @inline(__always) var _fptr: UnsafeMutablePointer<cf_future> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: cf_future.self)
    }
    /// The completion token every operation acts on (its root's when linked).
    @inlinable @inline(__always) var _tptr: UnsafeMutablePointer<cf_token> { _tokenPtr(self) }
    /// Our own token, for initialization, deinit and linking.
    @inlinable @inline(__always) var _ownTptr: UnsafeMutablePointer<cf_token> { _ownTokenPtr(self) }
    @inlinable @inline(__always) var _word: UInt { cf_token_load(_tptr) }


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
}

/// A success value too large for a future's inline words: immutable, so a
/// flattened future shares it with its target.
@usableFromInline
final class _ValueBox<Value>: @unchecked Sendable {
    @usableFromInline let value: Value
    @inlinable init(_ value: Value) { self.value = value }
}
