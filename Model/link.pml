/*
 * link.pml -- exhaustive model of linking (Future._link)
 *
 * cf_core.pml models the claim word's UNSET / CLAIMED / FLATTENING, the
 * token lists in full and cf_token_link racing a registration on the raw
 * word. This model adds the claim values linking uses, AWAITING and a
 * pointer to the root with its CF_F_TAKEN bit (the reference it holds), the
 * linked token word (CF_W_LINKED), and the Swift code that reads and writes
 * them (Sources/CollapsingFutures/Internal/Future+Collapse.swift, Internal/Nodes/_Lifecycle.swift):
 *
 *   set_future   Future._setFuture from a collapsing step's _run: claim
 *                (UNSET -> CLAIMED) or take the claim through a link; then
 *                _setClaimed: the token word (resolved); _link (CLAIMED ->
 *                AWAITING, the claim CAS UNSET -> pointer, the token CAS
 *                0 -> LINKED, else a forwarder on us completing the linked
 *                future; not tried when the other's claim is loaded
 *                taken); otherwise flatten: walk (following targets and
 *                links), FLATTENING, walk, then _linkInto when we were
 *                CLAIMED, our token word is empty and the walk's end is
 *                AWAITING (a root): our claim FLATTENING -> pointer | TAKEN
 *                to the end, our token CAS 0 -> LINKED; else (or when that
 *                token CAS fails) a forwarder on the walk's end. The end
 *                may also be UNSET (_isRoot): a node is on its token then,
 *                so its token is never linked and never links itself.
 *   try_set      Future._trySet: claim (UNSET -> CLAIMED), or
 *                _takeClaimOtherwise and complete the root.
 *   immortalize  Future._tryImmortalize: the same, settling immortal.
 *   register     a handler registered on a future: _NodeRef._enter pushes on its
 *                own token and, when the CAS meets a link (CF_REG_LINKED),
 *                on the root (_tokenPtr).
 *   drop         a strong reference released; the last runs deinit:
 *                _abandon (_settleAbandoned on its own word unless linked;
 *                the root made immortal if the claim was not taken; the
 *                claim word's reference on the root released).
 *
 * Granularity: one d_step per atomic operation on a shared word (a claim
 * word, a token word); a token is abstracted to its word (pending,
 * cancelled, immortal, linked) and the set of handlers pushed on it, since
 * cf_core.pml proves the list itself. A settle takes the set in one step
 * and runs or discards the handlers in the next, forwarders completing or
 * immortalizing their outputs in a loop (the drain). Sequentially
 * consistent: the orderings cf_core.c gives (full CASes, acquire loads)
 * are what make that true for these steps.
 *
 * Futures: X = 0 (the outer step's output), Y = 1 (the future X's step
 * function returned: a step output), Z = 2 (in L2, the one Y's
 * step function returned; in L3, a source's future).
 *
 * Configurations (-DCFG_*):
 *   L1  T0 sets X to Y, then drops its reference to Y. T1, Y's producer:
 *       sets Y to 1, or makes it immortal, or does nothing, then drops Y.
 *       T2, a holder the function handed Y to: registers a handler on Y
 *       and drops it, or only drops it.
 *   L2  Two levels, every step concurrent: T0 sets X to Y and drops Y; T1,
 *       Y's step, sets Y to Z, drops Z, drops Y; T2, Z's producer, sets Z
 *       to 1, makes it immortal (the claim taken through two levels) or does
 *       nothing, then drops Z.
 *   L3  A cycle through a link, closed concurrently: T0 sets X to Y (Y
 *       linked into X); T1, Y's producer, sets Y to Z (through X's claim);
 *       T2, Z's source, sets Z to Y. X, Y's root, waits on Z, which waits
 *       on Y: every future ends immortal, found by the walks.
 *   L4  Linking into a root (_linkInto): T0 sets X to Y and drops Y; T1,
 *       Y's producer, sets Y to 1, makes it immortal or does nothing, then
 *       drops Y; T2, Z's source (nothing registered on Z), sets Z to Y,
 *       drops Y, then drops Z. Whichever of X and Z links Y first is the
 *       root; the other links into it (Z's token; X, which its consumer
 *       registered on, through the forwarder).
 *   L5  A root set again through its claim, to a chain ending at another
 *       root (a retry loop's consecutive batches), with a fourth future W
 *       (a step output) and no consumer on X: T0 sets X to Y and drops Y;
 *       T1 sets Z (its consumer registered on it) to W and drops W; T2, Y's
 *       step, sets Y to W (through X's claim when Y is linked), then, W's
 *       producer, sets W to 1, makes it immortal or does nothing, and drops
 *       W and Y. Every future ends with W's outcome; X, once others are
 *       linked into it, must not link its own token (R-5).
 *   L6  A chain built outwards, every step concurrent, three sources'
 *       futures, X's consumer registered on X: T0 sets Y
 *       to X, drops X and Y, then, a holder Z was handed to, registers a
 *       handler on Z or not, and drops Z (the handler may come between
 *       Z's walk and its token link, which then fails and a forwarder on
 *       the root completes Z); T1 sets Z to Y, drops Y and Z; T2, X's
 *       source, sets X to 1 or makes it immortal (its deinit), then drops
 *       X. An UNSET end is linked into; Y and Z, resolved, end as X does.
 * Producers. Every future may be linked (set as another's outcome while
 * unset with nothing registered on it): its producer, a source or a step
 * (or a combinator), completes it or makes it immortal through its claim,
 * which follows the link (it runs, is discarded, its unless fails it, its
 * source dies). Only a future with nothing registered on it can be dropped by
 * its producer unset here (L1's outcome 0 without the holder's handler):
 * then its deinit makes the root immortal. One with a handler registered
 * while it was linked is kept alive by the forwarder _link falls back on,
 * so there that backstop cannot run, and the producer's settle is what
 * completes both.
 * -DWITNESS=k: the end state asserts that there were not k links with the
 * producer's value arriving; run.sh requires spin to refute it (k = 1 in
 * L1; k = 2 in L2: Y into X, then Z into X through Y's claim; k = 1 in
 * L4 counts a token linked by _linkInto; in L5, that a root others were
 * linked into was set to a chain ending at another root; k = 1 in L6: both
 * Y and Z linked by _linkInto).
 *
 * Properties, at the end state (all threads done, every reference dropped):
 *   R-1  X settles exactly once (asserted at every settle: every future at
 *        most once), with the producer's value if it set one, else immortal;
 *        its consumer's handler ran or was discarded accordingly (L3: every
 *        future immortal).
 *   R-2  a handler registered on Y (L1's holder) runs iff Y's producer set
 *        it, else it is discarded: never lost by a link.
 *   R-3  every reference a link took is released once (xrefs 0).
 *   R-4  no deadlock (spin's invalid end states).
 *   R-5  a token is one step from its root: a token is linked only into one
 *        that is not linked, and a future with a token linked into it never
 *        links its own (asserted at every token link, and at the end).
 *
 * Mutants (-DMUT_*), each must be caught (run.sh mutants):
 *   TOKEN_FIRST  _link links the token before the claim CAS
 *   NO_FALLBACK  _link registers no forwarder when the token CAS fails
 *   LINK_STORE   the claim link as a load then a store, not a CAS
 *   NO_TAKEN     _takeClaimOtherwise returns the root without marking the claim taken
 *   NO_RESOLVE   a registration does not resolve a linked token
 *   NO_ABANDON   deinit does not make an untaken link's root immortal
 *   WALK_NO_LINK _walk stops at a linked future instead of following its link
 *   UP_NO_FALLBACK _linkInto registers no forwarder when the token CAS fails
 *   UP_UNTAKEN   _linkInto leaves the claim it names untaken
 *   UP_ANY_END   _linkInto links into any end, not only an AWAITING or UNSET one
 *   UP_NOT_FRESH _linkInto also from a future that was AWAITING when set
 */

