// The core, compiled for the C floor (floor_core.h says why). Included, it
// counts as a header, where clang asks every pointer for a nullability
// annotation; as its own main file, as in the library, it does not.
#include "floor_core.h"
#pragma clang diagnostic ignored "-Wnullability-completeness"
#include "../../CSources/CCollapsingFutures/cf_core.c"
