/* What the two ICCS adapters (bench_iccs.h for KEMs, sig_bench_iccs.h for signatures)
 * share: the driver owns the ICCS DRNG state (drng_algorithm, drng.h) and bench_seed
 * seeds it. */
#ifndef NGCC_ICCS_SHARED_H
#define NGCC_ICCS_SHARED_H

#include "drng.h"

#define BENCH_API "iccs"

DRNG_ctx drng_algorithm;

static int bench_seed(const unsigned char *seed, unsigned long long len) {
    return init_random_number(&drng_algorithm, seed, len);
}

#endif
