/*
 * wheel.pml -- exhaustive model of CSources/CCollapsingFutures/cf_wheel.c
 * (with the atomic load of an entry's state, cf_deadline.c, which
 * cf_wheel_slots.c calls)
 *
 * The deadline protocol between arming threads (cf_deadline_arm: a Treiber
 * push on the inbox, a full fence, then the load of the driver's sleep tick
 * and a wake when the entry is due earlier), cancelling threads
 * (cf_deadline_cancel: the CAS ARMED -> CANCELLED, the count of cancels,
 * the mark, the CAS of sweep_wanted and a wake) and the driver thread
 * (drive: take the inbox; put what arrived cancelled on `gone`, place the
 * rest; advance the slots to now (due, or gone); fire what is due with the
 * CAS ARMED -> FIRED (a lost CAS: gone); hand back what is gone; sweep when
 * asked (gone, handed back, the count down by a full add, the flag cleared,
 * fence); count the other drops; store the mark; publish the sleep tick,
 * fence, look at the inbox and the count again; sleep until woken or until
 * the tick). A configuration is selected with -DCFG_<NAME>, a mutant with
 * -DMUT_<NAME>; `bash Model/run.sh` (`make model`) and `bash Model/run.sh
 * mutants` (`make model-mutants`) run them.
 *
 * Granularity. Every atomic operation of cf_wheel.c, cf_wheel_slots.c and
 * cf_deadline.c
 * on a shared word (CAS,
 * load, store, fetch-and-add, full fence) is a Promela step (a d_step or
 * atomic), named after the C function; so are wake() and the driver's
 * wait, each under sleep_lock in C (one step each: the lock makes them
 * atomic with respect to each other). What one thread owns at that moment
 * is merged into the neighbouring step: an entry's fields before its push,
 * the list take_inbox took, the wheel itself (driver thread only, no
 * atomics). A few neighbouring atomic operations of the driver share one
 * step where that adds no behaviour and drops none:
 *   - a load of sweep_at with the load of cancels before it (sweep_test,
 *     recheck): only the driver stores sweep_at, so its load returns the
 *     driver's own last store whenever it runs;
 *   - the store of sweep_at with the store of sleep_tick (mark_store,
 *     tick_store): both go into the buffer, invisible to the others until
 *     the flusher moves them, in either order;
 *   - the store of sweep_wanted with the fence right after it (want_clear,
 *     want_fence): the store reaching memory at any moment up to the fence
 *     is this step at that moment;
 *   - the fence after the tick with the re-check's load of the inbox
 *     (tick_fence, recheck): the flusher can empty the buffer at any moment
 *     before, as the fence would.
 *
 * The wheel (cf_slots) is abstracted to the set of entries it holds, with
 * their ticks: cf_slots_advance takes every entry whose tick `now` reached
 * (one load of its state each: due, or gone), and the driver sleeps until
 * the smallest tick it holds (capped at now + IDLE after a pass that
 * brought entries, as in C), or forever when it holds none. The slot
 * arithmetic is single-threaded (cf_wheel_slots.c, tested on a clock of
 * the tests' own) and not modelled: the model takes cf_slots_next_due to
 * return a tick at or before that of every entry held, and an entry to
 * come out of cf_slots_advance once `now` reached its tick. An entry that
 * moves down a level is loaded once more in C: that load of ARMED changes
 * nothing, and a cancelled one met there goes as the sweep's do. Entries
 * that arrive are examined in index order (C: in the order armed); nothing
 * in the protocol depends on that order.
 *
 * Time. `clk` is the tick the clock has reached; it moves only when the
 * driver's timed wait runs out (to the target). An arm reads it for its
 * deadline (tick = clk + a delay of 1 or 2, chosen nondeterministically);
 * the driver reads it as `now` at the start of a pass. So every state where
 * the driver sleeps is a point where the clock may stand still for as long
 * as the other threads need, which is where a lost wake-up shows.
 *
 * Memory model. Sequentially consistent, with one exception: the driver's
 * relaxed stores (AO_store of sleep_tick, sweep_wanted and sweep_at) go
 * into a store buffer, one slot per location, which the `flusher` process
 * empties into memory at any time and in any order across locations (a
 * store to a location whose earlier store is still buffered first writes
 * that one to memory: its value stays visible to others for a while). The
 * driver's own loads read its buffer first; every full operation of the
 * driver (AO_nop_full, the inbox CAS, the fire CAS, the full add) first
 * drains the buffer. The arm's load of the sleep tick follows its push in
 * program order: cf_deadline_arm puts a full fence between them, and the
 * arm-early mutant is what that fence rules out (libatomic_ops' full CAS
 * lets a later plain load go first on ARM). The cancel's load of sweep_at
 * follows its add the same way: cf_deadline_cancel puts a full fence
 * between them, and the cancel-nofence mutant (the load satisfied before
 * the add is visible) is what that fence rules out. So the proof holds with
 * store->load reordering of the driver's relaxed stores, and the
 * tick-nofence mutant shows that the fence after publishing the sleep tick
 * is what rules it out.
 *
 * Step table: `@step <id> | <C function> | <snippet of the C line>`, checked
 * by Model/check-steps.sh against cf_wheel.c as cf_core.pml's is against
 * cf_core.c (a snippet `A >> B` names the first line after A's that contains
 * B: the two fences of drive, the two stores of 0 to sleep_tick; a snippet
 * starting with ^ must start the trimmed line; `file.c:function` names a
 * static function defined in both files). One C line is named once and may
 * mark several model steps: state_load (the load of an entry's state:
 * of a cancel that lost, and reached from the inbox, cf_slots_advance and
 * cf_slots_sweep), drop_all (after the firing, after
 * the sweep), sweep_test and recheck (three loads on one C line each),
 * tick_retract (both re-check outcomes), sleep_timed and sleep_apple
 * (woken, or timed out: drive's loop calls wait_for until one of the two;
 * a wait cut short to read the wheel's clock again touches no shared word,
 * so it adds no step), wake (from arm and cancel). held_store and
 * debug_held name held_shown, which only tests and the benchmark read: no
 * decision of the wheel depends on it, so the model keeps no state for it.
 *
 * Slices. cf_wheel.c fires at most CF_WHEEL_SLICE (1,024) of what came
 * due in a pass and as many of its backlog (what earlier passes left, in
 * the driver's own list), and starts the next pass at once while a
 * backlog waits, without publishing a sleep tick, and sweeps only once
 * the backlog is empty. The model holds fewer entries than a slice, so
 * each pass fires everything due and the backlog is always empty, as
 * here; an entry left in the backlog stays ARMED and is decided by the
 * same fire_cas against cancel_cas when its turn comes.
 *
 * @step drop_all      | drop_all           | w->event(d, CF_DL_DROP);
 * @step take_load     | take_inbox         | AO_t head = AO_load(W(&w->inbox));
 * @step take_cas      | take_inbox         | AO_t seen = AO_fetch_compare_and_swap_full(W(&w->inbox), head, 0);
 * @step sweep_test    | drive              | int swept = w->backlog.head == NULL && (AO_load(W(&w->sweep_wanted)) ||
 * @step fire_cas      | cf_wheel.c:fire    | if (AO_compare_and_swap_full(W(&d->state), CF_D_ARMED, CF_D_FIRED)) {
 * @step want_clear    | drive              | AO_store(W(&w->sweep_wanted), 0);
 * @step want_fence    | drive              | AO_store(W(&w->sweep_wanted), 0); >> AO_nop_full();
 * @step drop_count    | drive              | if (dropped) AO_fetch_and_add_full(W(&w->cancels), (AO_t)0 - (AO_t)dropped);
 * @step mark_store    | drive              | AO_store(W(&w->sweep_at), held / 2 > CF_WHEEL_SWEEP_MIN ? held / 2 : CF_WHEEL_SWEEP_MIN);
 * @step held_store    | drive              | AO_store(W(&w->held_shown), held);
 * @step tick_store    | drive              | AO_store(W(&w->sleep_tick), target);
 * @step tick_fence    | drive              | AO_store(W(&w->sleep_tick), target); >> AO_nop_full();
 * @step recheck       | drive              | if (AO_load(W(&w->inbox)) != 0 ||
 * @step tick_retract  | drive              | if (AO_load(W(&w->inbox)) != 0 || >> AO_store(W(&w->sleep_tick), 0);
 * @step sleep_never   | drive              | while (!w->woken) pthread_cond_wait(&w->sleep_cond, &w->sleep_lock);
 * @step sleep_timed   | wait_for           | (void)pthread_cond_timedwait(&w->sleep_cond, &w->sleep_lock, &ts);
 * @step sleep_apple   | wait_for           | (void)pthread_cond_timedwait_relative_np(&w->sleep_cond, &w->sleep_lock, &rel);
 * @step tick_reset    | drive              | w->woken = 0; >> AO_store(W(&w->sleep_tick), 0);
 * @step start_mark    | start              | AO_store(W(&w->sweep_at), CF_WHEEL_SWEEP_MIN);
 * @step wake          | wake               | w->woken = 1;
 * @step arm_load      | cf_deadline_arm    | AO_t head = AO_load(W(&w->inbox));
 * @step arm_cas       | cf_deadline_arm    | AO_t seen = AO_fetch_compare_and_swap_full(W(&w->inbox), head, (AO_t)d);
 * @step arm_fence     | cf_deadline_arm    | AO_nop_full();
 * @step arm_tick      | cf_deadline_arm    | if (tick < AO_load(W(&w->sleep_tick))) wake(w);
 * @step cancel_cas    | cf_deadline_cancel | if (!AO_compare_and_swap_full(W(&d->state), CF_D_ARMED, CF_D_CANCELLED)) return 0;
 * @step cancel_add    | cf_deadline_cancel | AO_t n = AO_fetch_and_add1_full(W(&w->cancels)) + 1;
 * @step cancel_fence  | cf_deadline_cancel | AO_t n = AO_fetch_and_add1_full(W(&w->cancels)) + 1; >> AO_nop_full();
 * @step cancel_mark   | cf_deadline_cancel | (intptr_t)n >= (intptr_t)AO_load(W(&w->sweep_at))
 * @step cancel_want   | cf_deadline_cancel | AO_compare_and_swap_full(W(&w->sweep_wanted), 0, 1)) wake(w);
 * @step state_load    | cf_deadline_state  | return AO_load_acquire(W(&d->state));
 * @step debug_held    | cf_wheel_debug_held | return AO_load(W(&w->held_shown));
 *
 * Configurations (-DCFG_*). The mark's minimum is 1 (CF_WHEEL_SWEEP_MIN is
 * 1024 in C), so one cancel can meet it, and IDLE is 2 ticks
 * (CF_WHEEL_IDLE_TICKS is 1000), so an arm with a delay of 1 must wake a
 * driver capped at now + IDLE. The mark is max(MIN, held / MARK_DIV):
 * MARK_DIV is 2 as in C, which with at most three entries is always 1, so
 * W2 uses 1, a mark that moves as the wheel fills and empties (what the
 * protocol must cope with, and C's mark does once the wheel holds more
 * than 2 * 1024 entries). A cancel waits until its entry was pushed (the
 * Swift caller gets the entry once armed; this also lets it race the arm's
 * last step).
 *   W2   two entries, two client threads: T0 arms 1, then cancels 2; T1 arms
 *        2, then cancels 1 (each cancel can race the other's sweep); the
 *        mark max(MIN, held).
 *   W2S  two entries, two client threads: T0 arms 1, then 2; T1 cancels 1,
 *        then 2 (two pushes in a row, two cancels in a row).
 *   W3   three entries, two client threads: T0 arms 1 and 2, then cancels
 *        3; T1 arms 3, then cancels 1 and 2 (run by hand, see
 *        Model/README.md).
 * -DLIVENESS adds the LTL property W-6 to any of them.
 *
 * Properties (Model/README.md, "The wheel model"):
 *   W-1  every entry is won by exactly one of its canceller and the driver
 *        (ghost count of CAS wins out of ARMED, asserted 1 at each win), and
 *        its payload is released exactly once, by the winner (the canceller
 *        at its win, the driver when it fires).
 *   W-2  no lost wake-up: whenever the driver sleeps unwoken and no arm is
 *        between its push and its wake decision, every armed entry in the
 *        inbox is due at or after the tick it sleeps until (NEVER counts as
 *        later than every tick: sleeping forever past an entry is caught).
 *   W-3  every entry is handed back (cf_swift_deadline_event) exactly once,
 *        by the driver, which touches an entry only while it holds the
 *        wheel's reference; a drop hands back only a cancelled entry; at
 *        the end every entry was handed back and the inbox is empty.
 *   W-4  no lost sweep: whenever the driver sleeps unwoken and no cancel is
 *        between its CAS and its return, the count of cancels is below the
 *        mark and sweep_wanted is clear (or its clear is on its way to
 *        memory); and the count is exact: the cancelled entries not yet
 *        dropped.
 *   W-5  never early: an entry fires only once the clock reached its tick.
 *   W-6  (-DLIVENESS) under weak fairness every client finishes and the
 *        driver comes to rest: asleep with nothing held, forever.
 *   and no deadlock (spin's invalid end states).
 *
 * Mutants (-DMUT_*; each marked MUTANT where it replaces the C behaviour):
 *   CHECK_EARLY    the driver looks at the inbox before publishing its tick
 *   TICK_NOFENCE   no full fence between publishing the tick and the re-check
 *   ARM_EARLY      an arm reads the sleep tick before its push (what its
 *                  full fence rules out)
 *   NO_WOKEN       the driver waits without the woken flag (a wake that came
 *                  before the wait is lost)
 *   CANCEL_STORE   cancel as a load of ARMED then a store of CANCELLED
 *   FIRE_STORE     the driver fires with a load then a store
 *   TAKE_STORE     take_inbox as a load then a store of 0
 *   NO_COUNT_RECHECK  the driver clears sweep_wanted and sleeps without
 *                  re-checking the count
 *   WANT_NOFENCE   no full fence after the clear of sweep_wanted: not a
 *                  bug, spin proves every property without it (the fence
 *                  after the tick store orders the clear before the
 *                  re-check's load of cancels too); run by hand, see
 *                  Model/README.md
 *   CANCEL_NOFENCE cf_deadline_cancel without the fence after its add: its
 *                  load of the mark is satisfied before the add is visible
 */

