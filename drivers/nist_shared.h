/* What the two NIST/PQClean adapters (bench_nist.h for KEMs, sig_bench_nist.h for
 * signatures) share: the namespace macros, the randombytes function the library calls
 * (a splitmix64 stream seeded by bench_seed) and the key sizes. Needs
 * -DBENCH_NAMESPACE=<prefix> and -DBENCH_RANDOMBYTES=<symbol>. */
#ifndef NGCC_NIST_SHARED_H
#define NGCC_NIST_SHARED_H

#include <stddef.h>
#include <stdint.h>

#define BENCH_API "nist"
#define BENCH_PASTE(x, y) x##_##y
#define BENCH_EVAL(x, y) BENCH_PASTE(x, y)
#define BENCH_NS(name) BENCH_EVAL(BENCH_NAMESPACE, name)

#ifdef NGCC_CT
/* The constant-time variant (ct_core.h): the output is poisoned while the driver asks. */
#include <valgrind/memcheck.h>
extern int ngcc_ct_poison_random;
extern unsigned long long ngcc_ct_random_bytes;
#endif

/* splitmix64 stream: deterministic, cheap, seeded from the benchmark seed. */
static uint64_t bench_rng;

int BENCH_RANDOMBYTES(uint8_t *out, size_t n);
int BENCH_RANDOMBYTES(uint8_t *out, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) {
        uint64_t z = (bench_rng += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        out[i] = (uint8_t)(z ^ (z >> 31));
    }
#ifdef NGCC_CT
    if (ngcc_ct_poison_random) {
        VALGRIND_MAKE_MEM_UNDEFINED(out, n);
        ngcc_ct_random_bytes += n;
    }
#endif
    return 0;
}

static unsigned long long bench_pk_max(void) { return BENCH_NS(CRYPTO_PUBLICKEYBYTES); }
static unsigned long long bench_sk_max(void) { return BENCH_NS(CRYPTO_SECRETKEYBYTES); }

static int bench_seed(const unsigned char *seed, unsigned long long len) {
    unsigned long long i;
    bench_rng = 0;
    for (i = 0; i < len; i++) {
        bench_rng = (bench_rng ^ seed[i]) * 0x100000001b3ULL;
    }
    return 0;
}

#endif
