/* kex_bench / kex_contract adapter for the ICCS key-exchange API (kex_*, the ICCS DRNG:
 * iccs_shared.h); the pass functions are looked up as kex_passes.h says. */
#include "iccs_shared.h"
#include "kex_passes.h"