/* ---------------------------------------------------------------- constants */
#define ARMED     0   /* CF_D_ARMED */
#define CANCELLED 1   /* CF_D_CANCELLED */
#define FIRED     2   /* CF_D_FIRED */
#define EV_FIRE   1   /* CF_DL_FIRE */
#define EV_DROP   2   /* CF_DL_DROP */
#define NEVER     255 /* UINT64_MAX */
/* where an entry is (ghost) */
#define L_OWNER   0   /* not armed yet */
#define L_INBOX   1   /* pushed, not taken */
#define L_DRIVER  2   /* taken: on the driver's arrived or due list */
#define L_WHEEL   3   /* in a slot */
#define L_GONE    4   /* handed back */
/* client programs */
#define O_END     0
#define O_ARM     1   /* cf_deadline_arm(entry a, a delay of 1 or 2 ticks) */
#define O_CANCEL  2   /* cf_deadline_cancel(entry a), once it was pushed */
#define P(t, k, kind, a) :: me == t && pc == k -> opk = kind; e = a

#ifndef SWEEP_MIN
#define SWEEP_MIN 1   /* CF_WHEEL_SWEEP_MIN */
#endif
#ifndef IDLE
#define IDLE      2   /* CF_WHEEL_IDLE_TICKS */
#endif

