/*
 * ngcc-repro ICCS signature KAT driver: replays the official ICCS KAT_SIG schedule and
 * text format for one instance library (spec: ngcc-families.md §2).
 *
 * Schedule: a seed DRNG seeded with "seed" x 16 and a message DRNG seeded with
 * "msg" x 21 + "m" (64 bytes each); ten records, message length 56 + 8i bytes; per
 * record the seed (512 bits), the message, init_random_number(&drng_algorithm, seed, 64),
 * sig_keygen, sig_sign and sig_verify, which must accept. The three lengths are set from
 * the getters once, before the loop, and carried over between records as the official
 * driver does (record k's sig_sign gets record k-1's signature length in *sn_len);
 * -DNGCC_KAT_RESET_LENGTHS=1 resets them to the claimed sizes before every record.
 * Template mode (OUTPUT_BLANK_TEST_VECTORS 1) prints PK_Len, SK_Len and Sn_Len empty.
 *
 * Compiled by the harness with `-include <the instance's API header>`; the library
 * provides sig_* and the ICCS DRNG (drng.h), and this driver owns drng_algorithm.
 * The KAT text goes to stdout through a private channel (channel.h): what the library
 * prints to stdout lands on stderr. Exit codes (see README.md):
 *   0 text produced;
 *   3 OVERFLOW: a call wrote outside a buffer (a band of at least max(claimed, 4096)
 *     bytes on each side, then a PROT_NONE page), or returned a length above the claim;
 *   2 CRYPTOFAIL: a call returned non-zero, verify rejected the record's own signature,
 *     a getter changed its answer, a claimed size is above 256 MiB, or sig_sign changed
 *     its message.
 * Every diagnostic is one stderr line `OVERFLOW: record=<k> call=<f> buffer=<b>
 * claimed=<n> overrun=<m>|underrun=<m>|returned=<m>` or `CRYPTOFAIL: record=<k>
 * call=<f> ...` (record -1: before the first record).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "channel.h"
#include "digits.h"
#include "drng.h"

DRNG_ctx drng_algorithm;

#ifndef NGCC_KAT_RESET_LENGTHS
#define NGCC_KAT_RESET_LENGTHS 0
#endif
#ifndef OUTPUT_BLANK_TEST_VECTORS
#define OUTPUT_BLANK_TEST_VECTORS 0
#endif

/* The official schedule's 10 records, unless the manifest sets the instance's count. */
#ifdef NGCC_KAT_RECORDS
#define RECORDS NGCC_KAT_RECORDS
#else
#define RECORDS 10
#endif
#define SEED_BYTES 64
#define MIN_BAND 4096u
#define MAX_CLAIM (256ull << 20)
#define MAX_BUFFERS 4

enum { EXIT_CRYPTOFAIL = 2, EXIT_OVERFLOW = 3 };

/* A buffer of `len` usable bytes: [PROT_NONE page][front band][data][back band][PROT_NONE
 * page]. The bands are at least max(len, 4096) bytes, filled with a pattern that depends
 * on the position and a per-run salt, and checked after every call. */
typedef struct {
    const char *name;
    unsigned char *map, *data;
    size_t map_len, front_len, back_len;
    unsigned long long len;
} guarded;

static int record = -1;
static const char *current_call = "none";
static unsigned char salt;
static size_t page;
static guarded *live[MAX_BUFFERS];

static unsigned char pattern(size_t i) { return (unsigned char)(salt + i * 167u + (i >> 9)); }

static size_t round_up(size_t n) { return (n + page - 1) / page * page; }

static void overflow(const guarded *g, const char *what, unsigned long long n) {
    fprintf(stderr, "OVERFLOW: record=%d call=%s buffer=%s claimed=%llu %s=%llu\n", record, current_call, g->name,
            g->len, what, n);
    exit(EXIT_OVERFLOW);
}

static void cryptofail_ret(const char *call, long long ret) {
    fprintf(stderr, "CRYPTOFAIL: record=%d call=%s returned=%lld\n", record, call, ret);
    exit(EXIT_CRYPTOFAIL);
}

/* --- the guard pages: a fault there is an overrun, reported like a band overrun --- */

