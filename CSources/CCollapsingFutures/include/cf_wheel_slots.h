// cf_wheel_slots.h — where a deadline waits on a timing wheel, and when it
// comes due: 6 levels of 64 slots; a slot of level L spans 64^L ticks of
// 1 ms, so the levels reach 2^36 ms, about 2.2 years (a later deadline
// waits in the top level and is placed again when its slot comes). An
// entry goes to the level of the highest 6-bit group in which its tick
// differs from the wheel's, so insert is O(1); a 64-bit occupancy mask per
// level finds the next occupied slot by a rotate and a count of trailing
// zeros. When a slot of level L comes due its entries are due or move down
// to a lower level (at most 5 moves each).
//
// No clock and no thread: the owner says what tick it is. The only atomic
// is the acquire load of an entry's state (cf_deadline_state): dropping a
// cancelled entry follows its canceller's CAS; one read as ARMED is
// claimed later, by CAS, by the wheel's driver.
#ifndef CF_WHEEL_SLOTS_H
#define CF_WHEEL_SLOTS_H

#include "cf_deadline.h"

#pragma clang assume_nonnull begin

#ifdef __cplusplus
extern "C" {
#endif

/// A wheel's slots: plain data with one owner (the driver's thread of a
/// wheel, cf_wheel.h; a test with a clock of its own), which says what tick
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

#ifdef __cplusplus
}
#endif

#pragma clang assume_nonnull end

#endif
