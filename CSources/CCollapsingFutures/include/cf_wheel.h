// cf_wheel.h — every timer of the library: deadlines on one timing wheel.
//
// Why: a server gives every request a deadline, and nearly every deadline
// is cancelled long before it is due. A Dispatch timer per deadline costs a
// registration through Dispatch's manager thread (cross-thread wake-ups)
// and several allocations. Here a deadline is one small entry: arming it is
// a push on a lock-free inbox, cancelling it is one CAS, and one driver
// thread per process owns the wheel and sleeps until the earliest deadline.
//
// The entry (cf_deadline): a state word, a link and the deadline, at a fixed
// place in an allocation owned by the caller (a Swift object in
// CollapsingFutures, after its header), which the callback finds from the
// entry. Its state is CF_D_ARMED, then exactly one of CF_D_CANCELLED
// (cf_deadline_cancel won) or CF_D_FIRED (the driver won): whoever wins the
// CAS out of ARMED owns the payload, so a cancelled entry's payload is
// released at once by its canceller, never at the deadline.
//
// The wheel (cf_wheel_slots.c; the driver's thread only): 6 levels of 64
// slots; a slot of level L spans 64^L ticks of 1 ms, so the levels reach
// 2^36 ms, about 2.2 years (a later deadline waits in the top level and is
// placed again when its slot comes). An entry goes to the level of the
// highest 6-bit group in which its tick differs from the wheel's, so insert
// is O(1); a 64-bit occupancy mask per level finds the next occupied slot
// by a rotate and a count of trailing zeros. When a slot of level L comes
// due its entries are due or move down to a lower level (at most 5 moves
// each).
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
// Waking is the one step that takes a lock (sleep_lock, held to set the
// flag and signal the driver's condition variable): an arm earlier than
// the driver's sleep, and the cancel that asks for a sweep, take it.
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
//   cf_wheel_on_driver_thread any thread                       none (thread-local)
//   the driver (cf_wheel.c)  its own thread                    swap of the inbox (full);
//                                                              CAS out of ARMED (full);
//                                                              stores and loads (full)
//
// Callbacks (cf_swift_deadline_event) run on the driver thread, after the
// entry's fate is settled, and take back the wheel's reference.
#ifndef CF_WHEEL_H
#define CF_WHEEL_H

#include <stdint.h>
#include <stddef.h>

#pragma clang assume_nonnull begin