static void put_err(const char *s) {
    size_t n = strlen(s);
    if (write(2, s, n) < 0) {
        _exit(EXIT_OVERFLOW);
    }
}

static void put_err_u64(unsigned long long v) {
    char d[21];
    dec_digits(v, d);
    put_err(d);
}

/* Async-signal-safe: raw writes only, then _exit. Any other fault returns with the
 * default action restored (SA_RESETHAND), so it kills the process as a crash. */
static void on_fault(int sig, siginfo_t *info, void *context) {
    const unsigned char *a = (const unsigned char *)info->si_addr;
    int i;
    (void)sig;
    (void)context;
    for (i = 0; i < MAX_BUFFERS; i++) {
        const guarded *g = live[i];
        int before, after;
        if (g == NULL) {
            continue;
        }
        before = a >= g->map && a < g->map + page;
        after = a >= g->map + g->map_len - page && a < g->map + g->map_len;
        if (before || after) {
            put_err("OVERFLOW: record=");
            if (record < 0) {
                put_err("-1");
            } else {
                put_err_u64((unsigned long long)record);
            }
            put_err(" call=");
            put_err(current_call);
            put_err(" buffer=");
            put_err(g->name);
            put_err(" claimed=");
            put_err_u64(g->len);
            put_err(before ? " underrun=" : " overrun=");
            put_err_u64(before ? (unsigned long long)(g->data - a) : (unsigned long long)(a - g->data) + 1);
            put_err(" guard-page\n");
            _exit(EXIT_OVERFLOW);
        }
    }
}

static void install_fault_handler(void) {
    static unsigned char alt[1 << 16];
    stack_t ss;
    struct sigaction sa;
    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    ss.ss_flags = 0;
    sigaltstack(&ss, NULL);
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
}

/* --- guarded buffers --- */

static void fill_bands(guarded *g) {
    size_t i;
    for (i = 0; i < g->front_len; i++) {
        g->data[-(ptrdiff_t)g->front_len + (ptrdiff_t)i] = pattern(i);
    }
    for (i = 0; i < g->back_len; i++) {
        g->data[g->len + i] = pattern(g->front_len + i);
    }
}

static void guarded_alloc(guarded *g, const char *name, unsigned long long len) {
    size_t band = len > MIN_BAND ? (size_t)len : MIN_BAND;
    int i;
    g->name = name;
    g->len = len;
    g->front_len = round_up(band);
    g->back_len = round_up((size_t)len + band) - (size_t)len;
    g->map_len = page + g->front_len + (size_t)len + g->back_len + page;
    g->map = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g->map == MAP_FAILED) {
        fprintf(stderr, "CRYPTOFAIL: record=%d call=mmap buffer=%s claimed=%llu (no memory for the buffer and its bands)\n",
                record, name, len);
        exit(EXIT_CRYPTOFAIL);
    }
    if (mprotect(g->map, page, PROT_NONE) != 0 || mprotect(g->map + g->map_len - page, page, PROT_NONE) != 0) {
        perror("mprotect");
        exit(EXIT_CRYPTOFAIL);
    }
    g->data = g->map + page + g->front_len;
    fill_bands(g);
    for (i = 0; i < MAX_BUFFERS; i++) {
        if (live[i] == NULL) {
            live[i] = g;
            return;
        }
    }
    fprintf(stderr, "internal: more than %d guarded buffers\n", MAX_BUFFERS);
    exit(EXIT_CRYPTOFAIL);
}

static void guarded_free(guarded *g) {
    int i;
    for (i = 0; i < MAX_BUFFERS; i++) {
        if (live[i] == g) {
            live[i] = NULL;
        }
    }
    munmap(g->map, g->map_len);
}

/* The farthest changed band byte on each side decides what is reported. */
static void check_bands(const guarded *g) {
    size_t i;
    for (i = 0; i < g->front_len; i++) {
        if (g->data[-(ptrdiff_t)g->front_len + (ptrdiff_t)i] != pattern(i)) {
            overflow(g, "underrun", g->front_len - i);
        }
    }
    for (i = g->back_len; i > 0; i--) {
        if (g->data[g->len + i - 1] != pattern(g->front_len + i - 1)) {
            overflow(g, "overrun", g->len + i);
        }
    }
}

