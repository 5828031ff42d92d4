/*
 * redirect.pml -- exhaustive model of the redirection (Future._redirect)
 *
 * cf_core.pml models the claim word's UNSET / CLAIMED / FLATTENING and the
 * token lists in full. This model adds the values the redirection uses,
 * AWAITING, THROUGH and a pointer to the future redirected into (the
 * reference it holds), and the Swift code that reads and writes them
 * (Sources/CollapsingFutures/Future.swift, Internal/_Registration.swift):
 *
 *   set_future   Future._setFuture(_:redirecting: true) from a collapsing
 *                step's _run: claim (UNSET -> CLAIMED) or take the claim
 *                through a redirection; then _setClaimed: the token word;
 *                _redirect (claim load, cf_held_only_by, the word again,
 *                CLAIMED -> AWAITING, the redirecting CAS UNSET -> pointer);
 *                otherwise flatten: walk, FLATTENING, walk, forwarder.
 *   try_set      Future._trySet: claim, or _takeClaimThrough and complete
 *                the future redirected into.
 *   immortalize  _tryImmortalizeFuture: the same, settling immortal.
 *   drop         a strong reference released; the last runs deinit:
 *                _abandon (_settleAbandoned, then the redirection's target
 *                made immortal).
 *
 * Granularity: one d_step per atomic operation on a shared word (a claim
 * word, a token word, the strong count read by cf_held_only_by); a token is
 * abstracted to its word (pending, cancelled, immortal) and the set of
 * handlers pushed on it, since cf_core.pml proves the list itself. A
 * settle takes the set in one step and runs or discards the handlers in the
 * next, forwarders completing or immortalizing their outputs in a loop (the
 * drain). Sequentially consistent: the orderings cf_core.c and
 * cf_held_only_by give (full CASes, acquire loads, the acquire fence after
 * the count) are what make that true for these steps.
 *
 * Futures: X = 0 (the outer step's output), Y = 1 (the future X's step
 * function returned: a step output, unexposed), Z = 2 (in CFG_R2, the one
 * Y's step function returned).
 *
 * Configurations (-DCFG_*):
 *   R1  T0 sets X to Y (redirecting), then drops its reference to Y.
 *       T1, Y's producer: sets Y to 1, or makes it immortal, or does
 *       nothing, then drops Y. T2, a holder the function handed Y to:
 *       registers a handler on Y and drops it, or only drops it.
 *   R2  Two levels, every step concurrent: T0 sets X to Y and drops Y; T1,
 *       Y's step, sets Y to Z (redirecting), drops Z, drops Y; T2, Z's
 *       producer, sets Z to 1, makes it immortal (the claim taken through
 *       two levels) or does nothing, then drops Z.
 * -DWITNESS=k: the end state asserts that there were not k redirections
 * with the producer's value arriving; run.sh requires spin to refute it
 * (k = 1 in R1; k = 2 in R2: Y into X, then Z into X through Y's claim).
 *
 * Properties, at the end state (all threads done, every reference dropped):
 *   R-1  X settles exactly once (asserted at every settle: every future at
 *        most once), with the producer's value if it set one, else immortal;
 *        its consumer's handler ran or was discarded accordingly.
 *   R-2  a handler registered on Y (R1's holder) runs iff Y's producer
 *        set it, else it is discarded: never lost by a redirection.
 *   R-3  every reference a redirection took is released once (xrefs 0).
 *   R-4  no deadlock (spin's invalid end states).
 *
 * Mutants (-DMUT_*), each must be caught (run.sh mutants):
 *   WORD_FIRST   _redirect does not read the token word again after the count
 *   NO_COUNT     _redirect does not count references (cf_held_only_by)
 *   REDIR_STORE  the redirection as a load then a store, not a CAS
 *   KEEP_PTR     _takeClaimThrough loads the pointer but leaves it (no THROUGH)
 *   NO_ABANDON   deinit does not make the redirection's target immortal
 */

#define X 0
#define Y 1
#define Z 2
#define NF 3
#define NONE 9