#define X 0
#define Y 1
#define Z 2
#define W 3
#if defined(CFG_L5)
#define NF 4
#else
#define NF 3
#endif
#define NONE 9

#define F_UNSET      0   /* CF_F_UNSET */
#define F_CLAIMED    1   /* CF_F_CLAIMED */
#define F_FLATTENING 2   /* CF_F_FLATTENING */
#define F_AWAITING   3   /* CF_F_AWAITING */
#define F_LINK       4   /* a pointer to lroot[f] (>= CF_F_LINK_MIN) */
#define F_LINK_TAKEN 5   /* the same | CF_F_TAKEN */

#define PENDING      0
#define W_CANCELLED  2   /* CF_W_CANCELLED */
#define W_IMMORTAL   4   /* CF_W_IMMORTAL */
#define W_LINKED     8   /* CF_W_LINKED: lroot[f]'s token */

/* handler bits of a token's set: bit f (f < NF) is future f's forwarder */
#define FWD_MASK     ((1 << NF) - 1)
#define HB           (1 << NF)   /* the holder's handler (on Y) */
#define CB           (2 << NF)   /* the consumer's handler (on X; on Z in L5) */

#if defined(CFG_L1) || defined(CFG_L2) || defined(CFG_L3) || defined(CFG_L4) || defined(CFG_L5) || defined(CFG_L6)
#define NP 3
#else
#error "select a configuration with -DCFG_L1 ... -DCFG_L6"
#endif

