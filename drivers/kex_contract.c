/*
 * ngcc-repro key-exchange length contract: does every pass set the length of the message
 * it sends, and do both sides agree on seeds drawn at run time? Built like kex_bench.c
 * (`-include <API header> -include kex_bench_iccs.h`).
 *
 *   stdin:  line 1 a nonce (32 hex characters), then one seed per line (hex, 1 to 256
 *           bytes), at least one
 *   stdout: per record k, in order:
 *           <nonce> <k> <passes> <total> <agree_0> <agree_cap> <m1_0> <m1_cap> ... <mP_0> <mP_cap>
 *
 * Each record runs the whole exchange twice from the same seed (bench_seed, then init,
 * passes, both derivations): once with every message length preset to 0 before its pass
 * (as the official KAT driver's first record), once preset to the buffer capacity, the
 * declared total (as the reference timing method). A pass that sets its length gives the
 * same value both times; one that never sets it leaves the preset. agree_x is 1 when
 * both sides derived the same secret. The result channel is channel.h's private
 * descriptor, written with raw write(2); the process ends with exit_group.
 * Exit codes: 0 all lines written; 2 a call failed or a claim is out of range; 3 a
 * returned length above its buffer, or the channel could not be written; 64 malformed input.
 */
#include "bench_core.h"
#include "kex_run.h"

#define MAX_INPUT (1u << 20)
#define NONCE_HEX 32
#define MAX_SEED 256

static void malformed(const char *what, long line) {
    fprintf(stderr, "malformed input, line %ld: %s\n", line, what);
    sys_exit(64);
}

static char *read_input(void) {
    static char input[MAX_INPUT + 1];
    size_t n = 0, got;
    while (n < MAX_INPUT && (got = fread(input + n, 1, MAX_INPUT - n, stdin)) > 0) {
        n += got;
    }
    if (n == MAX_INPUT) {
        malformed("more than 1 MiB of input", 0);
    }
    input[n] = '\0';
    return input;
}

/* One exchange from `seed` with every message length preset to `preset` (a length
 * above its buffer ends the program: kex_run.h). */
static void exchange(kex_run *r, const kex_sizes *s, const u8 *seed, ull seed_len, ull preset) {
    must(bench_seed(seed, seed_len), "seeding the DRNG");
    kex_run_all(r, s, preset);
}

static void put_record(const char *nonce, long k, const kex_sizes *s, const kex_run *zero, const kex_run *cap) {
    int j;
    put_str(nonce);
    put_str(" ");
    put_u64((uint64_t)k);
    put_str(" ");
    put_u64(s->passes);
    put_str(" ");
    put_u64(s->total);
    put_str(kex_run_agrees(zero) ? " 1" : " 0");
    put_str(kex_run_agrees(cap) ? " 1" : " 0");
    for (j = 1; j <= (int)s->passes; j++) {
        put_str(" ");
        put_u64(zero->m_len[j]);
        put_str(" ");
        put_u64(cap->m_len[j]);
    }
    put_str("\n");
    report_flush();
}

int main(void) {
    char *p = read_input(), *nl;
    char nonce[NONCE_HEX + 1];
    u8 seed[MAX_SEED];
    kex_sizes s = kex_ask();
    kex_run zero, cap;
    u8 *block = malloc(2 * (size_t)kex_run_bytes(&s));
    long k, i;
    if (block == NULL) {
        fprintf(stderr, "CRYPTOFAIL: out of memory\n");
        sys_exit(2);
    }
    kex_run_bind(&zero, &s, block);
    kex_run_bind(&cap, &s, block + kex_run_bytes(&s));
    nl = strchr(p, '\n');
    if (nl == NULL || nl - p != NONCE_HEX) {
        malformed("the first line is not a 32-character nonce", 1);
    }
    memcpy(nonce, p, NONCE_HEX);
    nonce[NONCE_HEX] = '\0';
    for (i = 0; i < NONCE_HEX; i++) {
        if (hex_nibble(nonce[i]) < 0) {
            malformed("the nonce is not hex", 1);
        }
    }
    for (k = 0, p = nl + 1; *p != '\0'; k++, p = nl + 1) {
        ull n;
        nl = strchr(p, '\n');
        n = nl == NULL ? 0 : (ull)(nl - p) / 2;
        if (nl == NULL || (nl - p) % 2 != 0 || n == 0 || n > MAX_SEED || hex_decode(p, n, seed) != 0) {
            malformed("a seed line that is not 1 to 256 bytes of hex", k + 2);
        }
        exchange(&zero, &s, seed, n, 0);
        exchange(&cap, &s, seed, n, s.total);
        put_record(nonce, k, &s, &zero, &cap);
    }
    if (k == 0) {
        malformed("no seed", 2);
    }
    sys_exit(0);
    return 0;
}
