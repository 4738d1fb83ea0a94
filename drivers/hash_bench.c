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
 * - between the warm-ups and the timed loop, the content control: an eighth as many
 *   measurements as iterations (at least CONTROL_MIN, at most CONTROL_MAX), each one
 *   chained call on the reference message (class 0) or on content drawn at run time once
 *   per run (class 1), the class drawn at random for each, the message copied into the
 *   same buffer before the clock starts, so that load and caches hit both classes alike;
 *   "control":[[class,ns],...] in the order taken. The reference content is fixed and
 *   known in advance; the host tests the classes against each other (this process is the
 *   candidate's, so it says no verdict).
 * Counter, report and exit as kem_bench.c (bench_core.h): 2 a call failed, 3 the report
 * could not be written, 64 bad arguments.
 */
#include "bench_core.h"

#include <sys/random.h>

#define DIGEST_BYTES (BENCH_DIGEST_BITS / 8)
#define CHAIN_BYTES (DIGEST_BYTES < 8 ? DIGEST_BYTES : 8)
#define MAX_BYTES 65536
/* The host pools every run of a record (a quick one has five: two calibration runs and
 * three trials); three runs give about 600 measurements per class, more than the 500 a
 * verdict needs (measure::stats::MIN_PER_CLASS). */
#define CONTROL_MIN 400
#define CONTROL_MAX 4096

static void nop(void) {}
static void (*volatile nop_fn)(void) = nop;

static unsigned char msg[MAX_BYTES], drawn[MAX_BYTES], work[MAX_BYTES];
static unsigned char control_class[CONTROL_MAX];
static uint64_t control_ns[CONTROL_MAX];
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

/* splitmix64: the drawn content and the classes. */
static uint64_t mix(uint64_t *s) {
    uint64_t z = *s += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* A seed drawn now: the kernel's random bytes, else the clock. */
static uint64_t draw_seed(void) {
    uint64_t s = now_ns();
    if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s) {
        s ^= (uint64_t)getpid() << 32;
    }
    return s;
}

/* The content control (see the head comment); returns how many measurements it took. */
static unsigned long long run_control(unsigned long long iterations, uint64_t *s) {
    unsigned long long n = iterations / 8, i;
    uint64_t classes = 0;
    n = n < CONTROL_MIN ? CONTROL_MIN : n > CONTROL_MAX ? CONTROL_MAX : n;
    for (i = 0; i < bytes; i++) {
        drawn[i] = (unsigned char)mix(s);
    }
    for (i = 0; i < n; i++) {
        uint64_t t0;
        if (i % 64 == 0) {
            classes = mix(s);
        }
        control_class[i] = (unsigned char)((classes >> (i % 64)) & 1);
        memcpy(work, control_class[i] ? drawn : msg, bytes);
        t0 = now_ns();
        chained_call(work);
        control_ns[i] = now_ns() - t0;
    }
    return n;
}

/* The control's measurements; the report is flushed as it fills. */
static void put_control(unsigned long long n) {
    unsigned long long i;
    put_str(",\"control\":[");
    for (i = 0; i < n; i++) {
        if (report_len > sizeof report - 64) {
            report_flush();
        }
        put_str(i ? ",[" : "[");
        put_u64(control_class[i]);
        put_str(",");
        put_u64(control_ns[i]);
        put_str("]");
    }
    put_str("]");
}

int main(int argc, char **argv) {
    static const char *const ops[] = {"hash_32",  "hash_128",  "hash_512",   "hash_1024", "hash_4096",
                                      "hash_8192", "hash_16384", "hash_65536", "nop"};
    static const unsigned long long sizes[] = {32, 128, 512, 1024, 4096, 8192, 16384, 65536, 32};
    unsigned long long iterations, warmups, i, controls = 0;
    uint64_t seed = draw_seed();
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
    /* The correctness check before timing: two chained calls give two digests. */
    memset(digest, 0, sizeof digest);
    chained_call(msg);
    chained_call(msg);
    m.counter = counter_open();
    m.baseline_rss_kib = resident_kib();

    for (i = 0; i < warmups; i++) {
        run_op(msg);
    }
    if (!op_is_nop) {
        controls = run_control(iterations, &seed);
    }
    timing_start(&m);
    for (i = 0; i < iterations; i++) {
        uint64_t c = call_begin(&m);
        run_op(msg);
        call_end(&m, c, i);
    }
    timing_stop(&m);

    put_measurement(&m);
    put_str(",\"api_sizes\":{\"digest\":");
    put_u64(DIGEST_BYTES);
    put_str("},\"returned_sizes\":{\"digest\":");
    put_u64(DIGEST_BYTES);
    put_str("}");
    put_field("message_bytes", bytes);
    put_control(controls);
    finish_report_and_exit();
    return 0;
}
