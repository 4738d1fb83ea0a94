/*
 * ngcc-repro constant-time driver for signatures: one operation per run, under valgrind's
 * memcheck, with its secrets undefined (ct_core.h). `cargo xtask ct` reads memcheck's XML.
 *
 *   sig_ct <keygen|sign> <runs>
 *
 * Built with `-DNGCC_CT -include <API header> -include sig_bench_<api>.h`. Each run seeds
 * the DRNG with its own bytes. keygen: the DRNG output is secret, the public key is
 * declassified when the call returns. sign: the secret key (from a keygen in the clear)
 * and the DRNG output are secret, the message (64 bytes, the timing driver's) public;
 * the signature is declassified when the call returns.
 *
 *   sig_ct --time <keygen|sign>
 *
 * (the `ct` mode of the build's one program) times the operation under the trial runner
 * (bench_runner.c): the key pair and the DRNG output of each measurement come from its
 * seed; the message is the same in both classes.
 */
#include "ct_core.h"
#include "ct_keys.h"

static const char *const ops[] = {"keygen", "sign"};

static unsigned char *sig, msg[64];
static unsigned long long sig_len;

static void sign(int run) {
    int ret;
    unsigned i;
    for (i = 0; i < sizeof msg; i++) {
        msg[i] = (unsigned char)(i * 131 + 64 + run);
    }
    sig_len = bench_sig_max();
    ct_secret_key(sk, sk_len);
    ct_random(1);
    ct_open(1);
    ret = bench_sign(sk, sk_len, msg, sizeof msg, sig, &sig_len);
    ct_close(1);
    ct_random(0);
    ct_must(&ret, "sign");
    ct_public(&sig_len, sizeof sig_len);
    ct_public(sig, sig_len);
}

static void one_run(int op, int run) {
    keygen(op == 0);
    if (op == 1) {
        sign(run);
    }
}

int main(int argc, char **argv) {
    int op, runs, bad;
    if ((bad = ct_args(argc, argv, ops, 2, &op, &runs)) != 0) {
        return bad;
    }
    ct_keys_alloc();
    sig = ct_alloc(bench_sig_max());
    ct_loop(op, runs, ops[op], one_run);
    return 0;
}