/* ------------------------------------------------------------ configurations */
#if defined(CFG_W2)
#define NE 2
#define NC 2
#define MARK_DIV 1    /* the mark max(MIN, held): it moves with two entries */
#define PROGRAM   P(0,0,O_ARM,1) P(0,1,O_CANCEL,2) \
                  P(1,0,O_ARM,2) P(1,1,O_CANCEL,1)
#elif defined(CFG_W2S)
#define NE 2
#define NC 2
#define PROGRAM   P(0,0,O_ARM,1) P(0,1,O_ARM,2) \
                  P(1,0,O_CANCEL,1) P(1,1,O_CANCEL,2)
#elif defined(CFG_W3)
#define NE 3
#define NC 2
#define PROGRAM   P(0,0,O_ARM,1) P(0,1,O_ARM,2) P(0,2,O_CANCEL,3) \
                  P(1,0,O_ARM,3) P(1,1,O_CANCEL,1) P(1,2,O_CANCEL,2)
#else
#error "select a configuration with -DCFG_W2, -DCFG_W2S or -DCFG_W3"
#endif
#ifndef MARK_DIV
#define MARK_DIV 2    /* the mark max(MIN, held / 2), as in C */
#endif

/* ------------------------------------------------------------------- state */
/* shared words of cf_wheel.c (memory) */
byte inbox;           /* newest entry pushed (0: empty) */
byte sleep_tick;      /* 0 while the driver is awake */
short cancels;        /* signed: a drop may be counted before its cancel */
byte sweep_at;        /* the mark */
bit  sweep_wanted;
bit  woken;           /* under sleep_lock */
/* the driver's store buffer: one slot per location (pending, value) */
bit  sbt_p; byte sbt_v;   /* sleep_tick */
bit  sbw_p;               /* sweep_wanted (the driver only stores 0) */
bit  sba_p; byte sba_v;   /* sweep_at */
/* entries 1..NE (cf_deadline) */
byte st[NE + 1];      /* state */
byte nx[NE + 1];      /* next: the inbox link */
byte tk[NE + 1];      /* tick */
/* the clock and the driver's sleep */
byte clk;             /* ghost: the tick the clock reached */
byte target;          /* the tick the driver sleeps until (its local, global for the monitor) */
bit  asleep;          /* ghost: the driver passed its re-check and sleeps (or is about to) */
/* ghosts for the properties */
byte loc[NE + 1];     /* L_* */
byte wins[NE + 1];    /* CASes won out of ARMED */
bit  pay[NE + 1];     /* the payload is still held */
bit  wref[NE + 1];    /* the wheel's reference is still held */
byte narm;            /* arms between their push and their wake decision */
byte ncan;            /* cancels between their winning CAS and their return */
byte ndone;           /* clients finished */