static void check_all_bands(void) {
    int i;
    for (i = 0; i < MAX_BUFFERS; i++) {
        if (live[i] != NULL) {
            check_bands(live[i]);
        }
    }
}

static void check_returned(const guarded *g, unsigned long long returned) {
    if (returned > g->len) {
        overflow(g, "returned", returned);
    }
}

/* --- claimed sizes --- */

typedef unsigned long long (*getter)(void);

/* Ask twice; a getter whose answer changes, or a claim above 256 MiB, is CRYPTOFAIL. */
static unsigned long long claimed(getter get, const char *name) {
    unsigned long long a = get(), b = get();
    if (a != b) {
        fprintf(stderr, "CRYPTOFAIL: record=%d call=%s returned=%llu then=%llu\n", record, name, a, b);
        exit(EXIT_CRYPTOFAIL);
    }
    if (a > MAX_CLAIM) {
        fprintf(stderr, "CRYPTOFAIL: record=%d call=%s returned=%llu limit=%llu\n", record, name, a, MAX_CLAIM);
        exit(EXIT_CRYPTOFAIL);
    }
    return a;
}

static void same_claim(getter get, const char *name, unsigned long long before) {
    unsigned long long now = get();
    if (now != before) {
        fprintf(stderr, "CRYPTOFAIL: record=%d call=%s returned=%llu then=%llu\n", record, name, before, now);
        exit(EXIT_CRYPTOFAIL);
    }
}

/* --- output --- */

static FILE *kat;

static void print_hex(const char *label, const unsigned char *p, unsigned long long len) {
    static const char digits[] = "0123456789ABCDEF";
    char chunk[8192];
    size_t n = 0;
    unsigned long long i;
    fprintf(kat, "%s = ", label);
    for (i = 0; i < len; i++) {
        chunk[n++] = digits[p[i] >> 4];
        chunk[n++] = digits[p[i] & 15];
        if (n == sizeof chunk) {
            fwrite(chunk, 1, n, kat);
            n = 0;
        }
    }
    fwrite(chunk, 1, n, kat);
    fputc('\n', kat);
}

/* `<name>_Len = n` (empty in template mode) then `<name> = HEX`. */
static void print_field(const char *name, const unsigned char *p, unsigned long long len) {
    if (OUTPUT_BLANK_TEST_VECTORS) {
        fprintf(kat, "%s_Len = \n", name);
    } else {
        fprintf(kat, "%s_Len = %llu\n", name, len);
    }
    print_hex(name, p, len);
}

static void nonce(unsigned char out[SEED_BYTES], const char *text, char last) {
    size_t i, n = strlen(text);
    for (i = 0; i < SEED_BYTES; i++) {
        out[i] = (unsigned char)text[i % n];
    }
    if (last != '\0') {
        out[SEED_BYTES - 1] = (unsigned char)last;
    }
}

static void seed_drng(DRNG_ctx *ctx, unsigned char *seed, const char *call) {
    int ret = init_random_number(ctx, seed, SEED_BYTES);
    if (ret != 0) {
        cryptofail_ret(call, ret);
    }
}

static void draw(DRNG_ctx *ctx, unsigned char *out, unsigned long long bits, const char *call) {
    int ret = get_random_number(ctx, out, bits);
    if (ret != 0) {
        cryptofail_ret(call, ret);
    }
}

static void setup(void) {
    long p = sysconf(_SC_PAGESIZE);
    struct timespec ts;
    page = p > 0 ? (size_t)p : 4096;
    clock_gettime(CLOCK_REALTIME, &ts);
    salt = (unsigned char)(ts.tv_nsec ^ (ts.tv_nsec >> 8) ^ getpid());
    if (salt == 0) {
        salt = 0xA5;
    }
    kat = fdopen(channel_fd, "w");
    if (kat == NULL) {
        perror("fdopen");
        exit(EXIT_CRYPTOFAIL);
    }
    install_fault_handler();
}

