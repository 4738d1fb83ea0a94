/* What the two ICCS adapters (bench_iccs.h for KEMs, sig_bench_iccs.h for signatures)
 * share: the driver owns the ICCS DRNG state (drng_algorithm, drng.h) and bench_seed
 * seeds it. */
#ifndef NGCC_ICCS_SHARED_H
#define NGCC_ICCS_SHARED_H

#include "drng.h"

#define BENCH_API "iccs"

/* NGCC_NO_DRNG: the submission defines drng_algorithm itself (manifest: [build]
 * defines_drng), so the driver only declares it and seeds that one state. */
#ifdef NGCC_NO_DRNG
extern DRNG_ctx drng_algorithm;
#else
DRNG_ctx drng_algorithm;
#endif

static int bench_seed(const unsigned char *seed, unsigned long long len) {
    return init_random_number(&drng_algorithm, seed, len);
}

#endif