/* The driver's view of its buffered words (it never loads sleep_tick);
   memory for everyone else. */
#define D_WANT  (sbw_p -> 0 : sweep_wanted)
#define D_MARK  (sba_p -> sba_v : sweep_at)

/* A relaxed store by the driver: into its buffer (an older store to the
   same word still buffered goes to memory first). */
inline sb_tick(v)  { if :: sbt_p -> sleep_tick = sbt_v :: else -> skip fi; sbt_p = 1; sbt_v = v }
inline sb_want()   { if :: sbw_p -> sweep_wanted = 0 :: else -> skip fi; sbw_p = 1 }
inline sb_mark(v)  { if :: sba_p -> sweep_at = sba_v :: else -> skip fi; sba_p = 1; sba_v = v }
/* A full barrier of the driver: its buffered stores reach memory first. */
inline drain() {
  if :: sbt_p -> sleep_tick = sbt_v; sbt_p = 0; sbt_v = 0 :: else -> skip fi;
  if :: sbw_p -> sweep_wanted = 0; sbw_p = 0 :: else -> skip fi;
  if :: sba_p -> sweep_at = sba_v; sba_p = 0; sba_v = 0 :: else -> skip fi
}

#define WIN(e) wins[e]++; assert(wins[e] == 1)                /* W-1: one winner */