byte claim[NF];      /* cf_future.claim */
byte lroot[NF];      /* the root a link's pointer names (claim F_LINK / F_LINK_TAKEN, word W_LINKED) */
byte target[NF];     /* _targetRef: future + 1 (0: none) */
byte word[NF];       /* the token word's state: PENDING, W_CANCELLED, W_IMMORTAL, W_LINKED */
byte hl[NF];         /* the handlers pushed on it (its list, non-empty: word != 0) */
byte val[NF];        /* ghost: the value it completed with */
byte nsettle[NF];    /* ghost: settles */
byte refs[NF];       /* strong references (X's consumer's not counted) */
byte xrefs[NF];      /* references future f's link pointer holds on its root */
bit rooted[NF];      /* ghost: a token was linked into its token (R-5) */
bit hreg, hran, hdisc, cran, cdisc;
byte outcome;        /* ghost: the last producer set 1 (1), made it immortal (2), nothing (0) */
byte nlink;          /* ghost: links done (L4, L6: tokens linked by _linkInto) */
bit reroot;          /* ghost: a future others were linked into was set to a chain ending at another root */
byte ndone;

/* A reference released by someone who did not create the future's last
   one: a forwarder's on its output. If it was the last, the future is
   settled (a completed or immortal future's deinit has nothing left to do)
   or someone still settles it. */
inline release(f) {
  d_step { assert(refs[f] > 0); refs[f]--; assert(refs[f] > 0 || word[f] != PENDING) }
}

/* cf_token_settle on future f with cw (value cv) and the drain: the
   handlers run (cancelled) or are discarded (immortal); a forwarder
   completes (copies cv into) or immortalizes its output, whose claim it
   holds, in the same loop (no recursion, like the drain queue), then
   releases the reference it held on it; when that was the last, the
   output's deinit releases the root its claim word names (a future a
   forwarder completed because a handler came before its token link). A
   linked token is never settled. */
inline cascade(f) {
  todo = 1 << f; first = f;
  do
  :: todo == 0 -> break
  :: else ->
     d_step {                                              /* settle_cas: the list taken */
       g = ((todo & 1) -> 0 : ((todo & 2) -> 1 : ((todo & 4) -> 2 : 3)));
       todo = todo & ~(1 << g);
       assert(word[g] == PENDING && nsettle[g] == 0);      /* R-1: once; never a linked token */
       word[g] = cw; nsettle[g]++;
       if :: cw == W_CANCELLED -> val[g] = cv :: else -> skip fi;
       pend = hl[g]; hl[g] = 0;
       if :: g != first -> assert(refs[g] > 0); refs[g]-- :: else -> skip fi;  /* the forwarder's reference */
       if                                                  /* the last: deinit (_dropLink; its root is settled) */
       :: g != first && refs[g] == 0 && (claim[g] == F_LINK || claim[g] == F_LINK_TAKEN) ->
          assert(xrefs[g] > 0 && refs[lroot[g]] > 0 && word[lroot[g]] != PENDING);
          xrefs[g]--; refs[lroot[g]]--
       :: else -> skip
       fi
     };
     d_step {                                              /* drain: run or discard each */
       if :: pend & HB -> if :: cw == W_CANCELLED -> hran = 1 :: else -> hdisc = 1 fi :: else -> skip fi;
       if :: pend & CB -> if :: cw == W_CANCELLED -> cran = 1 :: else -> cdisc = 1 fi :: else -> skip fi;
       todo = todo | (pend & FWD_MASK);
       pend = 0
     }
  od;
  skip
}