#define F_UNSET      0   /* CF_F_UNSET */
#define F_CLAIMED    1   /* CF_F_CLAIMED */
#define F_FLATTENING 2   /* CF_F_FLATTENING */
#define F_AWAITING   3   /* CF_F_AWAITING */
#define F_THROUGH    4   /* CF_F_THROUGH */
#define F_PTR       16   /* CF_F_REDIRECT_MIN: F_PTR + f is a pointer to future f */

#define PENDING      0
#define W_CANCELLED  2   /* CF_W_CANCELLED */
#define W_IMMORTAL   4   /* CF_W_IMMORTAL */

/* handler bits of a token's set: bit f (f < NF) is future f's forwarder */
#define FWD_MASK     7
#define HB           8   /* the holder's handler (on Y) */
#define CB          16   /* the consumer's handler (on X) */

#if defined(CFG_R1)
#define NP 3
#elif defined(CFG_R2)
#define NP 3
#else
#error "select a configuration with -DCFG_R1 or -DCFG_R2"
#endif

byte claim[NF];      /* cf_future.claim */
byte target[NF];     /* _targetRef: future + 1 (0: none) */
byte word[NF];       /* the token word's state: PENDING, W_CANCELLED, W_IMMORTAL */
byte hl[NF];         /* the handlers pushed on it (its list, non-empty: word != 0) */
byte val[NF];        /* ghost: the value it completed with */
byte nsettle[NF];    /* ghost: settles */
byte refs[NF];       /* strong references (X's consumer's not counted) */
byte xrefs[NF];      /* references a redirection word holds on future f's target */
bit unexposed[NF];
bit hreg, hran, hdisc, cran, cdisc;
byte outcome;        /* ghost: the last producer set 1 (1), made it immortal (2), nothing (0) */
byte nredirect;      /* ghost: redirections done */
byte ndone;

/* A reference released by someone who did not create the future's last
   one: a forwarder's on its output, a claim taker's on the future it took
   the claim of. If it was the last, the future is settled (a completed or
   immortal future's deinit has nothing left to do: its claim word is no
   pointer, see drop) or someone still settles it. */
inline release(f) {
  d_step { assert(refs[f] > 0); refs[f]--; assert(refs[f] > 0 || word[f] != PENDING) }
}

/* cf_token_settle on future f with cw (value cv) and the drain: the
   handlers run (cancelled) or are discarded (immortal); a forwarder
   completes (copies cv into) or immortalizes its output, whose claim it
   holds, in the same loop (no recursion, like the drain queue), then
   releases the reference it held on it. */
