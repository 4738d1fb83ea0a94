/*
 * ngcc-repro ICCS key-exchange KAT driver: replays the official ICCS KAT_KEX schedule and
 * text format for one instance library (the schedule is restated in drivers/README.md).
 *
 * Schedule: the seed DRNG seeded with "seed" x 16; ten records; per record the seed
 * (512 bits), init_random_number(&drng_algorithm, seed, 64), kex_init_a, kex_init_b, the
 * passes 1..kex_get_passes_num() in turn (odd ones by the initiator), kex_derive_ss_a with
 * the responder's last message and kex_derive_ss_b with the initiator's; both secrets must
 * be equal. Unlike the official template, which always runs passes 1 to 3, the replay
 * follows the declared number, 0 (derive from the initial states) to 8. Every length is
 * in/out and never reset, as in the official driver: keys, states and secrets start at
 * the getters' values, messages at 0, and each record gets the previous one's values
 * (-DNGCC_KAT_RESET_LENGTHS=1 resets them before every record). Each message buffer
 * holds kex_get_total_msg_len_bytes(). Template mode (OUTPUT_BLANK_TEST_VECTORS 1)
 * prints every *_Len line and Pass_Num without a value.
 *
 * Compiled with `-include <the instance's API header>`; -DNGCC_KEX_PASSES=<n> is the
 * manifest's number of passes, which the library must declare. Output: the KAT text on the
 * private channel (channel.h). Exit codes (README.md):
 *   0 text produced;
 *   3 OVERFLOW: a call wrote outside a buffer, returned a length above its buffer, or the
 *     messages of one exchange add up to more than the declared total;
 *   2 CRYPTOFAIL: a call returned < 0, the secrets differ, a pass returned 1 before the
 *     declared last pass or the last pass did not return 1, a getter changed its answer,
 *     a claim is above 256 MiB, the passes are more than 8 or not the manifest's, or the
 *     library lacks a pass function it declares.
 * Diagnostics as guard.h: `OVERFLOW: record=<k> call=<f> buffer=<b> claimed=<n> ...`,
 * `CRYPTOFAIL: record=<k> call=<f> ...`.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "drng.h"
#include "guard.h"
#include "kat_schedule.h"
#include "kex_passes.h"

/* NGCC_NO_DRNG: the submission defines drng_algorithm itself (manifest: [build]
 * defines_drng), so the driver only declares it and seeds that one state. */
#ifdef NGCC_NO_DRNG
extern DRNG_ctx drng_algorithm;
#else
DRNG_ctx drng_algorithm;
#endif

/* What the library declares, asked once before the records and again after them. */
typedef struct {
    ull passes, pk, sk, sta, stb, ss, total;
} claims;

static FILE *kat;

static claims ask(void) {
    claims c;
    c.passes = claim(kex_get_passes_num, "kex_get_passes_num", KEX_MAX_PASSES);
    c.pk = claim(kex_get_pk_len_bytes, "kex_get_pk_len_bytes", MAX_CLAIM);
    c.sk = claim(kex_get_sk_len_bytes, "kex_get_sk_len_bytes", MAX_CLAIM);
    c.sta = claim(kex_get_sta_len_bytes, "kex_get_sta_len_bytes", MAX_CLAIM);
    c.stb = claim(kex_get_stb_len_bytes, "kex_get_stb_len_bytes", MAX_CLAIM);
    c.ss = claim(kex_get_ss_len_bytes, "kex_get_ss_len_bytes", MAX_CLAIM);
    c.total = claim(kex_get_total_msg_len_bytes, "kex_get_total_msg_len_bytes", MAX_CLAIM);
    return c;
}

/* The library as the manifest describes it: its declared passes, each one defined. */
static void check_passes(const claims *c) {
    int k;
#ifdef NGCC_KEX_PASSES
    if (c->passes != NGCC_KEX_PASSES) {
        fprintf(stderr, "CRYPTOFAIL: record=-1 call=kex_get_passes_num returned=%llu manifest=%d\n", c->passes,
                NGCC_KEX_PASSES);
        exit(EXIT_CRYPTOFAIL);
    }
#endif
    for (k = 1; k <= (int)c->passes; k++) {
        if (!kex_pass_defined(k)) {
            fprintf(stderr, "CRYPTOFAIL: record=-1 call=%s missing (declared passes=%llu)\n", kex_pass_names[k],
                    c->passes);
            exit(EXIT_CRYPTOFAIL);
        }
    }
}

/* --- output --- */

static void print_hex(const char *label, const u8 *p, ull len) {
    fprintf(kat, "%s = ", label);
    fput_hex(kat, p, len);
    fputc('\n', kat);
}

static void print_len(const char *label, ull len) {
    if (OUTPUT_BLANK_TEST_VECTORS) {
        fprintf(kat, "%s = \n", label);
    } else {
        fprintf(kat, "%s = %llu\n", label, len);
    }
}

