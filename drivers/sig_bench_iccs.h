/* sig_bench / sig_contract adapter for the ICCS signature API (sig_*, the ICCS DRNG:
 * iccs_shared.h, with bench_iccs.h). */
#include "iccs_shared.h"

static unsigned long long bench_pk_max(void) { return sig_get_pk_len_bytes(); }
static unsigned long long bench_sk_max(void) { return sig_get_sk_len_bytes(); }
static unsigned long long bench_sig_max(void) { return sig_get_sn_len_bytes(); }

static int bench_keygen(unsigned char *pk, unsigned long long *pk_len, unsigned char *sk, unsigned long long *sk_len) {
    return sig_keygen(pk, pk_len, sk, sk_len);
}

static int bench_sign(unsigned char *sk, unsigned long long sk_len, unsigned char *m, unsigned long long m_len,
                      unsigned char *sig, unsigned long long *sig_len) {
    return sig_sign(sk, sk_len, m, m_len, sig, sig_len);
}

static int bench_verify(unsigned char *pk, unsigned long long pk_len, unsigned char *sig, unsigned long long sig_len,
                        unsigned char *m, unsigned long long m_len) {
    return sig_verify(pk, pk_len, sig, sig_len, m, m_len);
}
