// cf_wheel_slots.c — a wheel's slots. See cf_wheel_slots.h.
#include "cf_wheel_slots.h"

enum { LEVELS = CF_WHEEL_LEVELS, SLOT_BITS = 6, SLOTS = 1 << SLOT_BITS };
_Static_assert(SLOTS == 64, "one bit of an occupancy mask per slot");
// Ticks the levels reach: 64^6 = 2^36 ms.
#define MAX_TICKS (1ull << (LEVELS * SLOT_BITS))

void cf_slots_place(cf_slots *w, cf_deadline *d, cf_deadlines *due) {
    uint64_t tick = cf_deadline_tick(d);
    if (tick <= w->elapsed) {
        cf_deadlines_append(due, d);
        return;
    }
    // The level of the highest 6-bit group in which its tick differs from
    // the wheel's. Past the top level's reach it waits in the top level
    // and is placed again when its slot comes (then nearer).
    uint64_t when = tick - w->elapsed >= MAX_TICKS ? w->elapsed + MAX_TICKS - 1 : tick;
    uint64_t masked = (w->elapsed ^ when) | (SLOTS - 1);
    if (masked >= MAX_TICKS) masked = MAX_TICKS - 1;
    unsigned level = (unsigned)(63 - __builtin_clzll(masked)) / SLOT_BITS;
    unsigned slot = (unsigned)(when >> (level * SLOT_BITS)) & (SLOTS - 1);
    cf_deadlines_append(&w->slot[level][slot], d);
    w->count[level][slot]++;
    w->occupied[level] |= 1ull << slot;
    w->held++;
}

// The earliest occupied slot: lower levels come due before higher ones, so
// the first level with a slot has it. 0 when the wheel is empty.
static int next_slot(const cf_slots *w, unsigned *level, unsigned *slot, uint64_t *due_tick) {
    for (unsigned l = 0; l < LEVELS; l++) {
        uint64_t occupied = w->occupied[l];
        if (occupied == 0) continue;
        unsigned shift = l * SLOT_BITS;
        uint64_t slot_range = 1ull << shift, level_range = slot_range << SLOT_BITS;
        // From the slot after the current one: the current slot of a level
        // holds only entries of the level's next turn (this turn's went to
        // a lower level), so it comes last, 64 slots on.
        unsigned from = ((unsigned)(w->elapsed >> shift) + 1) & (SLOTS - 1);
        uint64_t rotated = from ? (occupied >> from) | (occupied << (SLOTS - from)) : occupied;
        unsigned s = ((unsigned)__builtin_ctzll(rotated) + from) & (SLOTS - 1);
        uint64_t start = (w->elapsed & ~(level_range - 1)) + s * slot_range;
        // A slot at or behind the current one comes round in the next turn
        // (only the top level holds such: entries beyond the wheel's reach).
        if (start <= w->elapsed) start += level_range;
        *level = l;
        *slot = s;
        *due_tick = start;
        return 1;
    }
    return 0;
}

int cf_slots_next_due(const cf_slots *w, uint64_t *due_tick) {
    unsigned level, slot;
    return next_slot(w, &level, &slot, due_tick);
}

void cf_slots_advance(cf_slots *w, uint64_t now, cf_deadlines *due,
                      cf_deadline *_Nullable *_Nonnull gone) {
    unsigned level, slot;
    uint64_t start;
    while (next_slot(w, &level, &slot, &start) && start <= now) {
        // Every entry of the slot is due at or after its start: they are
        // due now, move down to a lower level, or go (cancelled), in the
        // order they came, so those of one tick keep the order placed.
        w->elapsed = start;
        cf_deadlines taken = w->slot[level][slot];
        w->held -= w->count[level][slot];
        w->slot[level][slot] = (cf_deadlines){NULL, NULL};
        w->count[level][slot] = 0;
        w->occupied[level] &= ~(1ull << slot);
        if (level == 0) {
            // One tick, reached: all due, spliced whole.
            if (due->tail) due->tail->next = taken.head; else due->head = taken.head;
            due->tail = taken.tail;
            continue;
        }
        for (cf_deadline *d = taken.head; d;) {
            cf_deadline *next = d->next;
            if (cf_deadline_state(d) == CF_D_CANCELLED) {
                d->next = *gone;
                *gone = d;
            } else {
                cf_slots_place(w, d, due);
            }
            d = next;
        }
    }
    // Every slot left starts after `now`, and keeps its place relative to it.
    if (w->elapsed < now) w->elapsed = now;
}

void cf_slots_sweep(cf_slots *w, cf_deadline *_Nullable *_Nonnull gone) {
    for (unsigned l = 0; l < LEVELS; l++) {
        for (unsigned s = 0; s < SLOTS; s++) {
            cf_deadlines *q = &w->slot[l][s];
            cf_deadline *last = NULL;
            for (cf_deadline **link = &q->head; *link;) {
                cf_deadline *d = *link;
                if (cf_deadline_state(d) == CF_D_CANCELLED) {
                    *link = d->next;
                    d->next = *gone;
                    *gone = d;
                    w->count[l][s]--;
                    w->held--;
                } else {
                    last = d;
                    link = &d->next;
                }
            }
            q->tail = last;
            if (q->head == NULL) w->occupied[l] &= ~(1ull << s);
        }
    }
}
