/* The key pair of the KEM and signature constant-time drivers (kem_ct.c, sig_ct.c): its
 * buffers and keygen, with the DRNG output secret or not; the public key and the lengths
 * are declassified when keygen returns. The call is timed when its DRNG output is secret
 * (keygen is then the operation checked). Needs ct_core.h and the family's adapter. */
#ifndef NGCC_CT_KEYS_H
#define NGCC_CT_KEYS_H

static unsigned char *pk, *sk;
static unsigned long long pk_len, sk_len;

static void ct_keys_alloc(void) {
    pk = ct_alloc(bench_pk_max());
    sk = ct_alloc(bench_sk_max());
}

static void keygen(int secret_random) {
    int ret;
    pk_len = bench_pk_max();
    sk_len = bench_sk_max();
    ct_random(secret_random);
    ct_open(secret_random);
    ret = bench_keygen(pk, &pk_len, sk, &sk_len);
    ct_close(secret_random);
    ct_random(0);
    ct_must(&ret, "keygen");
    ct_public(&pk_len, sizeof pk_len);
    ct_public(&sk_len, sizeof sk_len);
    ct_public(pk, pk_len);
}

#endif