/* _tokenPtr(f): its root's token when linked (cf_token_resolve) */
inline resolve(f, e) {
  d_step { e = ((word[f] == W_LINKED) -> lroot[f] : f) }
}

/* _register of handler bit b on future f's own token: pushed while it is
   pending (a forwarder holds a reference on its output, future o), else run
   (or discarded) at once; a link met by the CAS (CF_REG_LINKED) sends it to
   the root (_tokenPtr). */
inline register(f, b, o) {
  e = f;
  do
  :: d_step {                                              /* reg_cas */
       if
       :: word[e] == PENDING -> hl[e] = hl[e] | b; rdone = 1; if :: b != HB -> refs[o]++ :: else -> skip fi
       :: word[e] == W_LINKED -> rdone = 2                 /* CF_REG_LINKED */
       :: else -> rdone = 0; cw = word[e]; cv = val[e]
       fi
     };
     if
     :: rdone == 2 ->
#if defined(MUT_NO_RESOLVE)
        break                                              /* MUTANT no-resolve: dropped */
#else
        d_step { e = ((word[e] == W_LINKED) -> lroot[e] : e) }   /* _tokenPtr again */
#endif
     :: else -> break
     fi
  od;
  if
  :: rdone == 1 -> skip
  :: rdone == 0 ->
     if
     :: b == HB -> d_step { if :: cw == W_CANCELLED -> hran = 1 :: else -> hdisc = 1 fi }
     :: else -> cascade(o)                                 /* a forwarder run inline */
     fi
  :: else -> skip
  fi;
  rdone = 0
}

/* _takeClaimOtherwise(f): t is the root f is linked into, whose claim the
   caller now holds (kept alive by f's pointer), or NONE. */
inline take_through(f, t) {
  d_step { c = claim[f] };                                 /* future_load */
  t = NONE;
  if
  :: c == F_LINK ->
#if defined(MUT_NO_TAKEN)
     d_step { t = lroot[f] }                               /* MUTANT no-taken: the claim left untaken */
#else
     d_step {                                              /* future_claim: pointer -> pointer | TAKEN */
       if
       :: claim[f] == c -> claim[f] = F_LINK_TAKEN; t = lroot[f]
       :: else -> skip
       fi
     }
#endif
  :: else -> skip
  fi
}

/* Future._takeClaim's own claim of f: UNSET -> CLAIMED */
inline claim_own(f) {
  d_step { won = (claim[f] == F_UNSET); if :: won -> claim[f] = F_CLAIMED :: else -> skip fi }  /* future_claim */
}

/* Future._trySet(v) */
inline try_set(f, v) {
  claim_own(f);
  if
  :: won -> cw = W_CANCELLED; cv = v; cascade(f)
  :: else ->
     take_through(f, t);
     if :: t != NONE -> cw = W_CANCELLED; cv = v; cascade(t) :: else -> skip fi
  fi
}

/* Future._tryImmortalize */
inline immortalize(f) {
  d_step { c = claim[f] };                                 /* future_load */
  won = 0;
  if
  :: c == F_UNSET -> claim_own(f)
  :: else -> skip
  fi;
  if
  :: won -> cw = W_IMMORTAL; cascade(f)
  :: else ->
     take_through(f, t);
     if :: t != NONE -> cw = W_IMMORTAL; cascade(t) :: else -> skip fi
  fi
}

/* Future._walk from s to the end of its chain: e, or NONE when it comes
   back to me (a cycle). Three futures: a walk longer than NF steps is in a
   cycle not through me, and, as Brent's algorithm does, stops on one of its
   futures (that cycle's last publisher makes it immortal). */
