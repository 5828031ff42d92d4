// Benchmark support in C: a real malloc interposer (counts every malloc-family
// call while counting is on) and the C floor (the core with a no-op C handler).
#ifndef CFB_H
#define CFB_H
#include <stddef.h>
#include <stdint.h>
#include "cf_core.h"
#include "cf_wheel.h"

#pragma clang assume_nonnull begin

/// Starts/stops counting malloc, calloc, realloc, posix_memalign,
/// aligned_alloc and memalign calls process-wide (relaxed atomic counter).
void cfb_count_allocs(int on);
uint64_t cfb_alloc_count(void);

/// The C floor: the library's core with no-op handlers in malloc'd 16-byte
/// aligned nodes, whose events free them. A process is either the floor's
/// or the library's (cf_upcalls.h): cfb_floor_use gives the core the
/// floor's callbacks, before any token is used, in a process that uses
/// no token of the library's.
void cfb_floor_use(void);
cf_token *cfb_token_new(void);
void cfb_token_free(cf_token *t);
/// Cancels the token (its handlers run).
void cfb_token_cancel(cf_token *t);
/// Registers a no-op handler; returns its node (owned by the list).
cf_node *_Nullable cfb_register_noop(cf_token *t);
/// Registers `n` no-op handlers, then cancels the token.
void cfb_register_cancel(int n);
/// Registers and removes one no-op handler `iterations` times on `t`.
void cfb_churn(cf_token *t, long iterations);
/// Arms a 30 s deadline in a malloc'd entry and cancels it, `iterations`
/// times, on a wheel of the floor's own whose driver frees each entry it
/// drops: a deadline source's work in the core.
void cfb_deadline_arm_cancel(long iterations);

#pragma clang assume_nonnull end
#endif
