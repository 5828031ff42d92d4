// cf_wheel.h — timing wheels: every timer of the library on a
// ContinuousClock or a SuspendingClock is a deadline on one of the
// library's two wheels (cf_wheel_shared).
//
// Why: a server gives every request a deadline, and nearly every deadline
// is cancelled long before it is due. A Dispatch timer per deadline costs a
// registration through Dispatch's manager thread (cross-thread wake-ups)
// and several allocations. Here a deadline is one small entry: arming it is
// a push on a lock-free inbox, cancelling it is one CAS, and one driver
// thread per wheel owns it and sleeps until its earliest deadline. The
// library has one wheel per clock it reads (continuous and suspending,
// cf_clock), started on first use; a test can make its own
// (cf_wheel_create), with a callback of its own. No state is shared
// between wheels (the firing pool is, cf_firing_pool.h).
//
// The entry (cf_deadline.h): a state word, a link and the deadline, in an
// allocation owned by the caller. Whoever wins the CAS out of ARMED owns
// the payload, so a cancelled entry's payload is released at once by its
// canceller, never at the deadline.
//
// The slots (cf_wheel_slots.h; the driver's thread only) say where each
// entry waits and when it comes due, in O(1) per entry and level.
//
// Reclaiming: a cancelled entry stays linked in the wheel (its payload is
// already gone) until the driver drops it. Cancels are counted; once they
// reach max(CF_WHEEL_SWEEP_MIN, half the entries the wheel holds, cancelled
// ones included), the canceller that crosses the mark wakes the driver,
// which sweeps every slot and drops what was cancelled. So the wheel holds
// about twice its live entries plus CF_WHEEL_SWEEP_MIN at most, at
// amortized O(1) per cancel.
//
// Precision: never early. A deadline of `due_ns` is due at tick
// ceil(due_ns / 1 ms) (cf_deadline_tick); the driver fires it once the
// clock has reached that tick. So it is late by at most one tick plus
// scheduling, and plus the firing of earlier deadlines in a burst.
//
// Firing: the driver makes each due entry's transition itself (the CAS out
// of ARMED, then the callback, which cancels the token or fails the
// future) in tick order, those of one tick in the order they were armed
// (each slot and the due list are kept in arrival order). The callback
// runs no user code: handlers that would run on the cancelling thread go
// to the firing pool (cf_firing_pool.h), one group per firing, handed over
// once per pass. A pass fires at most CF_WHEEL_SLICE entries of what came
// due in it and CF_WHEEL_SLICE of what earlier passes left (the backlog);
// so during a burst the driver looks at the clock and the inbox again
// every few thousand firings, and a deadline that comes due meanwhile (a
// later tick) fires in the next pass, ahead of the burst's rest, instead
// of waiting for the whole burst.
//
// Waking: the driver publishes the tick it will sleep until, then looks at
// the inbox once more, a full fence between the two; an arm pushes, then
// reads that tick after a full fence and wakes the driver only if its own
// deadline is earlier. One of the two sees the other's write (no lost wake-up). While
// the driver is awake the published tick is 0, so arms never wake it. With
// an empty wheel after a wake that brought entries, the driver sleeps at
// most CF_WHEEL_IDLE_TICKS, so a stream of arms whose entries are cancelled
// before the driver sees them wakes it at most that often, not once each.
// Waking is the one step that takes a lock (the wheel's sleep_lock, held to
// set the flag and signal the driver's condition variable): an arm earlier
// than the driver's sleep, and the cancel that asks for a sweep, take it.
//
// The functions at a glance:
//
//   function                 callers                           atomics (ordering)
//   cf_deadline_arm          any thread, with everything       CAS (full); fence (full); load
//   cf_deadline_cancel       any thread; races the driver      CAS (full); add (full);
//                                                              fence (full); load;
//                                                              CAS (full) to wake
//   cf_deadline_state        any thread                        load (acquire)
//   cf_deadline_passed       any thread holding the entry      none (clock read)
//   cf_wheel_debug_held      any thread (tests, benchmark)     load
//   cf_wheel_shared          any thread                        pthread_once
//   cf_wheel_on_driver_thread any thread                       none (thread-local)
//   the driver (cf_wheel.c)  its own thread                    swap of the inbox (full);
//                                                              CAS out of ARMED (full);
//                                                              stores and loads (full)
//
// Callbacks (the wheel's `event`; the library's wheels call the upcall
// `deadline_event`, cf_upcalls.h) run on its driver thread, after the entry's
// fate is settled, and take back the wheel's reference.
#ifndef CF_WHEEL_H
#define CF_WHEEL_H

#include "cf_deadline.h"

#pragma clang assume_nonnull begin

