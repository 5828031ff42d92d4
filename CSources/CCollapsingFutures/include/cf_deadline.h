// cf_deadline.h — a deadline: the entry a timing wheel holds (cf_wheel.h).
//
// The entry: a state word, a link and the deadline, at a fixed place in an
// allocation owned by the caller (a Swift object in CollapsingFutures,
// after its header), which the wheel's callback finds from the entry. Its
// state is CF_D_ARMED, then exactly one of CF_D_CANCELLED (the canceller
// won) or CF_D_FIRED (the wheel's driver won): whoever wins the CAS out of
// ARMED owns the payload (cf_wheel.h). This header owns the entry's layout
// and its state; the wheel (cf_wheel.c) makes the transitions, the slots
// (cf_wheel_slots.h) keep entries in order.
#ifndef CF_DEADLINE_H
#define CF_DEADLINE_H

#include <stdint.h>
#include <stddef.h>

#pragma clang assume_nonnull begin

#ifdef __cplusplus
extern "C" {
#endif

/// A deadline: three words.
typedef struct cf_deadline {
    uintptr_t state;                       ///< AO_t: CF_D_*; CAS only
    /// In a wheel's inbox: the entry pushed before it. In a slot: the next
    /// entry of that slot. Written by the arming thread before the push,
    /// then by the wheel's driver only.
    struct cf_deadline *_Nullable next;
    /// The deadline: nanoseconds of the wheel's clock since its epoch.
    /// Written by the arming thread before the push.
    uint64_t due_ns;
} cf_deadline;

enum { CF_D_ARMED = 0, CF_D_CANCELLED = 1, CF_D_FIRED = 2 };

/// Acquire load of an entry's state: a caller that sees FIRED or CANCELLED
/// sees the winner's writes (cf_deadline.c).
uintptr_t cf_deadline_state(const cf_deadline *d);

/// 1 ms: a wheel's resolution.
#define CF_WHEEL_TICK_NS 1000000ull

/// The tick an entry is due at: the first whose start is at or after its
/// deadline (never early).
static inline uint64_t cf_deadline_tick(const cf_deadline *d) {
    return d->due_ns / CF_WHEEL_TICK_NS + (d->due_ns % CF_WHEEL_TICK_NS != 0);
}

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

#ifdef __cplusplus
}
#endif

#pragma clang assume_nonnull end

#endif
