/*
 * ngcc-repro timing driver for hash functions: times one message size in this process
 * and prints one JSON object on stdout. The harness runs it once per trial.
 *
 *   hash_bench <hash_32|hash_128|...|hash_65536|nop> <iterations> <warmups> [cpu]
 *
 * Built with `-include <API header> -include hash_bench_<api>.h`; the adapter gives
 * bench_hash and the digest width. The reference method: a message of N bytes,
 * msg[i] = (i*131 + N) mod 256, a digest of the instance's width. Beyond it:
 * - every call is chained: the previous digest's first (at most 8) bytes are XORed into
 *   the message's first bytes, so no call repeats an input (a result cache cannot serve
 *   the loop) and a digest equal to the previous one is CRYPTOFAIL (exit 2);
 * - between the warm-ups and the timed loop, a control loop of iterations/8 (at least 1)
 *   calls hashes the same size with content drawn at run time; "control_ns"/"control_iterations" let the
 *   host see a speed that depends on the content (the reference content is fixed and
 *   known in advance).
 * Counter, report and exit as kem_bench.c (bench_core.h): 2 a call failed, 3 the report
 * could not be written, 64 bad arguments.
 */
#include "bench_core.h"

#include <sys/random.h>

#define DIGEST_BYTES (BENCH_DIGEST_BITS / 8)
#define CHAIN_BYTES (DIGEST_BYTES < 8 ? DIGEST_BYTES : 8)
#define MAX_BYTES 65536

static void nop(void) {}
static void (*volatile nop_fn)(void) = nop;

static unsigned char msg[MAX_BYTES], control[MAX_BYTES];
static unsigned char digest[DIGEST_BYTES + 64], previous[DIGEST_BYTES];
static unsigned long long bytes;
static int op_is_nop;

static void chained_call(unsigned char *m) {
    int ret, i;
    memcpy(previous, digest, DIGEST_BYTES);
    for (i = 0; i < CHAIN_BYTES && (unsigned long long)i < bytes; i++) {
        m[i] ^= previous[i];
    }
    ret = bench_hash(m, bytes, digest);
    if (ret != 0) {
        fprintf(stderr, "CRYPTOFAIL: CryptHash returned %d on a %llu-byte message\n", ret, bytes);
        exit(2);
    }
    if (memcmp(previous, digest, DIGEST_BYTES) == 0) {
        fprintf(stderr, "CRYPTOFAIL: CryptHash returned the previous call's digest for a changed %llu-byte message\n",
                bytes);
        exit(2);
    }
}

static void run_op(unsigned char *m) {
    if (op_is_nop) {
        nop_fn();
    } else {
        chained_call(m);
    }
}

/* Content drawn now: the kernel's random bytes, else the clock. */
static void draw_control(void) {
    uint64_t s = now_ns();
    unsigned long long i;
    if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s) {
        s ^= (uint64_t)getpid() << 32;
    }
    for (i = 0; i < bytes; i++) {
        uint64_t z;
        s += 0x9E3779B97F4A7C15ULL;
        z = s;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        control[i] = (unsigned char)(z ^ (z >> 31));
    }
}

int main(int argc, char **argv) {
    static const char *const ops[] = {"hash_32",  "hash_128",  "hash_512",   "hash_1024", "hash_4096",
                                      "hash_8192", "hash_16384", "hash_65536", "nop"};
    static const unsigned long long sizes[] = {32, 128, 512, 1024, 4096, 8192, 16384, 65536, 32};
    unsigned long long iterations, warmups, i, controls;
    uint64_t c0, c1;
    bench_measurement m;
    int op, bad;

    if ((bad = bench_args(argc, argv, ops, 9, "hash_32|...|hash_65536|nop", &op, &iterations, &warmups, &m)) != 0) {
        return bad;
    }
    m.t_start = now_ns();
    bytes = sizes[op];
    op_is_nop = op == 8;
    for (i = 0; i < bytes; i++) {
        msg[i] = (unsigned char)((i * 131 + bytes) % 256);
    }
    draw_control();
    /* The correctness check before timing: two chained calls give two digests. */
    memset(digest, 0, sizeof digest);
    chained_call(msg);
    chained_call(msg);
    m.counter = counter_open();
    m.baseline_rss_kib = resident_kib();

    for (i = 0; i < warmups; i++) {
        run_op(msg);
    }
    controls = iterations / 8 > 0 ? iterations / 8 : 1;
    c0 = now_ns();
    for (i = 0; i < controls; i++) {
        run_op(control);
    }
    c1 = now_ns();
    timing_start(&m);
    for (i = 0; i < iterations; i++) {
        run_op(msg);
    }
    timing_stop(&m);

    put_measurement(&m);
    put_str(",\"api_sizes\":{\"digest\":");
    put_u64(DIGEST_BYTES);
    put_str("},\"returned_sizes\":{\"digest\":");
    put_u64(DIGEST_BYTES);
    put_str("}");
    put_field("message_bytes", bytes);
    put_field("control_ns", c1 - c0);
    put_field("control_iterations", controls);
    finish_report_and_exit();
    return 0;
}