/* cf_swift_deadline_event: the driver hands the entry back with the
   wheel's reference (W-3), and with CF_DL_FIRE hands its payload on. */
inline handback(e, ev) {
  assert(wref[e] && loc[e] == L_DRIVER);
  wref[e] = 0; loc[e] = L_GONE;
  if
  :: ev == EV_FIRE -> assert(st[e] == FIRED && pay[e]); pay[e] = 0   /* W-1 */
  :: else -> assert(st[e] == CANCELLED)                               /* the canceller released it */
  fi;
  tk[e] = 0                                                           /* not read again */
}

/* drop_all: every entry on `gone` handed back (CF_DL_DROP), counted in
   `dropped`; no shared word is touched, so it shares the driver's next step. */
inline drop_all() {
  e = 1;
  do
  :: e > NE -> break
  :: else -> if :: (gone >> e) & 1 -> handback(e, EV_DROP); dropped++ :: else -> skip fi; e++
  od;
  gone = 0; e = 0
}

/* The driver's entries due at `now` (its own: no shared access), into sw. */
inline advance_set() {
  sw = 0; e = 1;
  do
  :: e > NE -> break
  :: else -> if :: ((whl >> e) & 1) && tk[e] <= now -> sw = sw | (1 << e) :: else -> skip fi; e++
  od;
  e = 0
}

/* the lowest entry of a set (bit e: entry e), inside a d_step */
inline lowest(m, e) {
  e = 1;
  do :: (m >> e) & 1 -> break :: else -> e++ od
}