int main(void) {
    unsigned char seed_nonce[SEED_BYTES], msg_nonce[SEED_BYTES], seed[SEED_BYTES];
    unsigned char copy[56 + 8 * (RECORDS - 1)];
    DRNG_ctx seed_ctx, msg_ctx;
    guarded pk, sk, sn, m;
    unsigned long long pk_max, sk_max, sn_max, pk_len, sk_len, sn_len, m_len;
    int ret;

    setup();
    pk_max = claimed(sig_get_pk_len_bytes, "sig_get_pk_len_bytes");
    sk_max = claimed(sig_get_sk_len_bytes, "sig_get_sk_len_bytes");
    sn_max = claimed(sig_get_sn_len_bytes, "sig_get_sn_len_bytes");
    guarded_alloc(&pk, "pk", pk_max);
    guarded_alloc(&sk, "sk", sk_max);
    guarded_alloc(&sn, "sn", sn_max);
    nonce(seed_nonce, "seed", '\0');
    nonce(msg_nonce, "msg", 'm');
    seed_drng(&seed_ctx, seed_nonce, "init_random_number(seed)");
    seed_drng(&msg_ctx, msg_nonce, "init_random_number(msg)");
    pk_len = pk_max;
    sk_len = sk_max;
    sn_len = sn_max;

    for (record = 0; record < RECORDS; record++) {
        if (NGCC_KAT_RESET_LENGTHS) {
            pk_len = pk_max;
            sk_len = sk_max;
            sn_len = sn_max;
        }
        m_len = 56 + 8 * (unsigned long long)record;
        guarded_alloc(&m, "m", m_len);
        draw(&seed_ctx, seed, 8 * SEED_BYTES, "get_random_number(seed)");
        draw(&msg_ctx, m.data, 8 * m_len, "get_random_number(msg)");
        check_bands(&m);
        memcpy(copy, m.data, (size_t)m_len);
        seed_drng(&drng_algorithm, seed, "init_random_number(drng_algorithm)");

        current_call = "sig_keygen";
        ret = sig_keygen(pk.data, &pk_len, sk.data, &sk_len);
        check_all_bands();
        if (ret != 0) {
            cryptofail_ret(current_call, ret);
        }
        check_returned(&pk, pk_len);
        check_returned(&sk, sk_len);

        current_call = "sig_sign";
        ret = sig_sign(sk.data, sk_len, m.data, m_len, sn.data, &sn_len);
        check_all_bands();
        if (ret != 0) {
            cryptofail_ret(current_call, ret);
        }
        check_returned(&sn, sn_len);
        if (memcmp(copy, m.data, (size_t)m_len) != 0) {
            fprintf(stderr, "CRYPTOFAIL: record=%d call=sig_sign modified=m (it wrote into the message it signs)\n", record);
            return EXIT_CRYPTOFAIL;
        }

        current_call = "sig_verify";
        ret = sig_verify(pk.data, pk_len, sn.data, sn_len, m.data, m_len);
        check_all_bands();
        if (ret != 0) {
            cryptofail_ret("sig_verify(own signature)", ret);
        }
        current_call = "none";

        fprintf(kat, "Count = %d\n", record);
        fprintf(kat, "Seed_Len = %d\n", SEED_BYTES);
        print_hex("Seed", seed, SEED_BYTES);
        print_field("PK", pk.data, pk_len);
        print_field("SK", sk.data, sk_len);
        fprintf(kat, "M_Len = %llu\n", m_len);
        print_hex("M", copy, m_len);
        print_field("Sn", sn.data, sn_len);
        fprintf(kat, "\n");
        fflush(kat);
        guarded_free(&m);
    }
    record = -1;
    same_claim(sig_get_pk_len_bytes, "sig_get_pk_len_bytes", pk_max);
    same_claim(sig_get_sk_len_bytes, "sig_get_sk_len_bytes", sk_max);
    same_claim(sig_get_sn_len_bytes, "sig_get_sn_len_bytes", sn_max);
    if (fclose(kat) != 0) {
        perror("writing the KAT text");
        return EXIT_CRYPTOFAIL;
    }
    return 0;
}