#ifdef __cplusplus
extern "C" {
#endif

/// A timing wheel and its driver thread (cf_wheel.c).
typedef struct cf_wheel cf_wheel;

/// Events of a wheel's callback. Each also hands back the wheel's
/// reference on the entry (the callee releases it).
typedef enum cf_deadline_event {
    CF_DL_FIRE = 1,  ///< the driver won the entry: hand its payload on to run
    CF_DL_DROP = 2,  ///< the entry was cancelled: only release the reference
} cf_deadline_event;

/// A wheel's callback, for every entry it hands back. Runs on the wheel's
/// driver thread; must not block nor run user code (it makes the timer's
/// transition; what would run user code goes to the firing pool).
typedef void (*cf_deadline_callback)(cf_deadline *_Nonnull d, int event);


/// The clock a wheel reads: the OS clock of Swift's ContinuousClock (Linux
/// CLOCK_BOOTTIME, Darwin CLOCK_MONOTONIC_RAW: it counts time the machine
/// is suspended) or of its SuspendingClock (Linux CLOCK_MONOTONIC, Darwin
/// CLOCK_UPTIME_RAW: it does not).
typedef enum cf_clock { CF_CLOCK_CONTINUOUS = 0, CF_CLOCK_SUSPENDING = 1 } cf_clock;

/// The clock's reading now, in nanoseconds (what Swift's clock of the same
/// kind reads). Any thread.
uint64_t cf_clock_now_ns(cf_clock clock);

/// The library's wheel for `clock`, whose callback is the upcall
/// `deadline_event` (cf_upcalls.h); its driver starts on the first call. The
/// driver's condition variable waits on CLOCK_MONOTONIC: on another clock
/// it reads the wheel's clock again at least once a second, so a
/// deadline of the continuous clock is at most that late after a resume.
cf_wheel *cf_wheel_shared(cf_clock clock);

/// The library's wheels, for the functions below: started by the first
/// cf_deadline_arm on them (cf_deadline_cancel and the others need an armed
/// entry, so a started wheel), with no lookup on the way.
extern cf_wheel *const cf_wheel_continuous;
extern cf_wheel *const cf_wheel_suspending;

/// A wheel of its own on `clock`, whose driver calls `event` (tests):
/// started now, never freed. NULL if its thread could not start.
cf_wheel *_Nullable cf_wheel_create(cf_deadline_callback event, cf_clock clock);

/// Entries a pass fires at most from what came due in it, and at most
/// from the backlog ("Firing" above).
enum { CF_WHEEL_SLICE = 1024 };
/// Cancels counted before a sweep is worth a wake-up, at least.
enum { CF_WHEEL_SWEEP_MIN = 1024 };
/// The longest sleep with an empty wheel after entries came (ticks).
enum { CF_WHEEL_IDLE_TICKS = 1000 };

/// Arms `d` on `w` to fire `delay_ns` from now (clamped to about 292
/// years). Any thread, concurrently with everything. The wheel takes the
/// caller's reference on the entry's owner and hands it back through its
/// callback, at the firing or, after a cancel, when the driver drops the
/// entry. Initialises `d` (not armed before). Full CAS on the inbox:
/// release publishes the entry's fields (and the owner's payload) to the
/// driver; then a full fence, so that the load of the driver's sleep tick
/// cannot be ordered before the push.
void cf_deadline_arm(cf_wheel *w, cf_deadline *d, uint64_t delay_ns);

/// Cancels an entry armed on `w` (ARMED -> CANCELLED). Any thread,
/// concurrently with the driver and with other cancels. 1 if this call
/// won: the caller now owns the payload and releases it; 0 if it had
/// fired or was already cancelled. Never waits.
int cf_deadline_cancel(cf_wheel *w, cf_deadline *d);

/// 1 once the clock of `w` has reached the deadline of an entry armed on
/// it, whether or not the driver has fired it yet (a burst may hold the
/// driver back); the clock's word, not the driver's. Any thread that holds
/// the entry; reads only `due_ns`, written before the entry was shared.
int cf_deadline_passed(const cf_wheel *w, const cf_deadline *d);

/// The deadline of an entry armed on `w`, as a reading of the wheel's
/// clock (cf_clock_now_ns). Any thread that holds the entry.
uint64_t cf_deadline_clock_ns(const cf_wheel *w, const cf_deadline *d);

/// Entries `w` holds (armed or cancelled, inbox excluded), as of its
/// driver's last update. For tests and the benchmark.
size_t cf_wheel_debug_held(const cf_wheel *w);

/// 1 on a wheel's driver thread, 0 elsewhere (thread-local, no atomics).
/// The Swift layer asks when a handler would run on the cancelling thread:
/// on a driver it goes to the firing pool (cf_firing_pool.h) instead.
extern __thread int cf_wheel_driving;
static inline int cf_wheel_on_driver_thread(void) { return cf_wheel_driving; }

/// Makes the calling thread a driver in that sense: a thread of the
/// library's own that makes timers' transitions and hands what they would
/// run of user code to the firing pool (the Swift layer's thread for timers
/// on other clocks).
void cf_wheel_mark_driver_thread(void);

#ifdef __cplusplus
}
#endif

#pragma clang assume_nonnull end

#endif
