// Collapsing: a future set to another future takes on its outcome, by a
// token link into the end of the chain or a forwarder on it; a future set
// to itself through any chain becomes immortal (the walk below). And a
// linked future's life: its root, and what its death does to it.
import CCollapsingFutures

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
    @inlinable @inline(__always) var _isLinked: Bool { cf_token_is_linked(_ownTptr) != 0 }

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
        _FlattenNode(output: self, target: end)._register(on: end, .library)
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
            _FlattenNode(output: other, target: self)._register(on: self, .library)
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
