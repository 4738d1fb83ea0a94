/*
 * ngcc-repro constant-time driver for key exchanges: one part of the protocol per run,
 * under valgrind's memcheck, with its secrets undefined (ct_core.h), on the plain-buffer
 * exchange of kex_run.h (which declassifies what each call returns: its return value,
 * lengths, public keys and messages). `cargo xtask ct` reads memcheck's XML.
 *
 *   kex_ct <init|passes|derive> <runs>
 *
 * Built with `-DNGCC_CT -include <API header> -include kex_bench_iccs.h`. Each run seeds
 * the DRNG with its own bytes. init: kex_init_a and kex_init_b with the DRNG output
 * secret. passes: after an init in the clear, both sides' secret keys and states are
 * secret, and the DRNG output, for every pass. derive: after init and passes in the clear,
 * both sides' secret keys and states are secret for kex_derive_ss_a and _b.
 *
 *   kex_ct --time <init|passes|derive>
 *
 * times that part (the trial runner, bench_runner.c), every earlier part in the clear
 * from the measurement's seed.
 */
#include "bench_core.h"
#include "ct_core.h"
#define KEX_RUN_PUBLIC(p, n) ct_public((p), (n))
#include "kex_run.h"

static const char *const ops[] = {"init", "passes", "derive"};

static void secret_sides(kex_run *r) {
    ct_secret_key(r->a.sk, r->a.sk_len);
    ct_secret_key(r->b.sk, r->b.sk_len);
    ct_secret(r->a.st, r->a.st_len);
    ct_secret(r->b.st, r->b.st_len);
}

static kex_sizes sz;
static kex_run r;

static void one_run(int op, int run) {
    int k;
    (void)run;
    ct_random(op == 0);
    ct_open(op == 0);
    kex_run_init(&r, &sz);
    ct_close(op == 0);
    ct_random(0);
    if (op == 1) {
        secret_sides(&r);
    }
    ct_open(op == 1);
    for (k = 1; k <= (int)sz.passes; k++) {
        ct_random(op == 1);
        kex_run_pass(&r, &sz, k, sz.total);
        ct_random(0);
    }
    ct_close(op == 1);
    if (op == 2) {
        secret_sides(&r);
    }
    ct_open(op == 2);
    kex_run_derive_a(&r, &sz);
    kex_run_derive_b(&r, &sz);
    ct_close(op == 2);
}

int main(int argc, char **argv) {
    int op, runs, bad;
    if ((bad = ct_args(argc, argv, ops, 3, &op, &runs)) != 0) {
        return bad;
    }
    sz = kex_ask();
    kex_run_bind(&r, &sz, ct_alloc(kex_run_bytes(&sz)));
    ct_loop(op, runs, ops[op], one_run);
    return 0;
}