static void print_field(const char *name, const u8 *p, ull len) {
    char label[48];
    snprintf(label, sizeof label, "%s_Len", name);
    print_len(label, len);
    print_hex(name, p, len);
}

/* --- the exchange --- */

typedef struct {
    claims c;
    guarded pka, ska, sta, pkb, skb, stb, ssa, ssb, m[KEX_MAX_PASSES + 1];
    kex_side a, b;
    ull ssa_len, ssb_len, m_len[KEX_MAX_PASSES + 1];
} exchange;

static void side_bind(kex_side *s, guarded *pk, guarded *sk, guarded *st) {
    s->pk = pk->data;
    s->sk = sk->data;
    s->st = st->data;
}

static void reset_lengths(exchange *x) {
    int k;
    x->a.pk_len = x->b.pk_len = x->c.pk;
    x->a.sk_len = x->b.sk_len = x->c.sk;
    x->a.st_len = x->c.sta;
    x->b.st_len = x->c.stb;
    x->ssa_len = x->ssb_len = x->c.ss;
    for (k = 0; k <= KEX_MAX_PASSES; k++) {
        x->m_len[k] = 0;
    }
}

static void allocate(exchange *x) {
    static char names[KEX_MAX_PASSES + 1][16];
    int k;
    guarded_alloc(&x->pka, "pka", x->c.pk);
    guarded_alloc(&x->ska, "ska", x->c.sk);
    guarded_alloc(&x->sta, "sta", x->c.sta);
    guarded_alloc(&x->pkb, "pkb", x->c.pk);
    guarded_alloc(&x->skb, "skb", x->c.sk);
    guarded_alloc(&x->stb, "stb", x->c.stb);
    guarded_alloc(&x->ssa, "ssa", x->c.ss);
    guarded_alloc(&x->ssb, "ssb", x->c.ss);
    for (k = 1; k <= (int)x->c.passes; k++) {
        snprintf(names[k], sizeof names[k], "m%d", k);
        guarded_alloc(&x->m[k], names[k], x->c.total);
    }
    side_bind(&x->a, &x->pka, &x->ska, &x->sta);
    side_bind(&x->b, &x->pkb, &x->skb, &x->stb);
    reset_lengths(x);
}

/* After every call: the bands, the return value, the returned lengths. */
static void after_call(int ret, const char *call) {
    check_all_bands();
    if (ret < 0) {
        cryptofail_ret(call, ret);
    }
}

static void init_side(exchange *x, int initiator) {
    kex_side *s = initiator ? &x->a : &x->b;
    guarded *pk = initiator ? &x->pka : &x->pkb, *sk = initiator ? &x->ska : &x->skb,
            *st = initiator ? &x->sta : &x->stb;
    int ret;
    current_call = initiator ? "kex_init_a" : "kex_init_b";
    ret = initiator ? kex_init_a(s->pk, &s->pk_len, s->sk, &s->sk_len, s->st, &s->st_len)
                    : kex_init_b(s->pk, &s->pk_len, s->sk, &s->sk_len, s->st, &s->st_len);
    after_call(ret, current_call);
    check_returned(pk, s->pk_len);
    check_returned(sk, s->sk_len);
    check_returned(st, s->st_len);
    print_field(initiator ? "PKa" : "PKb", s->pk, s->pk_len);
    print_field(initiator ? "SKa" : "SKb", s->sk, s->sk_len);
    print_field(initiator ? "Init_Sta" : "Init_Stb", s->st, s->st_len);
}

/* The messages of this exchange so far may not add up to more than the declared total. */
static void check_total(const exchange *x, int upto) {
    ull sum = 0;
    int k;
    for (k = 1; k <= upto; k++) {
        sum += x->m_len[k];
    }
    if (sum > x->c.total) {
        fprintf(stderr, "OVERFLOW: record=%d call=%s buffer=messages claimed=%llu returned=%llu\n", record,
                current_call, x->c.total, sum);
        exit(EXIT_OVERFLOW);
    }
}

/* Pass k: the sender's state and the message, then whether it finished when declared. */
static void run_pass(exchange *x, int k) {
    kex_side *s = kex_sender(k, &x->a, &x->b);
    guarded *st = s == &x->a ? &x->sta : &x->stb;
    char name[32];
    int ret;
    current_call = kex_pass_names[k];
    ret = kex_pass(k, &x->a, &x->b, k > 1 ? x->m[k - 1].data : NULL, k > 1 ? x->m_len[k - 1] : 0, x->m[k].data,
                   &x->m_len[k]);
    after_call(ret, current_call);
    check_returned(st, s->st_len);
    check_returned(&x->m[k], x->m_len[k]);
    check_total(x, k);
    snprintf(name, sizeof name, k % 2 ? "Pass%d_Sta" : "Pass%d_Stb", k);
    print_field(name, s->st, s->st_len);
    snprintf(name, sizeof name, "M%d", k);
    print_field(name, x->m[k].data, x->m_len[k]);
    if (ret == 1 && (ull)k != x->c.passes) {
        fprintf(stderr, "CRYPTOFAIL: record=%d call=%s returned=1 passes=%llu (finished before the last pass)\n",
                record, current_call, x->c.passes);
        exit(EXIT_CRYPTOFAIL);
    }
    if (ret != 1 && (ull)k == x->c.passes) {
        fprintf(stderr, "CRYPTOFAIL: record=%d call=%s returned=%d passes=%llu (the last pass did not finish)\n",
                record, current_call, ret, x->c.passes);
        exit(EXIT_CRYPTOFAIL);
    }
}