inline walk(s, e) {
  e = s; wn = 0;
  do
  :: e == me -> e = NONE; break
  :: e != me && wn > NF -> break
  :: e != me && wn <= NF ->
     d_step { c = claim[e]; tg = target[e] };              /* future_load, with _targetRef */
     if
     :: c == F_FLATTENING && tg > 0 -> e = tg - 1
#if !defined(MUT_WALK_NO_LINK)
     :: c == F_LINK || c == F_LINK_TAKEN -> e = lroot[e]
#endif
     :: else -> break
     fi;
     wn++
  od;
  skip   /* (a break may not jump into the caller's next d_step) */
}

/* cf_token_link(f into r): the token CAS 0 -> LINKED (tok_ok), with R-5 */
inline token_link(f, r) {
  d_step {                                                 /* link_cas */
    tok_ok = (word[f] == PENDING && hl[f] == 0);
    if
    :: tok_ok -> assert(word[r] != W_LINKED && !rooted[f]); word[f] = W_LINKED; rooted[r] = 1   /* R-5 */
    :: else -> skip
    fi
  }
}

/* Future._link(other) by me, whose claim the caller holds */
inline link(other) {
  d_step { pre = (claim[other] == F_UNSET) };              /* future_load: not linkable once claimed */
  if
  :: pre ->
  d_step { if :: claim[me] == F_CLAIMED -> claim[me] = F_AWAITING :: else -> skip fi };  /* future_claim (ours) */
#if defined(MUT_TOKEN_FIRST)
  d_step { tok_ok = (word[other] == PENDING && hl[other] == 0); if :: tok_ok -> word[other] = W_LINKED; lroot[other] = me :: else -> skip fi };  /* MUTANT token-first */
#endif
#if defined(MUT_LINK_STORE)
  d_step { linked = (claim[other] == F_UNSET) };           /* MUTANT link-store: load ... */
  if :: linked -> d_step { claim[other] = F_LINK; lroot[other] = me; xrefs[other]++; refs[me]++ } :: else -> skip fi  /* ... then store */
#else
  d_step {                                                 /* future_claim: UNSET -> pointer (passRetained) */
    if
    :: claim[other] == F_UNSET -> claim[other] = F_LINK; lroot[other] = me; xrefs[other]++; refs[me]++; linked = 1
    :: else -> linked = 0                                  /* lost: the reference released */
    fi
  };
#endif
#if !defined(MUT_TOKEN_FIRST)
  if
  :: linked ->
     token_link(other, me);
     if
     :: !tok_ok ->
#if !defined(MUT_NO_FALLBACK)
        register(me, 1 << other, other)                    /* other's forwarder on us */
#else
        skip                                               /* MUTANT no-fallback */
#endif
     :: else -> skip
     fi
  :: else -> skip
  fi;
#endif
  :: else -> linked = 0
  fi;
  tok_ok = 0; pre = 0
}

/* By me (FLATTENING, was CLAIMED), in _setClaimed: our token word; when
   it is empty (nothing registered on me, no token linked into mine),
   _isRoot(e0): e0's claim; when it is a root (AWAITING or UNSET),
   Future._linkInto(e0): linked = whether our token was linked; when not,
   the caller registers the forwarder */
inline link_into(e0) {
  linked = 0;
  d_step { mk = (word[me] == PENDING && hl[me] == 0) };    /* token_load: our word */
  if :: mk -> d_step { c = claim[e0] } :: else -> c = F_CLAIMED fi;   /* future_load */
#if defined(MUT_UP_ANY_END)
  if :: mk && c != F_LINK && c != F_LINK_TAKEN ->          /* MUTANT up-any-end */
#else
  if :: mk && (c == F_AWAITING || c == F_UNSET) ->
#endif
     d_step {                                              /* future_claim: FLATTENING -> pointer | TAKEN */
       assert(claim[me] == F_FLATTENING);
#if defined(MUT_UP_UNTAKEN)
       claim[me] = F_LINK;                                 /* MUTANT up-untaken */
#else
       claim[me] = F_LINK_TAKEN;
#endif
       lroot[me] = e0; xrefs[me]++; refs[e0]++
     };
     token_link(me, e0);
     if :: tok_ok -> linked = 1; nlink++ :: else -> skip fi;
#if defined(MUT_UP_NO_FALLBACK)
     if :: !tok_ok -> linked = 1 :: else -> skip fi;       /* MUTANT up-no-fallback */
#endif
     tok_ok = 0
  :: else -> skip
  fi;
  mk = 0
}