inline cascade(f) {
  todo = 1 << f; first = f;
  do
  :: todo == 0 -> break
  :: else ->
     d_step {                                              /* settle_cas: the list taken */
       g = ((todo & 1) -> 0 : ((todo & 2) -> 1 : 2));
       todo = todo & ~(1 << g);
       assert(word[g] == PENDING && nsettle[g] == 0);      /* R-1: once */
       word[g] = cw; nsettle[g]++;
       if :: cw == W_CANCELLED -> val[g] = cv :: else -> skip fi;
       pend = hl[g]; hl[g] = 0;
       if :: g != first -> assert(refs[g] > 0); refs[g]-- :: else -> skip fi   /* the forwarder's reference */
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

/* cf_token_register of handler bit b on future e's token: pushed while it
   is pending (a forwarder holds a reference on its output, future o), else
   run (or discarded) at once. */
inline register(e, b, o) {
  d_step {                                                 /* reg_cas */
    if
    :: word[e] == PENDING -> hl[e] = hl[e] | b; rdone = 1; if :: b != HB -> refs[o]++ :: else -> skip fi
    :: else -> rdone = 0; cw = word[e]; cv = val[e]
    fi
  };
  if
  :: rdone -> skip
  :: else ->
     if
     :: b == HB -> d_step { if :: cw == W_CANCELLED -> hran = 1 :: else -> hdisc = 1 fi }
     :: else -> cascade(o)                                 /* a forwarder run inline */
     fi
  fi
}

/* _takeClaimThrough(f): t is the future f was redirected into, whose claim
   the caller now holds, with the reference the pointer held (the caller
   releases it), or NONE. */
inline take_through(f, t) {
  d_step { c = claim[f] };                                 /* future_load */
  t = NONE;
  if
  :: c >= F_PTR ->
#if defined(MUT_KEEP_PTR)
     d_step { t = c - F_PTR }                              /* MUTANT keep-ptr: the pointer left in place */
#else
     d_step {                                              /* future_claim: pointer -> THROUGH */
       if
       :: claim[f] == c -> claim[f] = F_THROUGH; t = c - F_PTR; assert(xrefs[f] > 0); xrefs[f]--
       :: else -> skip
       fi
     }
#endif
  :: else -> skip
  fi
}

/* Future._trySet(v) */
inline try_set(f, v) {
  d_step { won = (claim[f] == F_UNSET); if :: won -> claim[f] = F_CLAIMED :: else -> skip fi };  /* future_claim */
  if
  :: won -> cw = W_CANCELLED; cv = v; cascade(f)
  :: else ->
     take_through(f, t);
     if :: t != NONE -> cw = W_CANCELLED; cv = v; cascade(t); release(t) :: else -> skip fi
  fi
}

/* _tryImmortalizeFuture */
inline immortalize(f) {
  d_step { c = claim[f] };                                 /* future_load */
  won = 0;
  if
  :: c == F_UNSET -> d_step { won = (claim[f] == F_UNSET); if :: won -> claim[f] = F_CLAIMED :: else -> skip fi }
  :: else -> skip
  fi;
  if
  :: won -> cw = W_IMMORTAL; cascade(f)
  :: else ->
     take_through(f, t);
     if :: t != NONE -> cw = W_IMMORTAL; cascade(t); release(t) :: else -> skip fi
  fi
}

/* Future._walk from s to the end of its chain (no cycles here) */
inline walk(s, e) {
  e = s;
  do
  :: true ->
     d_step { c = claim[e]; tg = target[e] };              /* future_load, with _targetRef */
     if
     :: c == F_FLATTENING -> assert(tg > 0 && tg - 1 != me); e = tg - 1
     :: else -> break
     fi
  od;
  skip   /* (a break may not jump into the caller's next d_step) */
}

/* Future._setFuture(other, redirecting: true) on f */
inline set_future(f, other) {
  d_step { won = (claim[f] == F_UNSET); if :: won -> claim[f] = F_CLAIMED :: else -> skip fi };  /* future_claim */
  me = NONE;
  if
  :: won -> me = f
  :: else -> take_through(f, t); me = t
  fi;
  if
  :: me == NONE -> skip                                    /* already claimed */
  :: else ->
     /* _setClaimed(other, redirecting: true) */
     d_step { w = word[other]; wh = hl[other] };           /* token_load: other._word */
     if
     :: w == W_CANCELLED -> cw = W_CANCELLED; cv = val[other]; cascade(me)
     :: w == W_IMMORTAL -> cw = W_IMMORTAL; cascade(me)
     :: else ->
        redirected = 0;
        if
        :: wh == 0 && unexposed[other] ->
           /* _redirect(other) */
           d_step { c = claim[other] };                    /* future_load */
           ok = (c == F_UNSET);
#if !defined(MUT_NO_COUNT)
           if :: ok -> d_step { ok = (refs[other] == 2) } :: else -> skip fi   /* cf_held_only_by(other, 2) */
#endif
#if !defined(MUT_WORD_FIRST)
           if :: ok -> d_step { ok = (word[other] == PENDING && hl[other] == 0) } :: else -> skip fi  /* token_load again */
#endif
           if
           :: ok ->
              d_step { if :: claim[me] == F_CLAIMED -> claim[me] = F_AWAITING :: else -> skip fi };  /* future_claim (ours) */
#if defined(MUT_REDIR_STORE)
              d_step { ok = (claim[other] == F_UNSET) };   /* MUTANT redir-store: load ... */
              if :: ok -> d_step { claim[other] = F_PTR + me; xrefs[other]++; refs[me]++; redirected = 1 } :: else -> skip fi  /* ... then store */
#else
              d_step {                                     /* future_claim: UNSET -> pointer (passRetained) */
                if
                :: claim[other] == F_UNSET -> claim[other] = F_PTR + me; xrefs[other]++; refs[me]++; redirected = 1
                :: else -> skip                            /* lost: the reference released */
                fi
              }
#endif
           :: else -> skip
           fi
        :: else -> skip
        fi;
        if
        :: redirected -> nredirect++
        :: else ->
           walk(other, s0);
           d_step {                                        /* _publishTarget; future_claim -> FLATTENING */
             assert(claim[me] == F_CLAIMED || claim[me] == F_AWAITING);
             target[me] = s0 + 1; claim[me] = F_FLATTENING
           };
           walk(s0, e0);
           register(e0, 1 << me, me)                       /* the forwarder */
        fi
     fi;
     if :: me != f -> release(me) :: else -> skip fi       /* the claim taker's reference */
  fi
}

/* a strong reference to f released; the last runs deinit (_abandon) */
inline drop(f) {
  d_step { assert(refs[f] > 0); refs[f]--; last = (refs[f] == 0) };
  if
  :: last ->
     /* _settleAbandoned: what is registered is discarded */
     d_step { w = word[f]; wh = hl[f] };
     if :: w == PENDING && wh != 0 -> cw = W_IMMORTAL; cascade(f) :: else -> skip fi;
#if !defined(MUT_NO_ABANDON)
     d_step { c = claim[f] };                              /* future_load */
     if
     :: c >= F_PTR -> d_step { assert(xrefs[f] > 0); xrefs[f]--; t = c - F_PTR }; cw = W_IMMORTAL; cascade(t); release(t)
     :: else -> skip
     fi
#endif
  :: else -> skip
  fi
}

proctype Thread(byte tid) {
  byte todo, first, g, pend, cw, cv, c, t, tg, w, wh, me, s0, e0;
  bit won, ok, redirected, rdone, last;
#if defined(CFG_R1)
  if
  :: tid == 0 -> set_future(X, Y); drop(Y)
  :: tid == 1 ->
     if
     :: outcome = 1; try_set(Y, 1)
     :: outcome = 2; immortalize(Y)
     :: outcome = 0
     fi;
     drop(Y)
  :: tid == 2 ->
     if
     :: hreg = 1; register(Y, HB, Y)
     :: skip
     fi;
     drop(Y)
  fi;
#else
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
#endif
  ndone++
}

init {
  byte i;
  d_step {
    hl[X] = CB;                    /* X's consumer */
    unexposed[Y] = 1; unexposed[Z] = 1;
#if defined(CFG_R1)
    refs[Y] = 3                    /* T0's (the function's result), T1's (its step), T2's */
#else
    refs[Y] = 2;                   /* T0's, T1's (Y's step) */
    refs[Z] = 2                    /* T1's (the function's result), T2's (its step) */
#endif
  };
  atomic { run Thread(0); run Thread(1); run Thread(2) };
  (ndone == NP);
  d_step {
    i = 0;
    do
    :: i < NF -> assert(refs[i] == 0 && xrefs[i] == 0); i++      /* R-3 */
    :: else -> break
    od;
    /* R-1 */
    assert(nsettle[X] == 1);
    assert(outcome != 1 || (word[X] == W_CANCELLED && val[X] == 1 && cran && !cdisc));
    assert(outcome == 1 || (word[X] == W_IMMORTAL && cdisc && !cran));
    /* R-2 */
    assert(!hreg || (outcome == 1 -> hran && !hdisc : hdisc && !hran));
#if defined(WITNESS)
    assert(!(nredirect >= WITNESS && outcome == 1))
#endif
  }
}
