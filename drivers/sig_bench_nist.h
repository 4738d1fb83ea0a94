/* sig_bench / sig_contract adapter for the NIST/PQClean detached signature API
 * (crypto_sign_keypair, crypto_sign_signature, crypto_sign_verify with a namespace
 * prefix; fixed sizes, CRYPTO_BYTES the largest signature; randomness through a
 * randombytes function this adapter provides: nist_shared.h, with bench_nist.h).
 * Needs -DBENCH_NAMESPACE=<prefix> and -DBENCH_RANDOMBYTES=<symbol>. */
#include "nist_shared.h"

static unsigned long long bench_sig_max(void) { return BENCH_NS(CRYPTO_BYTES); }

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
