/*
 * ngcc-repro key-exchange passes (iccs_kex_kat.c, kex_contract.c, kex_bench.c): the ICCS
 * KEX API has one function per message pass, kex_generate_pass<k>_msg_a for odd k (the
 * initiator sends) and _msg_b for even k, and a candidate defines only as many as its
 * kex_get_passes_num(). The drivers follow that number, so every pass function up to
 * KEX_MAX_PASSES is referenced weakly under a private C name (asm label): a pass the
 * library lacks is a null pointer, never a link error, and the API header's own
 * declarations (if any) cannot clash with ours.
 */
#ifndef NGCC_KEX_PASSES_H
#define NGCC_KEX_PASSES_H

#include <stddef.h>

#define KEX_MAX_PASSES 8

typedef unsigned char u8;
typedef unsigned long long ull;

/* One side of the exchange: long-term keys and state, with their in/out lengths. */
typedef struct {
    u8 *pk, *sk, *st;
    ull pk_len, sk_len, st_len;
} kex_side;

typedef int (*kex_first_fn)(u8 *, ull, u8 *, ull, u8 *, ull *, u8 *, ull *);
typedef int (*kex_next_fn)(u8 *, ull, u8 *, ull, u8 *, ull, u8 *, ull *, u8 *, ull *);

#define KEX_WEAK __attribute__((weak))
extern int ngcc_kex_pass1(u8 *, ull, u8 *, ull, u8 *, ull *, u8 *, ull *) __asm__("kex_generate_pass1_msg_a") KEX_WEAK;
#define KEX_NEXT(k, side)                                                                                         \
    extern int ngcc_kex_pass##k(u8 *, ull, u8 *, ull, u8 *, ull, u8 *, ull *, u8 *, ull *)                      \
        __asm__("kex_generate_pass" #k "_msg_" #side) KEX_WEAK;
KEX_NEXT(2, b)
KEX_NEXT(3, a)
KEX_NEXT(4, b)
KEX_NEXT(5, a)
KEX_NEXT(6, b)
KEX_NEXT(7, a)
KEX_NEXT(8, b)
#undef KEX_NEXT

static kex_next_fn kex_next_fns[KEX_MAX_PASSES + 1] = {
    NULL, NULL, ngcc_kex_pass2, ngcc_kex_pass3, ngcc_kex_pass4, ngcc_kex_pass5, ngcc_kex_pass6, ngcc_kex_pass7,
    ngcc_kex_pass8};

static const char *const kex_pass_names[KEX_MAX_PASSES + 1] = {
    "none",
    "kex_generate_pass1_msg_a",
    "kex_generate_pass2_msg_b",
    "kex_generate_pass3_msg_a",
    "kex_generate_pass4_msg_b",
    "kex_generate_pass5_msg_a",
    "kex_generate_pass6_msg_b",
    "kex_generate_pass7_msg_a",
    "kex_generate_pass8_msg_b"};

/* Whether the library defines pass k (1..KEX_MAX_PASSES). */
static inline int kex_pass_defined(int k) { return k == 1 ? ngcc_kex_pass1 != NULL : kex_next_fns[k] != NULL; }

/* The sender of pass k: the initiator for odd k. */
static inline kex_side *kex_sender(int k, kex_side *a, kex_side *b) { return k % 2 ? a : b; }

/* Pass k by its sender, with `in` the other side's previous message (ignored for k = 1).
 * The caller checked kex_pass_defined(k). */
static inline int kex_pass(int k, kex_side *a, kex_side *b, u8 *in, ull in_len, u8 *out, ull *out_len) {
    kex_side *s = kex_sender(k, a, b), *peer = s == a ? b : a;
    if (k == 1) {
        return ngcc_kex_pass1(s->sk, s->sk_len, peer->pk, peer->pk_len, s->st, &s->st_len, out, out_len);
    }
    return kex_next_fns[k](s->sk, s->sk_len, peer->pk, peer->pk_len, in, in_len, s->st, &s->st_len, out, out_len);
}

/* The two derivations: each side with its own keys and state and the other side's last
 * message. */
static inline int kex_derive_a(kex_side *a, kex_side *b, u8 *mb, ull mb_len, u8 *ss, ull *ss_len) {
    return kex_derive_ss_a(a->sk, a->sk_len, b->pk, b->pk_len, mb, mb_len, a->st, a->st_len, ss, ss_len);
}

static inline int kex_derive_b(kex_side *a, kex_side *b, u8 *ma, ull ma_len, u8 *ss, ull *ss_len) {
    return kex_derive_ss_b(b->sk, b->sk_len, a->pk, a->pk_len, ma, ma_len, b->st, b->st_len, ss, ss_len);
}

#endif