/* The last message each side sent (NULL, 0 when it sent none). */
static void last_message(exchange *x, int initiator, u8 **m, ull *len) {
    int k;
    *m = NULL;
    *len = 0;
    for (k = (int)x->c.passes; k >= 1; k--) {
        if ((k % 2 == 1) == initiator) {
            *m = x->m[k].data;
            *len = x->m_len[k];
            return;
        }
    }
}

static void derive(exchange *x) {
    u8 *ma, *mb;
    ull ma_len, mb_len;
    int ret;
    last_message(x, 1, &ma, &ma_len);
    last_message(x, 0, &mb, &mb_len);
    current_call = "kex_derive_ss_a";
    ret = kex_derive_a(&x->a, &x->b, mb, mb_len, x->ssa.data, &x->ssa_len);
    after_call(ret, current_call);
    check_returned(&x->ssa, x->ssa_len);
    current_call = "kex_derive_ss_b";
    ret = kex_derive_b(&x->a, &x->b, ma, ma_len, x->ssb.data, &x->ssb_len);
    after_call(ret, current_call);
    check_returned(&x->ssb, x->ssb_len);
    if (x->ssa_len != x->ssb_len || memcmp(x->ssa.data, x->ssb.data, (size_t)x->ssa_len) != 0) {
        fprintf(stderr, "CRYPTOFAIL: record=%d call=kex_derive_ss_b ss=unequal ssa_len=%llu ssb_len=%llu\n", record,
                x->ssa_len, x->ssb_len);
        exit(EXIT_CRYPTOFAIL);
    }
    current_call = "none";
    print_field("SS", x->ssa.data, x->ssa_len);
}

static void seed_drng(DRNG_ctx *ctx, unsigned char *seed, const char *call) {
    int ret = init_random_number(ctx, seed, SEED_BYTES);
    if (ret != 0) {
        cryptofail_ret(call, ret);
    }
}

static void one_record(exchange *x, DRNG_ctx *seeds) {
    unsigned char seed[SEED_BYTES];
    int k, ret;
    if (NGCC_KAT_RESET_LENGTHS) {
        reset_lengths(x);
    }
    fprintf(kat, "Count = %d\n", record);
    ret = get_random_number(seeds, seed, 8 * SEED_BYTES);
    if (ret != 0) {
        cryptofail_ret("get_random_number(seed)", ret);
    }
    fprintf(kat, "Seed_Len = %d\n", SEED_BYTES);
    print_hex("Seed", seed, SEED_BYTES);
    seed_drng(&drng_algorithm, seed, "init_random_number(drng_algorithm)");
    print_len("Pass_Num", x->c.passes);
    init_side(x, 1);
    init_side(x, 0);
    for (k = 1; k <= (int)x->c.passes; k++) {
        run_pass(x, k);
    }
    derive(x);
    fprintf(kat, "\n");
    fflush(kat);
}

static void same_claims(const claims *before) {
    claims now = ask();
    if (memcmp(&now, before, sizeof now) != 0) {
        fprintf(stderr, "CRYPTOFAIL: record=-1 call=kex_get_* (a size or the passes changed during the run)\n");
        exit(EXIT_CRYPTOFAIL);
    }
}

int main(void) {
    static exchange x;
    unsigned char nonce[SEED_BYTES];
    DRNG_ctx seeds;
    int i;

    guard_setup();
    kat = fdopen(channel_fd, "w");
    if (kat == NULL) {
        perror("fdopen");
        return EXIT_CRYPTOFAIL;
    }
    x.c = ask();
    check_passes(&x.c);
    allocate(&x);
    for (i = 0; i < SEED_BYTES; i++) {
        nonce[i] = (unsigned char)"seed"[i % 4];
    }
    seed_drng(&seeds, nonce, "init_random_number(seed)");
    for (record = 0; record < RECORDS; record++) {
        one_record(&x, &seeds);
    }
    record = -1;
    same_claims(&x.c);
    if (fclose(kat) != 0) {
        perror("writing the KAT text");
        return EXIT_CRYPTOFAIL;
    }
    return 0;
}
