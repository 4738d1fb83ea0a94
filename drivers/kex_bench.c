/*
 * ngcc-repro timing driver for key exchanges: times one operation in this process and
 * prints one JSON object on stdout. The harness runs it once per trial (a fresh process).
 *
 *   kex_bench <exchange|init_a|init_b|pass1..pass8|derive_a|derive_b|nop> <iterations> <warmups> [cpu]
 *
 * Built with `-include <API header> -include kex_bench_iccs.h`. The reference method:
 * the DRNG seeded once with bytes 00..2f; every length preset before its call (keys and
 * states to the getters' values, messages to the buffer capacity, the declared total).
 * `exchange` is the whole protocol (init_a, init_b, every pass, derive_a, derive_b) per
 * iteration. `pass<k>` and `derive_*` are timed on fresh inputs: each iteration has its
 * own slot, prepared untimed by a protocol run up to the pass before (a pass never runs
 * on its own output); when the slots do not fit in 64 MiB they are prepared again in
 * rounds, and the preparation inside the timed window is subtracted ("excluded_ns").
 * A pass beyond the declared number is a usage error (64).
 * Sizes: "api_sizes" {pk, sk, sta, stb, ss, msgs (the declared total), passes};
 * "returned_sizes" {pk, pkb, sk, ss, m1..mP, msgs (their sum), unset (a bit per pass,
 * bit k-1, whose length stayed at the preset)}, from two runs of the protocol on the
 * reference seed with message lengths preset to 0 and to capacity: the lengths are those
 * of the first run; a pass whose length was 0 then capacity never set it.
 * Counter, report and exit as kem_bench.c (bench_core.h): exit 2 a call failed or the
 * setup exchange disagreed, 3 a returned length above its buffer (stderr `OVERFLOW:`) or
 * the report could not be written, 64 bad arguments.
 */
#include "bench_core.h"
#include "kex_run.h"

#define SLOT_BUDGET (64ull << 20)

enum { OP_EXCHANGE, OP_INIT_A, OP_INIT_B, OP_PASS1, OP_DERIVE_A = OP_PASS1 + KEX_MAX_PASSES, OP_DERIVE_B, OP_NOP };

static void nop(void) {}
static void (*volatile nop_fn)(void) = nop;

static kex_sizes sz;
static kex_run *slots;
static unsigned long long n_slots;

static int op_pass(int op) { return op >= OP_PASS1 && op < OP_DERIVE_A ? op - OP_PASS1 + 1 : 0; }

/* Untimed: what operation `op` needs in slot r. */
static void prepare(int op, kex_run *r) {
    int k = op_pass(op);
    if (k > 0) {
        kex_run_upto(r, &sz, k - 1, sz.total);
    } else if (op == OP_DERIVE_A || op == OP_DERIVE_B) {
        kex_run_upto(r, &sz, (int)sz.passes, sz.total);
    }
}

static void run_op(int op, kex_run *r) {
    int k = op_pass(op);
    if (k > 0) {
        kex_run_pass(r, &sz, k, sz.total);
        return;
    }
    switch (op) {
    case OP_EXCHANGE:
        kex_run_all(r, &sz, sz.total);
        break;
    case OP_INIT_A:
        r->a.pk_len = sz.pk, r->a.sk_len = sz.sk, r->a.st_len = sz.sta;
        must(kex_init_a(r->a.pk, &r->a.pk_len, r->a.sk, &r->a.sk_len, r->a.st, &r->a.st_len), "kex_init_a");
        break;
    case OP_INIT_B:
        r->b.pk_len = sz.pk, r->b.sk_len = sz.sk, r->b.st_len = sz.stb;
        must(kex_init_b(r->b.pk, &r->b.pk_len, r->b.sk, &r->b.sk_len, r->b.st, &r->b.st_len), "kex_init_b");
        break;
    case OP_DERIVE_A:
        kex_run_derive_a(r, &sz);
        break;
    case OP_DERIVE_B:
        kex_run_derive_b(r, &sz);
        break;
    default:
        nop_fn();
    }
}

/* Operations on fresh inputs use one slot per call; the others reuse slot 0. */
static int needs_slots(int op) { return op_pass(op) > 0 || op == OP_DERIVE_A || op == OP_DERIVE_B; }