#ifdef __cplusplus
extern "C" {
#endif

/// A deadline: three words.
typedef struct cf_deadline {
    uintptr_t state;                       ///< AO_t: CF_D_*; CAS only
    /// In the inbox: the entry pushed before it. In a slot: the next entry
    /// of that slot. Written by the arming thread before the push, then by
    /// the driver only.
    struct cf_deadline *_Nullable next;
    /// The deadline: nanoseconds of the wheel's clock since its epoch.
    /// Written by the arming thread before the push.
    uint64_t due_ns;
} cf_deadline;

enum { CF_D_ARMED = 0, CF_D_CANCELLED = 1, CF_D_FIRED = 2 };

/// Events of cf_swift_deadline_event. Each also hands back the wheel's
/// reference on the entry (the callee releases it).
typedef enum cf_deadline_event {
    CF_DL_FIRE = 1,  ///< the driver won the entry: hand its payload on to run
    CF_DL_DROP = 2,  ///< the entry was cancelled: only release the reference
} cf_deadline_event;

/// The callback of every entry: the Swift layer's (`_Timer.swift`). Runs on
/// the driver thread; must not block nor run user code (it makes the
/// timer's transition; what would run user code goes to the firing pool).
void cf_swift_deadline_event(cf_deadline *_Nonnull d, int event);

/// 1 ms: the wheel's resolution.
#define CF_WHEEL_TICK_NS 1000000ull

/// The tick an entry is due at: the first whose start is at or after its
/// deadline (never early).
static inline uint64_t cf_deadline_tick(const cf_deadline *d) {
    return d->due_ns / CF_WHEEL_TICK_NS + (d->due_ns % CF_WHEEL_TICK_NS != 0);
}
/// Entries a pass fires at most from what came due in it, and at most
/// from the backlog ("Firing" above).
enum { CF_WHEEL_SLICE = 1024 };
/// Cancels counted before a sweep is worth a wake-up, at least.
enum { CF_WHEEL_SWEEP_MIN = 1024 };
/// The longest sleep with an empty wheel after entries came (ticks).
enum { CF_WHEEL_IDLE_TICKS = 1000 };

/// Arms `d` to fire `delay_ns` from now (clamped to about 292 years). Any
/// thread, concurrently with everything; starts the driver thread on first
/// use. The wheel takes the caller's reference on the entry's owner and
/// hands it back through cf_swift_deadline_event, at the firing or, after
/// a cancel, when the driver drops the entry. Initialises `d` (not armed
/// before). Full CAS on the inbox: release publishes the entry's fields
/// (and the owner's payload) to the driver; then a full fence, so that the
/// load of the driver's sleep tick cannot be ordered before the push.
void cf_deadline_arm(cf_deadline *d, uint64_t delay_ns);

/// Cancels an armed entry (ARMED -> CANCELLED). Any thread, concurrently
/// with the driver and with other cancels. 1 if this call won: the caller
/// now owns the payload and releases it; 0 if it had fired or was already
/// cancelled. Never waits.
int cf_deadline_cancel(cf_deadline *d);

/// Acquire load of an entry's state.
uintptr_t cf_deadline_state(const cf_deadline *d);

/// 1 once the clock has reached an armed entry's deadline, whether or not
/// the driver has fired it yet (a burst may hold the driver back); the
/// clock's word, not the driver's. Any thread that holds the entry; reads
/// only `due_ns`, written before the entry was shared.
int cf_deadline_passed(const cf_deadline *d);

/// A list of entries in order, linked through cf_deadline.next: appending
/// and splicing are O(1). Zero-initialised, it is empty.
typedef struct cf_deadlines {
    cf_deadline *_Nullable head, *_Nullable tail;
} cf_deadlines;

/// Appends `d` to `q`.
static inline void cf_deadlines_append(cf_deadlines *q, cf_deadline *d) {
    d->next = NULL;
    if (q->tail) q->tail->next = d; else q->head = d;
    q->tail = d;
}

/// The wheel's slots (cf_wheel_slots.c): plain data with one owner (the
/// driver's thread; a test with a clock of its own), which says what tick
/// it is. Zero-initialised, it is empty at tick 0. Each slot keeps its
/// entries in the order they came, and `due` gets them in the order they
/// come due: ticks in order, those of one tick in the order they were
/// placed (so, for the driver, armed). `gone` is a stack linked through
/// cf_deadline.next.
enum { CF_WHEEL_LEVELS = 6 };
typedef struct cf_slots {
    cf_deadlines slot[CF_WHEEL_LEVELS][64];
    size_t count[CF_WHEEL_LEVELS][64];   ///< entries in each slot
    uint64_t occupied[CF_WHEEL_LEVELS];  ///< bit s: slot s of the level holds entries
    uint64_t elapsed;                    ///< every slot before this tick has come due
    size_t held;                         ///< entries in slots
} cf_slots;

/// Puts an armed entry in its slot, or on `due` when its tick has been
/// reached (tick <= elapsed). O(1).
void cf_slots_place(cf_slots *w, cf_deadline *d, cf_deadlines *due);
/// The tick the earliest occupied slot comes due (at most the tick of any
/// entry in it); 0 when the wheel is empty (`due_tick` untouched).
int cf_slots_next_due(const cf_slots *w, uint64_t *due_tick);
/// Moves the wheel to tick `now` (>= elapsed): every entry whose tick is
/// at most `now` goes on `due`, cancelled ones met on the way on `gone`.
/// A slot of level 0 spans one tick, so it goes on `due` whole, in O(1),
/// cancelled entries included (the driver's CAS out of ARMED finds them).
/// O(1) per slot come due, and per entry at most one move per level.
void cf_slots_advance(cf_slots *w, uint64_t now, cf_deadlines *due,
                      cf_deadline *_Nullable *_Nonnull gone);
/// Moves every cancelled entry to `gone`: O(held).
void cf_slots_sweep(cf_slots *w, cf_deadline *_Nullable *_Nonnull gone);

/// Entries the wheel holds (armed or cancelled, inbox excluded), as of the
/// driver's last update. For tests and the benchmark.
size_t cf_wheel_debug_held(void);

/// 1 on the driver's thread, 0 elsewhere (thread-local, no atomics).
/// The Swift layer asks when a handler would run on the cancelling thread:
/// on the driver it goes to the firing pool (cf_firing_pool.h) instead.
extern __thread int cf_wheel_driving;
static inline int cf_wheel_on_driver_thread(void) { return cf_wheel_driving; }

#ifdef __cplusplus
}
#endif

#pragma clang assume_nonnull end

#endif