/* Future._setFuture(other) on f */
inline set_future(f, other) {
  claim_own(f);
  me = NONE;
  if
  :: won -> me = f
  :: else -> take_through(f, t); me = t
  fi;
  if
  :: me == NONE -> skip                                    /* already claimed */
  :: else ->
     /* _setClaimed(other) */
     resolve(other, e);
     d_step { w = word[e]; wh = hl[e] };                   /* token_load: other._word */
     if
     :: other == me -> cw = W_IMMORTAL; cascade(me)
     :: other != me && w == W_CANCELLED -> cw = W_CANCELLED; cv = val[e]; cascade(me)
     :: other != me && w == W_IMMORTAL -> cw = W_IMMORTAL; cascade(me)
     :: other != me && (w == PENDING || w == W_LINKED) ->  /* (linked since it was resolved: not 0) */
        linked = 0;
        if :: w == PENDING && wh == 0 -> link(other) :: else -> skip fi;
        if
        :: linked ->
#if !defined(CFG_L4) && !defined(CFG_L6)
           nlink++
#else
           skip
#endif
        :: else ->
           walk(other, s0);
           if
           :: s0 == NONE -> cw = W_IMMORTAL; cascade(me)
           :: else ->
              d_step {                                     /* _publishTarget; future_claim -> FLATTENING */
                assert(claim[me] == F_CLAIMED || claim[me] == F_AWAITING);
#if defined(MUT_UP_NOT_FRESH)
                fresh = 1;                                 /* MUTANT up-not-fresh */
#else
                fresh = (claim[me] == F_CLAIMED);
#endif
                target[me] = s0 + 1; claim[me] = F_FLATTENING
              };
              walk(s0, e0);
              if
              :: e0 == NONE -> cw = W_IMMORTAL; cascade(me)
              :: else ->
                 if :: !fresh && claim[e0] == F_AWAITING && rooted[me] -> reroot = 1 :: else -> skip fi;
                 if :: fresh -> link_into(e0) :: else -> skip fi;
                 if :: !linked -> register(e0, 1 << me, me) :: else -> skip fi   /* the forwarder */
              fi;
              fresh = 0
           fi
        fi
     fi
  fi;
  linked = 0
}

/* a strong reference to f released; the last runs deinit (_abandon) */
inline drop(f) {
  d_step { assert(refs[f] > 0); refs[f]--; last = (refs[f] == 0) };
  if
  :: last ->
     /* _settleAbandoned on its own word: what is registered is discarded */
     d_step { w = word[f]; wh = hl[f] };
     if :: w == PENDING && wh != 0 -> cw = W_IMMORTAL; cascade(f) :: else -> skip fi;
     d_step { c = claim[f] };                              /* future_load */
     if
     :: c == F_LINK || c == F_LINK_TAKEN ->
#if !defined(MUT_NO_ABANDON)
        if :: c == F_LINK -> cw = W_IMMORTAL; cascade(lroot[f]) :: else -> skip fi;
#endif
        d_step { assert(xrefs[f] > 0); xrefs[f]--; t = lroot[f] };
        release(t)                                         /* the pointer's reference */
     :: else -> skip
     fi
  :: else -> skip
  fi
}

