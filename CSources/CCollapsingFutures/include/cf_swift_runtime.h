// cf_swift_runtime.h — entry points of the Swift runtime (libswiftCore,
// exported on every platform Swift supports) that the Swift layer needs and
// the language does not spell: a reference that keeps an object's memory
// without keeping it alive, and a retain that fails on an object already
// being deinitialized. Together they are a weak reference without the side
// table a `weak var` allocates.
//
// Used by `Future._targetRef` (a flattening future's target): the walker that
// detects flattening cycles reads another thread's target while that target
// may be deinitializing. The flattening future holds an unowned count on its
// target (swift_unownedRetain when it publishes it, swift_unownedRelease in
// its deinit), so the target's memory stays valid while the walker can reach
// it; the walker takes a strong reference with swift_tryRetain, which fails
// once the target's strong count has reached zero.
//
// Used by `_nodeEvent` (a node's C callback), which takes back the list's
// reference to a node: when that is the only strong reference left
// (swift_isUniquelyReferenced_nonNull_native, the entry point of the
// standard library's `isKnownUniquelyReferenced`, with the same promise),
// the node is dead and is kept for reuse instead of freed
// (cf_node_pool.h). Called on the pointer the callback holds, so that
// keeping the node costs no retain and release of a Swift reference to
// it. The library holds no weak or unowned reference to a node. No other
// decision of the library reads a reference count.
#ifndef CF_SWIFT_RUNTIME_H
#define CF_SWIFT_RUNTIME_H

#include <stddef.h>

#pragma clang assume_nonnull begin

#ifdef __cplusplus
extern "C" {
#endif

void swift_unownedRetain(void *object);
void swift_unownedRelease(void *object);
// Returns `object` retained, or NULL (not a bool: the low byte of an object
// pointer can be 0).
void *_Nullable swift_tryRetain(void *object);
_Bool swift_isUniquelyReferenced_nonNull_native(const void *object);

/// +1 on the object's unowned count: its memory is not freed until the
/// matching release (its deinit may still run). Any thread.
static inline void cf_unowned_retain(void *object) { swift_unownedRetain(object); }
/// -1 on the unowned count; frees the memory when it was the last count of
/// an object already deinitialized. Any thread.
static inline void cf_unowned_release(void *object) { swift_unownedRelease(object); }
/// +1 on the strong count unless the object is deinitializing or
/// deinitialized (returns 0, nothing retained). The object's memory must be
/// valid (an unowned count held). Any thread.
static inline int cf_try_retain(void *object) { return swift_tryRetain(object) != NULL; }
/// Whether the caller's strong reference to the native Swift object is
/// the only one (`isKnownUniquelyReferenced`). Any thread; a true answer
/// is final unless the caller shares its reference.
/// The runtime's load of the count is not an acquire on every CPU (a
/// consume, relaxed on ARM), so a true answer is followed by an acquire
/// fence: the caller then sees what the other holders did before they
/// released theirs, as a deinit does (free on x86-64).
static inline int cf_is_only_reference(const void *object) {
    if (!swift_isUniquelyReferenced_nonNull_native(object)) return 0;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return 1;
}

#ifdef __cplusplus
}
#endif

#pragma clang assume_nonnull end

#endif
