/* kem_bench / kem_replay adapter for the ICCS KEM API (kem_*, the ICCS DRNG:
 * iccs_shared.h, with sig_bench_iccs.h). */
#include "iccs_shared.h"

static unsigned long long bench_pk_max(void) { return kem_get_pk_len_bytes(); }
static unsigned long long bench_sk_max(void) { return kem_get_sk_len_bytes(); }
static unsigned long long bench_ct_max(void) { return kem_get_ct_len_bytes(); }
static unsigned long long bench_ss_max(void) { return kem_get_ss_len_bytes(); }

static int bench_keygen(unsigned char *pk, unsigned long long *pk_len, unsigned char *sk, unsigned long long *sk_len) {
    return kem_keygen(pk, pk_len, sk, sk_len);
}

static int bench_enc(unsigned char *pk, unsigned long long pk_len, unsigned char *ss, unsigned long long *ss_len,
                     unsigned char *ct, unsigned long long *ct_len) {
    return kem_enc(pk, pk_len, ss, ss_len, ct, ct_len);
}

static int bench_dec(unsigned char *sk, unsigned long long sk_len, unsigned char *ct, unsigned long long ct_len,
                     unsigned char *ss, unsigned long long *ss_len) {
    return kem_dec(sk, sk_len, ct, ct_len, ss, ss_len);
}