proctype Thread(byte tid) {
  byte todo, first, g, pend, cw, cv, c, t, tg, w, wh, me, s0, e0, e, wn;
  bit won, linked, tok_ok, last, pre, fresh, mk;
  byte rdone;
#if defined(CFG_L1)
  if
  :: tid == 0 -> set_future(X, Y); drop(Y)
  :: tid == 1 ->
     if
     :: outcome = 1; try_set(Y, 1)
     :: outcome = 2; immortalize(Y)
     :: !hreg -> outcome = 0                               /* see "Producers" above */
     fi;
     drop(Y)
  :: tid == 2 ->
     if :: hreg -> register(Y, HB, Y) :: else -> skip fi;
     drop(Y)
  fi;
#elif defined(CFG_L2)
  if
  :: tid == 0 -> set_future(X, Y); drop(Y)
  :: tid == 1 -> set_future(Y, Z); drop(Z); drop(Y)
  :: tid == 2 ->
     if
     :: outcome = 1; try_set(Z, 1)
     :: outcome = 2; immortalize(Z)
     :: outcome = 0
     fi;
     drop(Z)
  fi;
#elif defined(CFG_L3)
  if
  :: tid == 0 -> set_future(X, Y); drop(Y)
  :: tid == 1 -> set_future(Y, Z); drop(Z); drop(Y)
  :: tid == 2 -> set_future(Z, Y); drop(Y); drop(Z)
  fi;
#elif defined(CFG_L4)
  if
  :: tid == 0 -> set_future(X, Y); drop(Y)
  :: tid == 1 ->
     if
     :: outcome = 1; try_set(Y, 1)
     :: outcome = 2; immortalize(Y)
     :: outcome = 0
     fi;
     drop(Y)
  :: tid == 2 -> set_future(Z, Y); drop(Y); drop(Z)
  fi;
#elif defined(CFG_L6)
  if
  :: tid == 0 ->
     set_future(Y, X); drop(X); drop(Y);
     if :: hreg -> register(Z, HB, Z) :: else -> skip fi;  /* a holder Z was handed to */
     drop(Z)
  :: tid == 1 -> set_future(Z, Y); drop(Y); drop(Z)
  :: tid == 2 ->
     if
     :: outcome = 1; try_set(X, 1)
     :: outcome = 2; immortalize(X)                        /* its source's deinit */
     fi;
     drop(X)
  fi;
#else
  if
  :: tid == 0 -> set_future(X, Y); drop(Y)
  :: tid == 1 -> set_future(Z, W); drop(W)
  :: tid == 2 ->
     set_future(Y, W);
     if
     :: outcome = 1; try_set(W, 1)
     :: outcome = 2; immortalize(W)
     :: outcome = 0
     fi;
     drop(W); drop(Y)
  fi;
#endif
  ndone++
}

