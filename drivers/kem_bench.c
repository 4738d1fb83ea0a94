/*
 * ngcc-repro timing driver: times one KEM operation in this process and prints one
 * JSON object on stdout. The harness runs it once per trial (a fresh process each time).
 *
 *   kem_bench <keygen|enc|dec|nop> <iterations> <warmups> [cpu]
 *
 * Built with `-include <API header> -include bench_<api>.h`; the adapter maps the
 * submission's API onto bench_* and owns its randomness, seeded with bytes 00..2f.
 * Counter: hardware cycles (perf_event_open, user space only) when the machine has
 * them, else the TSC (x86-64) or cntvct_el0 (AArch64); time from CLOCK_MONOTONIC_RAW.
 * Exit codes as the KAT programs: 2 a KEM call failed or decapsulation disagreed;
 * 3 the report could not be written. The report is written by one raw system call
 * and the process ends at once (see report_and_exit).
 */
#include "bench_core.h"

static void nop(void) {}
static void (*volatile nop_fn)(void) = nop;

static unsigned char *pk, *sk, *ct, *ss, *ss2;
static unsigned long long pk_len, sk_len, ct_len, ss_len, ss2_len;
static unsigned long long pk_max, sk_max, ct_max, ss_max;

static void run_op(int op) {
    switch (op) {
    case 0:
        pk_len = pk_max;
        sk_len = sk_max;
        must(bench_keygen(pk, &pk_len, sk, &sk_len), "keygen");
        break;
    case 1:
        ct_len = ct_max;
        ss_len = ss_max;
        must(bench_enc(pk, pk_len, ss, &ss_len, ct, &ct_len), "enc");
        break;
    case 2:
        ss2_len = ss_max;
        must(bench_dec(sk, sk_len, ct, ct_len, ss2, &ss2_len), "dec");
        break;
    default:
        nop_fn();
    }
}

int main(int argc, char **argv) {
    static const char *const ops[] = {"keygen", "enc", "dec", "nop"};
    unsigned long long iterations, warmups, i;
    bench_measurement m;
    int op, bad;

    if ((bad = bench_args(argc, argv, ops, 4, "keygen|enc|dec|nop", &op, &iterations, &warmups, &m)) != 0) {
        return bad;
    }

    m.t_start = now_ns();
    pk_max = bench_pk_max();
    sk_max = bench_sk_max();
    ct_max = bench_ct_max();
    ss_max = bench_ss_max();
    pk = malloc(pk_max);
    sk = malloc(sk_max);
    ct = malloc(ct_max);
    ss = malloc(ss_max);
    ss2 = malloc(ss_max);
    if (!pk || !sk || !ct || !ss || !ss2) {
        fprintf(stderr, "out of memory\n");
        return 2;
    }
    bench_reference_seed();
    /* Inputs for enc and dec, and the one correctness check before timing. */
    run_op(0);
    run_op(1);
    run_op(2);
    if (ss2_len != ss_len || memcmp(ss, ss2, (size_t)ss_len) != 0) {
        fprintf(stderr, "CRYPTOFAIL: decapsulation disagrees with encapsulation\n");
        return 2;
    }
    m.counter = counter_open();
    m.baseline_rss_kib = resident_kib();

    for (i = 0; i < warmups; i++) {
        run_op(op);
    }
    timing_start(&m);
    for (i = 0; i < iterations; i++) {
        uint64_t c = call_begin(&m);
        run_op(op);
        call_end(&m, c, i);
    }
    timing_stop(&m);

    put_measurement(&m);
    put_str(",\"api_sizes\":{\"pk\":");
    put_u64(pk_max);
    put_field("sk", sk_max);
    put_field("ct", ct_max);
    put_field("ss", ss_max);
    put_str("},\"returned_sizes\":{\"pk\":");
    put_u64(pk_len);
    put_field("sk", sk_len);
    put_field("ct", ct_len);
    put_field("ss", ss_len);
    put_str("}");
    finish_report_and_exit();
    return 0;
}
