// cf_wheel.c — deadlines on one timing wheel. See cf_wheel.h for the essay.
#include "cf_wheel.h"
#include "cf_upcalls.h"
#include "cf_wheel_slots.h"
#include "cf_firing_pool.h"
#include "cf_thread.h"

#include <atomic_ops.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#define W(p) ((volatile AO_t *)(p))

#define NEVER UINT64_MAX

struct cf_wheel {
    // ---- shared with arming and cancelling threads (atomics only) --------
    AO_t inbox;        // newest armed entry not yet taken by the driver
    AO_t sleep_tick;   // the tick the driver sleeps until; 0 while awake
    AO_t cancels;      // cancelled entries not yet dropped (signed: a
                       // drop may be counted before its cancel)
    AO_t sweep_at;     // cancels that make a sweep worth a wake-up
    AO_t sweep_wanted; // 1 from the canceller that asked until the sweep
    AO_t held_shown;   // `held`, for cf_wheel_debug_held
    // ---- written once, before the driver starts and any entry is armed ---
    uint64_t epoch_ns;  // the clock's reading at the start: tick 0
    cf_clock clock;
    cf_deadline_callback event;
    pthread_mutex_t sleep_lock;
    pthread_cond_t sleep_cond;
    int woken;         // under sleep_lock
    // ---- the driver's own (its thread only) ------------------------------
    cf_slots slots;
    // Due entries that earlier passes left unfired, in firing order.
    cf_deadlines backlog;
};

__thread int cf_wheel_driving;

void cf_wheel_mark_driver_thread(void) { cf_wheel_driving = 1; }

// The OS clocks of Swift's ContinuousClock and SuspendingClock, as the
// standard library reads them; and the one a condition variable waits on.
#ifdef __APPLE__
#define CONTINUOUS_CLOCK CLOCK_MONOTONIC_RAW
#define SUSPENDING_CLOCK CLOCK_UPTIME_RAW
#else
#define CONTINUOUS_CLOCK CLOCK_BOOTTIME
#define SUSPENDING_CLOCK CLOCK_MONOTONIC
#define WAIT_CLOCK CLOCK_MONOTONIC
#endif

// A wait on the condition variable lasts at most this long when it cannot
// be on the wheel's own clock: then the clock is read again, so a deadline
// of a clock that counts time suspended fires at most this late after the
// machine resumes.
#define RECHECK_NS 1000000000ull