init {
  byte i, g;
  d_step {
    hl[X] = CB;                    /* X's consumer */
#if defined(CFG_L1)
    refs[Y] = 3                    /* T0's (the function's result), T1's (its step), T2's */
#elif defined(CFG_L2)
    refs[Y] = 2;                   /* T0's, T1's (Y's step) */
    refs[Z] = 2                    /* T1's (the function's result), T2's (its step) */
#elif defined(CFG_L3)
    refs[Y] = 3;                   /* T0's, T1's (Y's step), T2's (Z's set) */
    refs[Z] = 2                    /* T1's (what Y's step returned), T2's (Z's source) */
#elif defined(CFG_L4)
    refs[Y] = 3;                   /* T0's, T1's (its producer), T2's (Z's set) */
    refs[Z] = 1                    /* T2's (Z's source and holder) */
#elif defined(CFG_L6)
    refs[X] = 2;                   /* T0's (Y's set), T2's (X's source) */
    refs[Y] = 2;                   /* T0's (Y's source), T1's (Z's set) */
    refs[Z] = 2                    /* T1's (Z's source), T0's (a holder) */
#else
    hl[X] = 0; hl[Z] = CB;         /* the consumer is Z's: X may link its token */
    refs[Y] = 2;                   /* T0's, T2's (Y's step) */
    refs[W] = 2                    /* T1's (Z's set), T2's (Y's step result, W's producer) */
#endif
  };
#if defined(CFG_L1) || defined(CFG_L6)
  if :: hreg = 1 :: hreg = 0 fi;  /* whether the holder registers a handler (not in the d_step: there the first option always wins) */
#endif
  atomic { run Thread(0); run Thread(1); run Thread(2) };
  (ndone == NP);
  d_step {
    i = 0;
    do
    :: i < NF ->
       assert(word[i] != W_LINKED || word[lroot[i]] != W_LINKED);   /* R-5 */
       /* R-3; X, whose consumer holds it, may still hold its link's
          reference (_linkInto) */
#if !defined(CFG_L5)
       assert(i == X || xrefs[i] == 0);
#endif
       i++
    :: else -> break
    od;
#if defined(CFG_L5)
    i = 0;
    do
    :: i < NF ->
       /* R-3: X and Z, held by their consumers, may hold their links' references */
       assert(refs[i] == ((xrefs[X] > 0 && lroot[X] == i) -> 1 : 0) + ((xrefs[Z] > 0 && lroot[Z] == i) -> 1 : 0));
       assert(i == X || i == Z || xrefs[i] == 0);
       /* R-1: every future, resolved, ends with W's outcome */
       g = ((word[i] == W_LINKED) -> lroot[i] : i);
       assert(outcome != 1 || (word[g] == W_CANCELLED && val[g] == 1));
       assert(outcome == 1 || word[g] == W_IMMORTAL);
       i++
    :: else -> break
    od;
    assert(outcome != 1 || (cran && !cdisc));
    assert(outcome == 1 || (cdisc && !cran));
#if defined(WITNESS)
    assert(!(reroot && outcome == 1))
#endif
#elif defined(CFG_L6)
    i = 0;
    do
    :: i < NF ->
       assert(refs[i] == 0 && xrefs[i] == 0);              /* R-3 */
       /* R-1: every future, resolved, ends as X does */
       g = ((word[i] == W_LINKED) -> lroot[i] : i);
       assert(word[g] == word[X] && (word[X] != W_CANCELLED || val[g] == 1));
       i++
    :: else -> break
    od;
    assert(nsettle[X] == 1);
    assert(outcome != 1 || (word[X] == W_CANCELLED && val[X] == 1 && cran && !cdisc));
    assert(outcome == 1 || (word[X] == W_IMMORTAL && cdisc && !cran));
    /* R-2: the holder's handler on Z, registered at any point of Z's set */
    assert(!hreg || (outcome == 1 -> hran && !hdisc : hdisc && !hran));
#if defined(WITNESS)
    assert(!(nlink >= 2 && outcome == 1))
#endif
#elif defined(CFG_L4)
    i = 0;
    do
    :: i < NF -> assert(refs[i] == ((xrefs[X] > 0 && lroot[X] == i) -> 1 : 0)); i++   /* R-3 */
    :: else -> break
    od;
    /* R-1: X settles once (its consumer's handler keeps it from linking its
       token), and Z, resolved, ends as X does */
    assert(nsettle[X] == 1);
    assert(outcome != 1 || (word[X] == W_CANCELLED && val[X] == 1 && cran && !cdisc));
    assert(outcome == 1 || (word[X] == W_IMMORTAL && cdisc && !cran));
    g = ((word[Z] == W_LINKED) -> lroot[Z] : Z);
    assert(word[g] == word[X] && (word[X] != W_CANCELLED || val[g] == 1));
#if defined(WITNESS)
    assert(!(nlink >= WITNESS && outcome == 1))
#endif
#elif defined(CFG_L3)
    /* R-1: the cycle X -> Z -> Y -> X is found, every future immortal */
    assert(word[X] == W_IMMORTAL && cdisc && !cran);
    assert(word[Z] == W_IMMORTAL || (word[Z] == W_LINKED && word[lroot[Z]] == W_IMMORTAL));
    assert(word[Y] == W_IMMORTAL || (word[Y] == W_LINKED && word[lroot[Y]] == W_IMMORTAL))
#else
    i = 0;
    do
    :: i < NF -> assert(refs[i] == ((xrefs[X] > 0 && lroot[X] == i) -> 1 : 0)); i++   /* R-3 */
    :: else -> break
    od;
    /* R-1 */
    assert(nsettle[X] == 1);
    assert(outcome != 1 || (word[X] == W_CANCELLED && val[X] == 1 && cran && !cdisc));
    assert(outcome == 1 || (word[X] == W_IMMORTAL && cdisc && !cran));
    /* R-2 */
    assert(!hreg || (outcome == 1 -> hran && !hdisc : hdisc && !hran));
#if defined(WITNESS)
    assert(!(nlink >= WITNESS && outcome == 1))
#endif
#endif
  }
}
