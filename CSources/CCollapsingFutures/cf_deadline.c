// cf_deadline.c — an entry's state (cf_deadline.h).
#include "cf_deadline.h"

#include <atomic_ops.h>

_Static_assert(offsetof(cf_deadline, state) == 0, "entry state word first");

#define W(p) ((volatile AO_t *)(p))

uintptr_t cf_deadline_state(const cf_deadline *d) {
    // Acquire: a caller that sees FIRED or CANCELLED sees the winner's writes.
    return AO_load_acquire(W(&d->state));
}