static uint64_t read_clock(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static clockid_t clock_id(cf_clock clock) {
    return clock == CF_CLOCK_SUSPENDING ? SUSPENDING_CLOCK : CONTINUOUS_CLOCK;
}

static uint64_t now_ns(const cf_wheel *w) { return read_clock(clock_id(w->clock)); }

uint64_t cf_clock_now_ns(cf_clock clock) { return read_clock(clock_id(clock)); }

// The tick the clock is in now (rounded down: a tick is reached only once
// the clock is at or past its start).
static uint64_t now_tick(const cf_wheel *w) { return (now_ns(w) - w->epoch_ns) / CF_WHEEL_TICK_NS; }

static void wake(cf_wheel *w) {
    pthread_mutex_lock(&w->sleep_lock);
    w->woken = 1;
    pthread_cond_signal(&w->sleep_cond);
    pthread_mutex_unlock(&w->sleep_lock);
}

// Hands each entry of `gone` (cancelled) back to its owner, which releases
// the wheel's reference; returns how many.
static size_t drop_all(cf_wheel *w, cf_deadline *_Nullable gone) {
    size_t n = 0;
    while (gone) {
        cf_deadline *d = gone;
        gone = d->next;
        w->event(d, CF_DL_DROP);
        n++;
    }
    return n;
}

// Takes everything armed since the last look, in the order armed.
static cf_deadline *_Nullable take_inbox(cf_wheel *w) {
    // Full CAS to 0: acquire pairs with the arming CAS (the entry's fields
    // and its owner's payload were written before it).
    AO_t head = AO_load(W(&w->inbox));
    while (head) {
        AO_t seen = AO_fetch_compare_and_swap_full(W(&w->inbox), head, 0);
        if (seen == head) break;
        head = seen;
    }
    cf_deadline *fifo = NULL, *d = (cf_deadline *)head;
    while (d) {
        cf_deadline *next = d->next;
        d->next = fifo;
        fifo = d;
        d = next;
    }
    return fifo;
}

// Fires up to CF_WHEEL_SLICE entries from the front of `q` (in firing
// order): each whose CAS out of ARMED the driver wins has its transition
// made by its callback, and what that hands to the firing pool is one
// group; a lost CAS (cancelled meanwhile) puts the entry on `gone`.
static void fire(cf_wheel *w, cf_deadlines *q, cf_deadline *_Nullable *_Nonnull gone) {
    cf_deadline *d = q->head;
    for (int n = 0; d && n < CF_WHEEL_SLICE; n++) {
        cf_deadline *next = d->next;
        // Full CAS out of ARMED: exactly one of the driver and a canceller
        // wins the entry (and its payload); acquire, so the driver sees the
        // payload as armed.
        if (AO_compare_and_swap_full(W(&d->state), CF_D_ARMED, CF_D_FIRED)) {
            w->event(d, CF_DL_FIRE);
            cf_firing_end_group();
        } else {
            d->next = *gone;
            *gone = d;
        }
        d = next;
    }
    q->head = d;
    if (d == NULL) q->tail = NULL;
}

// Under sleep_lock: waits until woken or `ns` have passed on the wheel's
// clock, or RECHECK_NS when the condition variable waits on another clock.
static void wait_for(cf_wheel *w, uint64_t ns) {
#ifdef __APPLE__
    // No monotonic clock for condition variables there: a relative wait.
    if (ns > RECHECK_NS) ns = RECHECK_NS;
    struct timespec rel = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    (void)pthread_cond_timedwait_relative_np(&w->sleep_cond, &w->sleep_lock, &rel);
#else
    if (clock_id(w->clock) != WAIT_CLOCK && ns > RECHECK_NS) ns = RECHECK_NS;
    uint64_t at = read_clock(WAIT_CLOCK) + ns;
    struct timespec ts = {(time_t)(at / 1000000000ull), (long)(at % 1000000000ull)};
    (void)pthread_cond_timedwait(&w->sleep_cond, &w->sleep_lock, &ts);
#endif
}

static void *_Nullable drive(void *_Nullable wheel) {
    cf_wheel *w = wheel;
    cf_wheel_driving = 1;
    for (;;) {
        uint64_t now = now_tick(w);
        cf_deadlines due = {NULL, NULL};
        cf_deadline *gone = NULL;
        cf_deadline *arrived = take_inbox(w);
        int brought = arrived != NULL;
        while (arrived) {
            cf_deadline *d = arrived;
            arrived = d->next;
            // Dropping a cancelled entry follows its canceller's CAS (the
            // state's acquire load); one read as ARMED is claimed by CAS.
            if (cf_deadline_state(d) == CF_D_CANCELLED) {
                d->next = gone;
                gone = d;
            } else {
                cf_slots_place(&w->slots, d, &due);
            }
        }
        cf_slots_advance(&w->slots, now, &due, &gone);
        // What came due in this pass fires first, up to a slice; the rest
        // joins the backlog's end, which then gives a slice ("Firing" in
        // cf_wheel.h).
        fire(w, &due, &gone);
        if (due.head) {
            if (w->backlog.tail) w->backlog.tail->next = due.head; else w->backlog.head = due.head;
            w->backlog.tail = due.tail;
        }
        fire(w, &w->backlog, &gone);
        size_t dropped = drop_all(w, gone);
        // After what is due has fired (a sweep of a big wheel takes a
        // while): the canceller that asked for a sweep, or one that crossed
        // the mark while the last one was asked for. Not while a backlog
        // waits: the cancelled entries it holds (counted in `cancels`, not
        // in `held`) go as the backlog reaches them, and a sweep of the
        // slots, which cannot see them, would run on every pass.
        int swept = w->backlog.head == NULL && (AO_load(W(&w->sweep_wanted)) || (intptr_t)AO_load(W(&w->cancels)) >= (intptr_t)AO_load(W(&w->sweep_at)));
        if (swept) {
            gone = NULL;
            cf_slots_sweep(&w->slots, &gone);
            dropped += drop_all(w, gone);
        }
        // Full add: the count is down before the flag below says "ask
        // again" (no second sweep for cancels already dropped).
        if (dropped) AO_fetch_and_add_full(W(&w->cancels), (AO_t)0 - (AO_t)dropped);
        if (swept) {
            // The clear comes before the load of `cancels` before sleeping
            // (this fence, and the one after the tick store), as a
            // canceller's add comes before its CAS of this flag: one of the
            // two sees the other.
            AO_store(W(&w->sweep_wanted), 0);
            AO_nop_full();
        }
        // The relaxed stores of the mark and the debug count need no order.
        // `held` counts the cancelled entries still in slots too: a sweep is
        // due once cancels reach half of it (as many as the live ones).
        size_t held = w->slots.held;
        AO_store(W(&w->sweep_at), held / 2 > CF_WHEEL_SWEEP_MIN ? held / 2 : CF_WHEEL_SWEEP_MIN);
        AO_store(W(&w->held_shown), held);
        // What the pass handed to the firing pool (its firings, and what the
        // drops released), before the next pass or the sleep.
        cf_firing_publish();

        // A backlog: the next pass at once (the clock and the inbox first).
        if (w->backlog.head) continue;
        uint64_t target = NEVER;
        cf_slots_next_due(&w->slots, &target);
        if (brought && target > now + CF_WHEEL_IDLE_TICKS) target = now + CF_WHEEL_IDLE_TICKS;
        // Publish the tick, then look at the inbox and the sweep count once
        // more. Full fence between the store and the loads: an arm pushes,
        // then reads the tick after a full fence, so either it sees this
        // tick and wakes us for an earlier deadline, or we see its entry here.
        AO_store(W(&w->sleep_tick), target);
        AO_nop_full();
        if (AO_load(W(&w->inbox)) != 0 || (intptr_t)AO_load(W(&w->cancels)) >= (intptr_t)AO_load(W(&w->sweep_at))) {
            AO_store(W(&w->sleep_tick), 0);
            continue;
        }
        pthread_mutex_lock(&w->sleep_lock);
        if (target == NEVER) {
            while (!w->woken) pthread_cond_wait(&w->sleep_cond, &w->sleep_lock);
        } else {
            // On the wheel's clock, read again after each wake-up.
            uint64_t at = w->epoch_ns + target * CF_WHEEL_TICK_NS;
            while (!w->woken) {
                uint64_t t = now_ns(w);
                if (t >= at) break;
                wait_for(w, at - t);
            }
        }
        w->woken = 0;
        pthread_mutex_unlock(&w->sleep_lock);
        // Relaxed: an arm that still reads the old tick wakes us once more
        // at worst (the flag makes the next sleep return at once).
        AO_store(W(&w->sleep_tick), 0);
    }
    return NULL;
}

// Initialises `w` and starts its driver: 0, or pthread_create's error.
static int start(cf_wheel *w, cf_deadline_callback event, cf_clock clock) {
    memset(w, 0, sizeof *w);
    w->event = event;
    w->clock = clock;
    w->epoch_ns = now_ns(w);
    AO_store(W(&w->sweep_at), CF_WHEEL_SWEEP_MIN);
    pthread_mutex_init(&w->sleep_lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
#ifndef __APPLE__
    pthread_condattr_setclock(&attr, WAIT_CLOCK);
#endif
    pthread_cond_init(&w->sleep_cond, &attr);
    pthread_condattr_destroy(&attr);
    return cf_start_thread(drive, w);
}

// The library's wheels, one per clock.
static cf_wheel shared[2];
static pthread_once_t shared_started[2] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};

static void start_shared(cf_clock clock) {
    // No driver: no timer of the process on that clock could ever fire. Say so.
    int error = start(&shared[clock], cf_upcalls_in_use->deadline_event, clock);
    if (error) cf_thread_start_failed("the timer thread", error);
}
static void start_continuous(void) { start_shared(CF_CLOCK_CONTINUOUS); }
static void start_suspending(void) { start_shared(CF_CLOCK_SUSPENDING); }

cf_wheel *cf_wheel_shared(cf_clock clock) {
    pthread_once(&shared_started[clock], clock == CF_CLOCK_SUSPENDING ? start_suspending : start_continuous);
    return &shared[clock];
}

cf_wheel *const cf_wheel_continuous = &shared[CF_CLOCK_CONTINUOUS];
cf_wheel *const cf_wheel_suspending = &shared[CF_CLOCK_SUSPENDING];

cf_wheel *_Nullable cf_wheel_create(cf_deadline_callback event, cf_clock clock) {
    cf_wheel *w = malloc(sizeof *w);
    if (w == NULL) return NULL;
    if (start(w, event, clock) != 0) { free(w); return NULL; }
    return w;
}

void cf_deadline_arm(cf_wheel *w, cf_deadline *d, uint64_t delay_ns) {
    // The library's wheels start with their first entry.
    if (w == cf_wheel_continuous || w == cf_wheel_suspending) (void)cf_wheel_shared(w == cf_wheel_suspending);
    uint64_t now = now_ns(w) - w->epoch_ns;
    d->due_ns = delay_ns > NEVER - now ? NEVER : now + delay_ns;
    uint64_t tick = cf_deadline_tick(d);
    d->state = CF_D_ARMED;
    // Full CAS: release publishes the entry (plain writes above and the
    // owner's payload) to the driver's acquiring take. The observed head is
    // only ever stored as `next`, so the push is ABA-free.
    AO_t head = AO_load(W(&w->inbox));
    for (;;) {
        d->next = (cf_deadline *)head;
        AO_t seen = AO_fetch_compare_and_swap_full(W(&w->inbox), head, (AO_t)d);
        if (seen == head) break;
        head = seen;
    }
    // A full fence between the push and the load: libatomic_ops' full CAS
    // is not ordered before a later plain load on every CPU (an
    // acquire-release exclusive pair on ARM), and the driver's re-check
    // relies on this order.
    AO_nop_full();
    if (tick < AO_load(W(&w->sleep_tick))) wake(w);
}

int cf_deadline_cancel(cf_wheel *w, cf_deadline *d) {
    // Full CAS out of ARMED: exactly one of the canceller and the driver
    // wins the entry; acquire, so the winner sees the payload as armed.
    // After it the entry may be dropped by the driver at any time: it is
    // not read again here (the caller's reference keeps its memory).
    if (!AO_compare_and_swap_full(W(&d->state), CF_D_ARMED, CF_D_CANCELLED)) return 0;
    // Full add, then the flag's CAS: a driver that clears the flag and then
    // reads the count sees this add, or this CAS sees the cleared flag. The
    // fence orders the add before the load of the mark (as in
    // cf_deadline_arm): a driver that lowers the mark and then reads the
    // count sees this add, or this load sees the lower mark.
    AO_t n = AO_fetch_and_add1_full(W(&w->cancels)) + 1;
    AO_nop_full();
    if ((intptr_t)n >= (intptr_t)AO_load(W(&w->sweep_at)) && AO_compare_and_swap_full(W(&w->sweep_wanted), 0, 1)) wake(w);
    return 1;
}

int cf_deadline_passed(const cf_wheel *w, const cf_deadline *d) {
    return now_ns(w) - w->epoch_ns >= d->due_ns;
}

uint64_t cf_deadline_clock_ns(const cf_wheel *w, const cf_deadline *d) {
    return d->due_ns > UINT64_MAX - w->epoch_ns ? UINT64_MAX : w->epoch_ns + d->due_ns;
}

size_t cf_wheel_debug_held(const cf_wheel *w) { return AO_load(W(&w->held_shown)); }

