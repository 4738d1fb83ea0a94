/*
 * ngcc-repro timing driver for signatures: times one operation in this process and
 * prints one JSON object on stdout. The harness runs it once per trial (a fresh process).
 *
 *   sig_bench <keygen|sign|sign_msgs|verify|nop> <iterations> <warmups> [cpu]
 *
 * Built with `-include <API header> -include sig_bench_<api>.h`; the adapter maps the
 * submission's API onto bench_* and owns its randomness, seeded once with bytes 00..2f.
 * The reference method: one 64-byte message msg[i] = (i*131 + 64) mod 256; `*sig_len`
 * is the capacity before every sign; setup is keygen + sign + verify (must return 0),
 * and verify times that one setup signature. `sign_msgs` signs 16 messages in turn
 * (iteration i signs message i mod 16, msg_j[i] = (i*131 + 64 + j) mod 256), so the
 * spread of rejection sampling across messages is sampled. A sign that returns non-zero
 * is retried and counted ("failed_attempts", warm-ups and timed loop); more than 1000
 * failures in a row is CRYPTOFAIL. "out_len" summarises the signature lengths of the
 * warm-up and timed sign calls (count 0 for the other operations).
 * Counter, report and exit as kem_bench.c (bench_core.h): exit 2 a call failed or the
 * setup signature did not verify, 3 the report could not be written, 64 bad arguments.
 */
#include "bench_core.h"

#define MSG_BYTES 64
#define MSGS 16
#define MAX_FAILS_IN_A_ROW 1000

enum { OP_KEYGEN, OP_SIGN, OP_SIGN_MSGS, OP_VERIFY, OP_NOP };

static void nop(void) {}
static void (*volatile nop_fn)(void) = nop;

static unsigned char *pk, *sk, *sig;
static unsigned char msgs[MSGS][MSG_BYTES];
static unsigned long long pk_len, sk_len, sig_len;
static unsigned long long pk_max, sk_max, sig_max;

/* Statistics of the counted (warm-up and timed) sign calls. */
static int counting;
static unsigned long long failed_attempts, len_min, len_max, len_sum, len_count;

static void count_length(unsigned long long n) {
    if (len_count == 0 || n < len_min) {
        len_min = n;
    }
    if (n > len_max) {
        len_max = n;
    }
    len_sum += n;
    len_count++;
}

/* Sign message j, retrying failed attempts as the reference method does. */
static void sign_message(int j) {
    unsigned long long in_a_row = 0;
    int ret;
    for (;;) {
        sig_len = sig_max;
        ret = bench_sign(sk, sk_len, msgs[j], MSG_BYTES, sig, &sig_len);
        if (ret == 0) {
            break;
        }
        if (counting) {
            failed_attempts++;
        }
        if (++in_a_row > MAX_FAILS_IN_A_ROW) {
            fprintf(stderr, "CRYPTOFAIL: sign returned %d, %llu failures in a row\n", ret, in_a_row);
            exit(2);
        }
    }
    if (counting) {
        count_length(sig_len);
    }
}

static void run_op(int op, unsigned long long i) {
    switch (op) {
    case OP_KEYGEN:
        pk_len = pk_max;
        sk_len = sk_max;
        must(bench_keygen(pk, &pk_len, sk, &sk_len), "keygen");
        break;
    case OP_SIGN:
        sign_message(0);
        break;
    case OP_SIGN_MSGS:
        sign_message((int)(i % MSGS));
        break;
    case OP_VERIFY:
        must(bench_verify(pk, pk_len, sig, sig_len, msgs[0], MSG_BYTES), "verify");
        break;
    default:
        nop_fn();
    }
}

static void make_messages(void) {
    int i, j;
    for (j = 0; j < MSGS; j++) {
        for (i = 0; i < MSG_BYTES; i++) {
            msgs[j][i] = (unsigned char)((i * 131 + 64 + j) % 256);
        }
    }
}

static void put_sizes(void) {
    put_str(",\"api_sizes\":{\"pk\":");
    put_u64(pk_max);
    put_field("sk", sk_max);
    put_field("sig", sig_max);
    put_str("},\"returned_sizes\":{\"pk\":");
    put_u64(pk_len);
    put_field("sk", sk_len);
    put_field("sig", sig_len);
    put_str("},\"out_len\":{\"min\":");
    put_u64(len_min);
    put_field("max", len_max);
    put_field("sum", len_sum);
    put_field("count", len_count);
    put_str("}");
    put_field("failed_attempts", failed_attempts);
}

int main(int argc, char **argv) {
    static const char *const ops[] = {"keygen", "sign", "sign_msgs", "verify", "nop"};
    unsigned long long iterations, warmups, i;
    bench_measurement m;
    int op, bad;

    if ((bad = bench_args(argc, argv, ops, 5, "keygen|sign|sign_msgs|verify|nop", &op, &iterations, &warmups,
                          &m)) != 0) {
        return bad;
    }

    m.t_start = now_ns();
    pk_max = bench_pk_max();
    sk_max = bench_sk_max();
    sig_max = bench_sig_max();
    pk = malloc((size_t)pk_max + 1);
    sk = malloc((size_t)sk_max + 1);
    sig = malloc((size_t)sig_max + 1);
    if (!pk || !sk || !sig) {
        fprintf(stderr, "out of memory\n");
        return 2;
    }
    make_messages();
    bench_reference_seed();
    /* The key, the one signature verify times, and the correctness check before timing. */
    run_op(OP_KEYGEN, 0);
    run_op(OP_SIGN, 0);
    run_op(OP_VERIFY, 0);
    m.counter = counter_open();
    m.baseline_rss_kib = resident_kib();

    counting = 1;
    for (i = 0; i < warmups; i++) {
        run_op(op, i);
    }
    timing_start(&m);
    for (i = 0; i < iterations; i++) {
        uint64_t c = call_begin(&m);
        run_op(op, i);
        call_end(&m, c, i);
    }
    timing_stop(&m);

    put_measurement(&m);
    put_sizes();
    finish_report_and_exit();
    return 0;
}
