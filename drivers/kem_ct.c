/*
 * ngcc-repro constant-time driver for KEMs: one operation per run, under valgrind's
 * memcheck, with its secrets undefined (ct_core.h). `cargo xtask ct` reads memcheck's XML.
 *
 *   kem_ct <keygen|enc|dec> <runs>
 *
 * Built with `-DNGCC_CT -include <API header> -include bench_<api>.h`. Each run seeds the
 * DRNG with its own bytes. keygen and enc: the DRNG output is secret; the public key and
 * the ciphertext are declassified when the call returns. dec: the secret key is secret,
 * from a keygen and an enc run in the clear; it decapsulates the ciphertext and then
 * the ciphertext with its first byte flipped (the implicit-rejection path).
 *
 *   kem_ct --time <keygen|enc|dec>
 *
 * (the `ct` mode of the build's one program) times the operation under the trial runner
 * (bench_runner.c): the key pair and ciphertext of each measurement come from its seed,
 * so the classes differ in every secret; dec times the valid ciphertext.
 */
#include "ct_core.h"
#include "ct_keys.h"

static const char *const ops[] = {"keygen", "enc", "dec"};

static unsigned char *ct, *ss;
static unsigned long long ct_len, ss_len;

static void enc(int secret_random) {
    int ret;
    ct_len = bench_ct_max();
    ss_len = bench_ss_max();
    ct_random(secret_random);
    ct_open(secret_random);
    ret = bench_enc(pk, pk_len, ss, &ss_len, ct, &ct_len);
    ct_close(secret_random);
    ct_random(0);
    ct_must(&ret, "enc");
    ct_public(&ct_len, sizeof ct_len);
    ct_public(&ss_len, sizeof ss_len);
    ct_public(ct, ct_len);
}

static void dec(void) {
    int ret, flip;
    for (flip = 0; flip < 2; flip++) {
        ct[0] ^= (unsigned char)flip;
        ct_secret_key(sk, sk_len);
        ss_len = bench_ss_max();
        ct_open(flip == 0);
        ret = bench_dec(sk, sk_len, ct, ct_len, ss, &ss_len);
        ct_close(flip == 0);
        /* A KEM may reject explicitly: whether it did is the API's public answer. */
        ct_public(&ret, sizeof ret);
        ct_public(&ss_len, sizeof ss_len);
        if (flip == 0) {
            ct_must(&ret, "dec");
        }
    }
}

static void one_run(int op, int run) {
    (void)run;
    keygen(op == 0);
    if (op >= 1) {
        enc(op == 1);
    }
    if (op == 2) {
        dec();
    }
}

int main(int argc, char **argv) {
    int op, runs, bad;
    if ((bad = ct_args(argc, argv, ops, 3, &op, &runs)) != 0) {
        return bad;
    }
    ct_keys_alloc();
    ct = ct_alloc(bench_ct_max());
    ss = ct_alloc(bench_ss_max());
    ct_loop(op, runs, ops[op], one_run);
    return 0;
}
