/* kem_bench / kem_replay adapter for the NIST/PQClean KEM API (crypto_kem_* with a
 * namespace prefix, fixed sizes; randomness through a randombytes function this adapter
 * provides: nist_shared.h, with sig_bench_nist.h).
 * Needs -DBENCH_NAMESPACE=<prefix> and -DBENCH_RANDOMBYTES=<symbol>. */
#include "nist_shared.h"

static unsigned long long bench_ct_max(void) { return BENCH_NS(CRYPTO_CIPHERTEXTBYTES); }
static unsigned long long bench_ss_max(void) { return BENCH_NS(CRYPTO_BYTES); }

static int bench_keygen(unsigned char *pk, unsigned long long *pk_len, unsigned char *sk, unsigned long long *sk_len) {
    *pk_len = bench_pk_max();
    *sk_len = bench_sk_max();
    return BENCH_NS(crypto_kem_keypair)(pk, sk);
}

static int bench_enc(unsigned char *pk, unsigned long long pk_len, unsigned char *ss, unsigned long long *ss_len,
                     unsigned char *ct, unsigned long long *ct_len) {
    (void)pk_len;
    *ct_len = bench_ct_max();
    *ss_len = bench_ss_max();
    return BENCH_NS(crypto_kem_enc)(ct, ss, pk);
}

static int bench_dec(unsigned char *sk, unsigned long long sk_len, unsigned char *ct, unsigned long long ct_len,
                     unsigned char *ss, unsigned long long *ss_len) {
    (void)sk_len;
    (void)ct_len;
    *ss_len = bench_ss_max();
    return BENCH_NS(crypto_kem_dec)(ss, ct, sk);
}