/* ================================================================ clients */
proctype Client(byte me) {
  byte pc, opk, e, h, t, lt;
  bit ok, won, go;

next_op:
  atomic {
    if PROGRAM :: else -> opk = O_END fi;
    if
    :: opk == O_ARM -> goto arm
    :: opk == O_CANCEL -> goto cancel
    :: opk == O_END -> ndone++; goto finished
    fi
  };

/* cf_deadline_arm(e, a delay of 1 or 2 ticks) */
arm:
#if defined(MUT_ARM_EARLY)
  atomic { lt = sleep_tick };                                 /* MUTANT arm-early: the tick read before the push (no fence) */
#endif
  atomic {                                                    /* @arm_load, with the entry's plain writes */
    if :: t = clk + 1 :: t = clk + 2 fi;
    tk[e] = t; st[e] = ARMED; pay[e] = 1; wref[e] = 1;
    h = inbox
  };
  do
  :: d_step {                                                 /* @arm_cas (full) */
       nx[e] = h;
       if
       :: inbox == h -> inbox = e; loc[e] = L_INBOX; narm++; ok = 1
       :: else -> h = inbox
       fi
     };
     if :: ok -> break :: else -> skip fi
  od;
  atomic {
#if !defined(MUT_ARM_EARLY)
    go = (t < sleep_tick);                                    /* @arm_fence, @arm_tick */
#else
    go = (t < lt); lt = 0;
#endif
    h = 0; ok = 0; t = 0;
    if :: !go -> narm--; goto done_op :: else -> skip fi
  };
  atomic { woken = 1; narm--; go = 0; goto done_op };         /* @wake */

/* cf_deadline_cancel(e). The Swift caller holds the entry: it may run once
   the entry was pushed (which also covers a cancel racing the arm's last
   step). */
cancel:
#if !defined(MUT_CANCEL_STORE)
  atomic {                                                    /* @cancel_cas (full) */
    loc[e] != L_OWNER ->
    if
    :: st[e] == ARMED -> st[e] = CANCELLED; WIN(e); assert(pay[e]); pay[e] = 0; ncan++; won = 1  /* action = nil */
    :: else -> won = 0
    fi
  };
#else
  atomic { loc[e] != L_OWNER -> won = (st[e] == ARMED) };    /* MUTANT cancel-store: load ... */
  if
  :: won -> d_step { st[e] = CANCELLED; WIN(e); assert(pay[e]); pay[e] = 0; ncan++ }  /* ... then store */
  :: else -> skip
  fi;
#endif
  if
  :: !won -> atomic { assert(st[e] != ARMED); goto done_op }  /* @state_load: a lost cancel: the entry is settled */
  :: else -> won = 0
  fi;
#if !defined(MUT_CANCEL_NOFENCE)
  d_step { cancels++; t = cancels };                          /* @cancel_add (full) */
  skip;                                                       /* @cancel_fence */
  atomic {                                                    /* @cancel_mark */
    go = (t >= sweep_at); t = 0;
    if :: !go -> ncan--; goto done_op :: else -> skip fi
  };
#else
  d_step { lt = sweep_at };                                   /* without the fence: the mark's load satisfied first */
  atomic {
    cancels++; t = cancels;
    go = (t >= lt); t = 0; lt = 0;
    if :: !go -> ncan--; goto done_op :: else -> skip fi
  };
#endif
  atomic {                                                    /* @cancel_want (full) */
    go = (sweep_wanted == 0);
    if :: go -> sweep_wanted = 1 :: else -> ncan--; goto done_op fi
  };
  atomic { woken = 1; ncan--; go = 0; goto done_op };         /* @wake */

done_op:
  atomic { pc++; e = 0; goto next_op };

finished:
  skip
}

