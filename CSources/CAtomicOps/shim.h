// The MIT core of libatomic_ops (header-only and inline on x86_64 with clang/gcc).
// Only the C core includes this; the public header of CCollapsingFutures never does.
#include <atomic_ops.h>
