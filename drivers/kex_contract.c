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
 *
 *   kex_contract tamper
 *   stdin:  line 1 a nonce, then one case per line, `<seed> <k> <at> <bit>`: the exchange
 *           from the seed (lengths preset to 0, as the official KAT driver's first record)
 *           with bit `bit` of message k flipped right after pass k sent it, so that the
 *           next pass and the derivations get the tampered message; `at` 0, 1 or 2 is
 *           its first, middle (len / 2) or last byte; k = 0 tampers with nothing
 *   stdout: per case i: <nonce> <i> <passes> beyond            (k above the passes)
 *                       <nonce> <i> <passes> empty             (message k has no byte)
 *                       <nonce> <i> <passes> <len> <byte> <o1> <o2>
 *           o1 and o2 are two runs of the same case: `<ssa>:<ssb>` (hex), or
 *           `rejected:<step>` (the pass number, `a` or `b`: the first call that refused).
 *           A call that refuses before the tampered message reaches it is reported the
 *           same way; the harness tells the two apart.
 *
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

/* The nonce of line 1 into `nonce`; the rest of the input. */
static char *read_nonce(char *p, char *nonce) {
    char *nl = strchr(p, '\n');
    long i;
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
    return nl + 1;
}

/* Hex of `n` bytes, flushing as the report fills (a secret may be longer than it). */
static void put_hex(const u8 *p, ull n) {
    static const char digits[] = "0123456789ABCDEF";
    char two[3] = {0, 0, 0};
    ull i;
    for (i = 0; i < n; i++) {
        if (report_len > sizeof report - 8) {
            report_flush();
        }
        two[0] = digits[p[i] >> 4];
        two[1] = digits[p[i] & 15];
        put_str(two);
    }
}

/* One tampered case as the harness sent it. */
typedef struct {
    u8 seed[MAX_SEED];
    ull seed_len;
    int k, at, bit;
} tamper_case;

/* The byte of message k that `at` names (0 for an empty message, which is never flipped). */
static ull tamper_byte(ull len, int at) { return at == 0 || len == 0 ? 0 : at == 1 ? len / 2 : len - 1; }

/* The exchange of `c`: 0 when both sides derived, else the first call that refused
 * (its pass number, or -1 derive_a, -2 derive_b). *len is message k's length (0 if
 * it sent no byte: nothing was flipped). */
static int tampered_exchange(kex_run *r, const kex_sizes *s, const tamper_case *c, ull *len) {
    int j;
    must(bench_seed(c->seed, c->seed_len), "seeding the DRNG");
    kex_run_init(r, s);
    *len = 0;
    for (j = 1; j <= (int)s->passes; j++) {
        if (kex_run_try_pass(r, s, j, 0) < 0) {
            return j;
        }
        if (j == c->k && (*len = r->m_len[j]) > 0) {
            r->m[j][tamper_byte(*len, c->at)] ^= (u8)(1u << c->bit);
        }
    }
    if (kex_run_try_derive_a(r, s) != 0) {
        return -1;
    }
    return kex_run_try_derive_b(r, s) != 0 ? -2 : 0;
}

static void put_outcome(const kex_run *r, int refused) {
    put_str(" ");
    if (refused > 0) {
        put_str("rejected:");
        put_u64((uint64_t)refused);
    } else if (refused < 0) {
        put_str(refused == -1 ? "rejected:a" : "rejected:b");
    } else {
        put_hex(r->ssa, r->ssa_len);
        put_str(":");
        put_hex(r->ssb, r->ssb_len);
    }
}

/* `<seed> <k> <at> <bit>`, ended at `nl`. */
static void parse_case(char *p, char *nl, long line, tamper_case *c) {
    char *sp = memchr(p, ' ', (size_t)(nl - p));
    ull n = sp == NULL ? 0 : (ull)(sp - p) / 2;
    if (sp == NULL || (sp - p) % 2 != 0 || n == 0 || n > MAX_SEED || hex_decode(p, n, c->seed) != 0) {
        malformed("a case whose seed is not 1 to 256 bytes of hex", line);
    }
    c->seed_len = n;
    *nl = '\0';
    if (sscanf(sp, " %d %d %d", &c->k, &c->at, &c->bit) != 3 || c->k < 0 || c->k > KEX_MAX_PASSES || c->at < 0 ||
        c->at > 2 || c->bit < 0 || c->bit > 7) {
        malformed("a case that is not `<seed> <k 0..8> <at 0..2> <bit 0..7>`", line);
    }
}

/* Every case twice in a row, from the same seed. */
static int tamper(char *p, const kex_sizes *s, kex_run *one, kex_run *two) {
    char nonce[NONCE_HEX + 1], *nl;
    long i;
    p = read_nonce(p, nonce);
    for (i = 0; *p != '\0'; i++, p = nl + 1) {
        tamper_case c;
        ull len, again;
        int o1, o2;
        nl = strchr(p, '\n');
        if (nl == NULL) {
            malformed("a case not ended by a newline", i + 2);
        }
        parse_case(p, nl, i + 2, &c);
        put_str(nonce);
        put_str(" ");
        put_u64((uint64_t)i);
        put_str(" ");
        put_u64(s->passes);
        if ((ull)c.k > s->passes) {
            put_str(" beyond\n");
            report_flush();
            continue;
        }
        o1 = tampered_exchange(one, s, &c, &len);
        if (c.k > 0 && len == 0 && !(o1 >= 1 && o1 <= c.k)) {
            put_str(" empty\n");
            report_flush();
            continue;
        }
        o2 = tampered_exchange(two, s, &c, &again);
        put_str(" ");
        put_u64(len);
        put_str(" ");
        put_u64(c.k > 0 ? tamper_byte(len, c.at) : 0);
        put_outcome(one, o1);
        put_outcome(two, o2);
        put_str("\n");
        report_flush();
    }
    if (i == 0) {
        malformed("no case", 2);
    }
    sys_exit(0);
    return 0;
}

int main(int argc, char **argv) {
    char *p = read_input(), *nl;
    u8 seed[MAX_SEED];
    kex_sizes s = kex_ask();
    kex_run zero, cap;
    u8 *block = malloc(2 * (size_t)kex_run_bytes(&s));
    long k;
    char nonce[NONCE_HEX + 1];
    if (block == NULL) {
        fprintf(stderr, "CRYPTOFAIL: out of memory\n");
        sys_exit(2);
    }
    kex_run_bind(&zero, &s, block);
    kex_run_bind(&cap, &s, block + kex_run_bytes(&s));
    if (argc == 2 && strcmp(argv[1], "tamper") == 0) {
        return tamper(p, &s, &zero, &cap);
    }
    if (argc != 1) {
        fprintf(stderr, "usage: %s [tamper] < input\n", argv[0]);
        sys_exit(64);
    }
    p = read_nonce(p, nonce);
    for (k = 0; *p != '\0'; k++, p = nl + 1) {
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