/* ================================================================= driver */
proctype Driver() {
  byte now, h, arr, due, gone, whl, sw, held, dropped, e, lc;
  bit brought, go;

  /* take_inbox (now_tick() merged into its first load; atomic, not d_step,
     so that the pass can be jumped to). The sets the driver walks (what
     arrived, the entries due, the wheel for a sweep) are its own: each is
     found in the step before its walk. Cancelled entries go on `gone`,
     handed back by drop_all after the firing and after the sweep. */
pass:
  atomic { now = clk; h = inbox; if :: h == 0 -> advance_set() :: else -> skip fi };  /* @take_load */
  do
  :: h == 0 -> break
  :: else ->
#if !defined(MUT_TAKE_STORE)
     d_step {                                                 /* @take_cas (full) */
       drain();
       if
       :: inbox == h ->
          inbox = 0;
          do                                                  /* the list taken: the driver's */
          :: h != 0 -> assert(loc[h] == L_INBOX && wref[h]); loc[h] = L_DRIVER; arr = arr | (1 << h); e = h; h = nx[h]; nx[e] = 0
          :: else -> break
          od;
          e = 0; brought = (arr != 0)
       :: else -> h = inbox
       fi
     }
#else
     d_step {                                                 /* MUTANT take-store: a store of 0 after the load */
       drain();
       inbox = 0;
       do
       :: h != 0 -> assert(loc[h] == L_INBOX && wref[h]); loc[h] = L_DRIVER; arr = arr | (1 << h); e = h; h = nx[h]; nx[e] = 0
       :: else -> break
       od;
       e = 0; brought = (arr != 0)
     }
#endif
  od;
  /* what arrived: gone when cancelled, else placed (cf_slots_place) */
  do
  :: arr == 0 -> break
  :: else ->
     d_step {                                                 /* @state_load (the inbox) */
       lowest(arr, e); arr = arr & ~(1 << e);
       assert(wref[e]);
       if
       :: st[e] == CANCELLED -> gone = gone | (1 << e)
       :: else -> loc[e] = L_WHEEL; whl = whl | (1 << e); held++
       fi;
       if :: arr == 0 -> advance_set() :: else -> e = 0 fi
     }
  od;
  /* cf_slots_advance: the entries of the slots that came due are gone or due */
  do
  :: sw == 0 -> break
  :: else ->
     d_step {                                                 /* @state_load (cf_slots_advance) */
       lowest(sw, e); sw = sw & ~(1 << e);
       assert(wref[e]);
       whl = whl & ~(1 << e); held--; loc[e] = L_DRIVER;
       if
       :: st[e] == CANCELLED -> gone = gone | (1 << e)
       :: else -> due = due | (1 << e)
       fi;
       e = 0
     }
  od;
  /* fire what is due */
  do
  :: due == 0 -> break
  :: else ->
#if !defined(MUT_FIRE_STORE)
     d_step {                                                 /* @fire_cas (full) */
       drain();
       lowest(due, e); due = due & ~(1 << e);
       assert(wref[e]);
       if
       :: st[e] == ARMED ->
          st[e] = FIRED; WIN(e);
          assert(tk[e] <= clk);                               /* W-5: never early */
          handback(e, EV_FIRE)
       :: else -> gone = gone | (1 << e)
       fi;
       e = 0
     }
#else
     d_step { drain(); lowest(due, e); due = due & ~(1 << e); assert(wref[e]); go = (st[e] == ARMED) };  /* MUTANT fire-store: load ... */
     d_step {                                                 /* ... then store */
       if
       :: go -> st[e] = FIRED; WIN(e); assert(tk[e] <= clk); handback(e, EV_FIRE)
       :: else -> gone = gone | (1 << e)
       fi;
       e = 0; go = 0
     }
#endif
  od;
  /* The sweep, when asked for or when the count is at the mark. sweep_at
     is stored by the driver alone, so its load returns the driver's own
     last store whenever it runs: it is merged with the load of cancels. */
  atomic { drop_all(); go = D_WANT; if :: go -> sw = whl :: else -> skip fi };  /* @drop_all, @sweep_test: sweep_wanted */
  if
  :: !go -> d_step { go = (cancels >= D_MARK); if :: go -> sw = whl :: else -> skip fi }  /* @sweep_test: cancels, sweep_at */
  :: else -> skip
  fi;
  if
  :: go ->
     do
     :: sw == 0 -> break
     :: else ->
        d_step {                                              /* @state_load (cf_slots_sweep) */
          lowest(sw, e); sw = sw & ~(1 << e);
          assert(wref[e]);
          if
          :: st[e] == CANCELLED -> whl = whl & ~(1 << e); held--; loc[e] = L_DRIVER; gone = gone | (1 << e)
          :: else -> skip
          fi;
          e = 0
        }
     od;
     atomic { drop_all() }                                    /* @drop_all */
  :: else -> skip
  fi;
  if
  :: dropped != 0 -> atomic { drain(); cancels = cancels - dropped; dropped = 0 }  /* @drop_count (full) */
  :: else -> skip
  fi;
  /* After a sweep (go still says so): the clear and the fence after it,
     one step: the driver does nothing between them, so the buffered store
     reaching memory at any moment before the fence is the same as this
     step at that moment. */
  if
  :: go ->
#if !defined(MUT_WANT_NOFENCE)
     d_step { sb_want(); drain(); go = 0 }                    /* @want_clear, @want_fence */
#else
     d_step { sb_want(); go = 0 }                             /* MUTANT want-nofence */
#endif
  :: else -> skip
  fi;
  /* The mark and the tick: two relaxed stores with nothing shared between
     them (held_shown is not modelled), so one step puts both in the buffer. */
  /* @held_store, @debug_held: held_shown, stored here for
     cf_wheel_debug_held (tests and the benchmark); no decision of the
     wheel reads it, so it has no state in the model. */
  d_step {
    lc = held / MARK_DIV; if :: lc < SWEEP_MIN -> lc = SWEEP_MIN :: else -> skip fi;
    sb_mark(lc); lc = 0;                                      /* @mark_store */
    target = NEVER; e = 1;
    do
    :: e > NE -> break
    :: else -> if :: ((whl >> e) & 1) && tk[e] < target -> target = tk[e] :: else -> skip fi; e++
    od;
    e = 0;
    if :: brought && target > now + IDLE -> target = now + IDLE :: else -> skip fi;
    brought = 0;
#if defined(MUT_CHECK_EARLY)
    h = inbox                                                 /* MUTANT check-early: the inbox read first */
#else
    sb_tick(target)                                           /* @tick_store */
#endif
  };
  /* The fence and the re-check's load of the inbox, one step: the flusher
     can empty the buffer at any moment before, as the fence would. */
#if defined(MUT_CHECK_EARLY)
  d_step { sb_tick(target); drain() };
#elif defined(MUT_TICK_NOFENCE)
  d_step { h = inbox };                                       /* MUTANT tick-nofence */
#else
  d_step { drain(); h = inbox };                              /* @tick_fence, @recheck: inbox */
#endif
  if
  :: h != 0 -> d_step { sb_tick(0); h = 0; now = 0 }; goto pass   /* @tick_retract */
  :: else -> skip
  fi;
#if !defined(MUT_NO_COUNT_RECHECK)
  d_step {                                                    /* @recheck: cancels, sweep_at (the driver's own) */
    go = (cancels >= D_MARK);
    if :: !go -> asleep = 1; now = 0 :: else -> skip fi
  };
  if
  :: go -> d_step { sb_tick(0); go = 0; now = 0 }; goto pass  /* @tick_retract */
  :: else -> skip
  fi;
#else
  d_step { asleep = 1; now = 0 };                             /* MUTANT no-count-recheck */
#endif
  /* the wait, under sleep_lock: until woken, or (a finite target) until
     the clock reaches the target; `woken` is cleared either way */
#if defined(MUT_NO_WOKEN)
  d_step { woken = 0 };                                       /* MUTANT no-woken: a wake before the wait is lost */
#endif
end_sleep:
  if
  :: d_step { woken -> woken = 0; asleep = 0 }                /* @sleep_never, @sleep_timed, @sleep_apple: woken */
  :: d_step { target != NEVER ->                              /* @sleep_timed, @sleep_apple: ETIMEDOUT */
       if :: clk < target -> clk = target :: else -> skip fi;
       woken = 0; asleep = 0 }
  fi;
  d_step { sb_tick(0); target = 0 };                          /* @tick_reset */
  goto pass
}

