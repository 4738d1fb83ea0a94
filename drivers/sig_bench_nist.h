/* sig_bench / sig_contract adapter for the NIST/PQClean detached signature API
 * (crypto_sign_keypair, crypto_sign_signature, crypto_sign_verify with a namespace
 * prefix; fixed sizes, CRYPTO_BYTES the largest signature; randomness through a
 * randombytes function this adapter provides, as in bench_nist.h).
 * Needs -DBENCH_NAMESPACE=<prefix> and -DBENCH_RANDOMBYTES=<symbol>. */
#include <stddef.h>
#include <stdint.h>

#define BENCH_API "nist"
#define BENCH_PASTE(x, y) x##_##y
#define BENCH_EVAL(x, y) BENCH_PASTE(x, y)
#define BENCH_NS(name) BENCH_EVAL(BENCH_NAMESPACE, name)

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
    return 0;
}

static unsigned long long bench_pk_max(void) { return BENCH_NS(CRYPTO_PUBLICKEYBYTES); }
static unsigned long long bench_sk_max(void) { return BENCH_NS(CRYPTO_SECRETKEYBYTES); }
static unsigned long long bench_sig_max(void) { return BENCH_NS(CRYPTO_BYTES); }

static int bench_seed(const unsigned char *seed, unsigned long long len) {
    unsigned long long i;
    bench_rng = 0;
    for (i = 0; i < len; i++) {
        bench_rng = (bench_rng ^ seed[i]) * 0x100000001b3ULL;
    }
    return 0;
}

static int bench_keygen(unsigned char *pk, unsigned long long *pk_len, unsigned char *sk, unsigned long long *sk_len) {
    *pk_len = bench_pk_max();
    *sk_len = bench_sk_max();
    return BENCH_NS(crypto_sign_keypair)(pk, sk);
}

/* The detached API takes the capacity implicitly (CRYPTO_BYTES) and returns the length
 * through a size_t, which *sig_len carries back as the call left it. */
static int bench_sign(unsigned char *sk, unsigned long long sk_len, unsigned char *m, unsigned long long m_len,
                      unsigned char *sig, unsigned long long *sig_len) {
    size_t n = (size_t)*sig_len;
    int ret;
    (void)sk_len;
    ret = BENCH_NS(crypto_sign_signature)(sig, &n, m, (size_t)m_len, sk);
    *sig_len = (unsigned long long)n;
    return ret;
}

static int bench_verify(unsigned char *pk, unsigned long long pk_len, unsigned char *sig, unsigned long long sig_len,
                        unsigned char *m, unsigned long long m_len) {
    (void)pk_len;
    return BENCH_NS(crypto_sign_verify)(sig, (size_t)sig_len, m, (size_t)m_len, pk);
}