static void allocate_slots(int op, unsigned long long iterations) {
    unsigned long long bytes = kex_run_bytes(&sz), fit = SLOT_BUDGET / (bytes ? bytes : 1), i;
    u8 *block;
    n_slots = needs_slots(op) ? (iterations < fit ? iterations : fit) : 1;
    if (n_slots == 0) {
        n_slots = 1;
    }
    slots = calloc((size_t)n_slots, sizeof *slots);
    block = malloc((size_t)(n_slots * bytes));
    if (slots == NULL || block == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    for (i = 0; i < n_slots; i++) {
        kex_run_bind(&slots[i], &sz, block + i * bytes);
    }
}

static void prepare_round(int op, unsigned long long n) {
    unsigned long long i;
    for (i = 0; i < n; i++) {
        prepare(op, &slots[i]);
    }
}

/* `count` calls of op, each in a slot prepared for it; rounds after the first are
 * prepared inside the window and their time excluded. */
static void calls(int op, unsigned long long count, bench_measurement *m, int timed) {
    unsigned long long done = 0, i, n;
    int slotted = needs_slots(op);
    while (done < count) {
        n = slotted ? (count - done < n_slots ? count - done : n_slots) : count - done;
        if (slotted && (done > 0 || !timed)) {
            uint64_t t = now_ns(), c = counter_read();
            prepare_round(op, n);
            if (timed) {
                m->excluded_ns += now_ns() - t;
                m->excluded_ticks += counter_read() - c;
            }
        }
        for (i = 0; i < n; i++) {
            uint64_t c = call_begin(m);
            run_op(op, &slots[slotted ? i : 0]);
            call_end(m, c, timed ? done + i : CALLS_MAX);
        }
        done += n;
    }
}

static void put_lengths(const kex_run *zero, const kex_run *cap) {
    ull sum = 0, unset = 0;
    char name[8];
    int k;
    put_str("},\"returned_sizes\":{\"pk\":");
    put_u64(zero->a.pk_len);
    put_field("pkb", zero->b.pk_len);
    put_field("sk", zero->a.sk_len);
    put_field("ss", zero->ssa_len);
    for (k = 1; k <= (int)sz.passes; k++) {
        snprintf(name, sizeof name, "m%d", k);
        put_field(name, zero->m_len[k]);
        sum += zero->m_len[k];
        if (zero->m_len[k] == 0 && cap->m_len[k] == sz.total && sz.total > 0) {
            unset |= 1ull << (k - 1);
        }
    }
    put_field("msgs", sum);
    put_field("unset", unset);
    put_str("}");
}

/* The sizes from two reference runs, message lengths preset to 0 and to capacity. */
static void put_sizes(void) {
    kex_run zero, cap;
    u8 *block = malloc(2 * (size_t)kex_run_bytes(&sz));
    if (block == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    kex_run_bind(&zero, &sz, block);
    kex_run_bind(&cap, &sz, block + kex_run_bytes(&sz));
    bench_reference_seed();
    kex_run_all(&zero, &sz, 0);
    bench_reference_seed();
    kex_run_all(&cap, &sz, sz.total);
    put_str(",\"api_sizes\":{\"pk\":");
    put_u64(sz.pk);
    put_field("sk", sz.sk);
    put_field("sta", sz.sta);
    put_field("stb", sz.stb);
    put_field("ss", sz.ss);
    put_field("msgs", sz.total);
    put_field("passes", sz.passes);
    put_lengths(&zero, &cap);
}

static const char *const ops[] = {"exchange", "init_a", "init_b", "pass1", "pass2", "pass3", "pass4", "pass5",
                                  "pass6",    "pass7",  "pass8",  "derive_a", "derive_b", "nop"};

int main(int argc, char **argv) {
    unsigned long long iterations, warmups;
    bench_measurement m;
    int op, bad;

    if ((bad = bench_args(argc, argv, ops, OP_NOP + 1, "exchange|init_a|init_b|pass1..pass8|derive_a|derive_b|nop",
                          &op, &iterations, &warmups, &m)) != 0) {
        return bad;
    }
    m.t_start = now_ns();
    sz = kex_ask();
    if (op_pass(op) > (int)sz.passes) {
        fprintf(stderr, "%s: the instance declares %llu passes\n", ops[op], sz.passes);
        return 64;
    }
    allocate_slots(op, iterations);
    bench_reference_seed();
    /* The one correctness check before timing: a whole exchange agrees. */
    kex_run_all(&slots[0], &sz, sz.total);
    if (!kex_run_agrees(&slots[0])) {
        fprintf(stderr, "CRYPTOFAIL: the two sides derived different secrets\n");
        return 2;
    }
    m.counter = counter_open();
    m.baseline_rss_kib = resident_kib();

    calls(op, warmups, &m, 0);
    if (needs_slots(op)) {
        prepare_round(op, iterations < n_slots ? iterations : n_slots);
    }
    timing_start(&m);
    calls(op, iterations, &m, 1);
    timing_stop(&m);

    put_measurement(&m);
    put_sizes();
    finish_report_and_exit();
    return 0;
}