/* The driver's buffered stores reach memory at any time, in any order. */
active proctype flusher() {
end: do
     :: d_step { sbt_p -> sleep_tick = sbt_v; sbt_p = 0; sbt_v = 0 }
     :: d_step { sbw_p -> sweep_wanted = 0; sbw_p = 0 }
     :: d_step { sba_p -> sweep_at = sba_v; sba_p = 0; sba_v = 0 }
     od
}

/* ============================================================= properties */
/* the driver sleeps, unwoken */
#define QUIET_D   (asleep && !woken)
/* W-2: no armed entry in the inbox is due before the driver's target */
#define EARLY(e)  (loc[e] == L_INBOX && st[e] == ARMED && tk[e] < target)
#if NE == 2
#define INBOX_OK  (!EARLY(1) && !EARLY(2))
#define NCANC     ((st[1] == CANCELLED && loc[1] != L_GONE) + (st[2] == CANCELLED && loc[2] != L_GONE))
#else
#define INBOX_OK  (!EARLY(1) && !EARLY(2) && !EARLY(3))
#define NCANC     ((st[1] == CANCELLED && loc[1] != L_GONE) + (st[2] == CANCELLED && loc[2] != L_GONE) + \
                   (st[3] == CANCELLED && loc[3] != L_GONE))
#endif
#define WAKE_OK   (!QUIET_D || narm != 0 || INBOX_OK)
/* W-4: the count below the mark, the flag clear (or its clear buffered) */
#define SWEEP_OK  (!QUIET_D || ncan != 0 || (cancels < D_MARK && (sweep_wanted == 0 || sbw_p)))
/* W-4: the count exact whenever the driver sleeps and no cancel is in flight */
#define COUNT_OK  (!asleep || ncan != 0 || cancels == NCANC)

/* Checked in every reachable state: this process can only move (and then
   fails an assertion) in a state that breaks one of them. */
active proctype monitor() {
end: if
     :: atomic { !WAKE_OK -> assert(WAKE_OK) }
     :: atomic { !SWEEP_OK -> assert(SWEEP_OK) }
     :: atomic { !COUNT_OK -> assert(COUNT_OK) }
     fi
}

#if defined(LIVENESS)
/* W-6: every client finishes and the driver comes to rest, asleep forever
   with nothing held (under weak fairness). */
ltl rests { <> (ndone == NC && asleep && target == NEVER && !woken) }
#endif

init {
  byte i;
  d_step {
    sweep_at = SWEEP_MIN                                      /* @start_mark */
  };
  atomic {
    run Driver();
    run Client(0);
#if NC > 1
    run Client(1);
#endif
#if NC > 2
    run Client(2);
#endif
    skip
  };
  /* every client done and the driver asleep for good (nothing held, so
     nothing but an arm or a cancel could wake it) */
  (ndone == NC && asleep && target == NEVER && !woken);
  d_step {
    i = 1;
    do
    :: i <= NE ->
       assert(wins[i] == 1 && !pay[i]);                       /* W-1 */
       assert(loc[i] == L_GONE && !wref[i]);                  /* W-3 */
       i++
    :: else -> break
    od;
    i = 0;
    assert(inbox == 0 && cancels == 0 && sweep_wanted == 0 && !sbw_p)  /* W-3, W-4 */
  }
}
