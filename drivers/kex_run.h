/*
 * ngcc-repro one key exchange on plain buffers, for the timing driver (kex_bench.c) and
 * the length contract (kex_contract.c); the KAT driver has its own guarded replay. Needs
 * bench_core.h (must) and kex_passes.h first. Message lengths are preset before each pass
 * to the value the caller chooses: the reference method presets the buffer capacity, the
 * official KAT driver leaves the previous value (0 at first).
 */
#ifndef NGCC_KEX_RUN_H
#define NGCC_KEX_RUN_H

#define KEX_MAX_CLAIM (256ull << 20)

/* What a call returned is public: the constant-time driver (kex_ct.c) marks it defined
 * before this file looks at it; nothing elsewhere. */
#ifndef KEX_RUN_PUBLIC
#define KEX_RUN_PUBLIC(p, n) ((void)(p), (void)(n))
#endif

/* What the library declares. */
typedef struct {
    ull passes, pk, sk, sta, stb, ss, total;
} kex_sizes;

typedef struct {
    kex_side a, b;
    u8 *m[KEX_MAX_PASSES + 1], *ssa, *ssb;
    ull m_len[KEX_MAX_PASSES + 1], ssa_len, ssb_len;
} kex_run;

static inline ull kex_claim(ull v, const char *name, ull limit) {
    if (v > limit) {
        fprintf(stderr, "CRYPTOFAIL: call=%s returned=%llu limit=%llu\n", name, v, limit);
        exit(2);
    }
    return v;
}

/* The sizes, and every pass function the passes need. */
static inline kex_sizes kex_ask(void) {
    kex_sizes s;
    int k;
    s.passes = kex_claim(kex_get_passes_num(), "kex_get_passes_num", KEX_MAX_PASSES);
    s.pk = kex_claim(kex_get_pk_len_bytes(), "kex_get_pk_len_bytes", KEX_MAX_CLAIM);
    s.sk = kex_claim(kex_get_sk_len_bytes(), "kex_get_sk_len_bytes", KEX_MAX_CLAIM);
    s.sta = kex_claim(kex_get_sta_len_bytes(), "kex_get_sta_len_bytes", KEX_MAX_CLAIM);
    s.stb = kex_claim(kex_get_stb_len_bytes(), "kex_get_stb_len_bytes", KEX_MAX_CLAIM);
    s.ss = kex_claim(kex_get_ss_len_bytes(), "kex_get_ss_len_bytes", KEX_MAX_CLAIM);
    s.total = kex_claim(kex_get_total_msg_len_bytes(), "kex_get_total_msg_len_bytes", KEX_MAX_CLAIM);
#ifdef NGCC_KEX_PASSES
    /* The operations the host asks for follow the manifest's passes. */
    if (s.passes != NGCC_KEX_PASSES) {
        fprintf(stderr, "CRYPTOFAIL: call=kex_get_passes_num returned=%llu manifest=%d\n", s.passes, NGCC_KEX_PASSES);
        exit(2);
    }
#endif
    for (k = 1; k <= (int)s.passes; k++) {
        if (!kex_pass_defined(k)) {
            fprintf(stderr, "CRYPTOFAIL: call=%s missing\n", kex_pass_names[k]);
            exit(2);
        }
    }
    return s;
}

/* Spare bytes after each message buffer: a pass that writes more than the declared total
 * lands in them, not in the allocator's data, so the length check below can report it. */
#define KEX_SPARE 4096

/* Bytes of one run's buffers (one spare byte after the others, so that none is empty). */
static inline ull kex_run_bytes(const kex_sizes *s) {
    return 2 * (s->pk + s->sk + s->ss) + s->sta + s->stb + s->passes * (s->total + KEX_SPARE) + 8;
}

static inline void kex_run_bind(kex_run *r, const kex_sizes *s, u8 *p) {
    int k;
    r->a.pk = p, p += s->pk + 1;
    r->b.pk = p, p += s->pk + 1;
    r->a.sk = p, p += s->sk + 1;
    r->b.sk = p, p += s->sk + 1;
    r->a.st = p, p += s->sta + 1;
    r->b.st = p, p += s->stb + 1;
    r->ssa = p, p += s->ss + 1;
    r->ssb = p, p += s->ss + 1;
    for (k = 1; k <= (int)s->passes; k++) {
        r->m[k] = p, p += s->total + KEX_SPARE;
        r->m_len[k] = 0;
    }
}

/* A returned length above its buffer: the buffers hold no more, so nothing after it is
 * meaningful (the KAT driver's guarded buffers say where the bytes went). */
static inline void kex_fits(ull got, ull max, const char *call, const char *buffer) {
    if (got > max) {
        fprintf(stderr, "OVERFLOW: call=%s buffer=%s claimed=%llu returned=%llu\n", call, buffer, max, got);
        exit(3);
    }
}

static inline void kex_side_fits(const kex_side *x, const kex_sizes *s, ull st_max, const char *call) {
    kex_fits(x->pk_len, s->pk, call, "pk");
    kex_fits(x->sk_len, s->sk, call, "sk");
    kex_fits(x->st_len, st_max, call, "state");
}

/* The return value and the lengths of an init call. */
static inline void kex_side_returned(kex_side *x, int *ret) {
    KEX_RUN_PUBLIC(ret, sizeof *ret);
    KEX_RUN_PUBLIC(&x->pk_len, sizeof x->pk_len);
    KEX_RUN_PUBLIC(&x->sk_len, sizeof x->sk_len);
    KEX_RUN_PUBLIC(&x->st_len, sizeof x->st_len);
}

static inline void kex_run_init(kex_run *r, const kex_sizes *s) {
    r->a.pk_len = r->b.pk_len = s->pk;
    r->a.sk_len = r->b.sk_len = s->sk;
    r->a.st_len = s->sta;
    r->b.st_len = s->stb;
    int ret = kex_init_a(r->a.pk, &r->a.pk_len, r->a.sk, &r->a.sk_len, r->a.st, &r->a.st_len);
    kex_side_returned(&r->a, &ret);
    must(ret, "kex_init_a");
    kex_side_fits(&r->a, s, s->sta, "kex_init_a");
    KEX_RUN_PUBLIC(r->a.pk, r->a.pk_len);
    ret = kex_init_b(r->b.pk, &r->b.pk_len, r->b.sk, &r->b.sk_len, r->b.st, &r->b.st_len);
    kex_side_returned(&r->b, &ret);
    must(ret, "kex_init_b");
    kex_side_fits(&r->b, s, s->stb, "kex_init_b");
    KEX_RUN_PUBLIC(r->b.pk, r->b.pk_len);
}

/* Pass k with its message length preset to `preset`: what it returned, a value below 0
 * when it refused (its lengths then unchecked). */
static inline int kex_run_try_pass(kex_run *r, const kex_sizes *s, int k, ull preset) {
    kex_side *sender = kex_sender(k, &r->a, &r->b);
    int ret;
    r->m_len[k] = preset;
    ret = kex_pass(k, &r->a, &r->b, k > 1 ? r->m[k - 1] : NULL, k > 1 ? r->m_len[k - 1] : 0, r->m[k], &r->m_len[k]);
    KEX_RUN_PUBLIC(&ret, sizeof ret);
    KEX_RUN_PUBLIC(&r->m_len[k], sizeof r->m_len[k]);
    KEX_RUN_PUBLIC(&sender->st_len, sizeof sender->st_len);
    if (ret < 0) {
        return ret;
    }
    kex_fits(r->m_len[k], s->total, kex_pass_names[k], "message");
    kex_fits(sender->st_len, sender == &r->a ? s->sta : s->stb, kex_pass_names[k], "state");
    KEX_RUN_PUBLIC(r->m[k], r->m_len[k]);
    return ret;
}

/* Pass k as above; a return below 0 is a failure. */
static inline int kex_run_pass(kex_run *r, const kex_sizes *s, int k, ull preset) {
    int ret = kex_run_try_pass(r, s, k, preset);
    if (ret < 0) {
        must(ret, kex_pass_names[k]);
    }
    return ret;
}

/* The last message the initiator (side 1) or the responder (side 0) sent. */
static inline u8 *kex_run_last(kex_run *r, const kex_sizes *s, int initiator, ull *len) {
    int k;
    for (k = (int)s->passes; k >= 1; k--) {
        if ((k % 2 == 1) == initiator) {
            *len = r->m_len[k];
            return r->m[k];
        }
    }
    *len = 0;
    return NULL;
}

/* derive_a with B's last message: what it returned (0 when it derived). */
static inline int kex_run_try_derive_a(kex_run *r, const kex_sizes *s) {
    ull len;
    u8 *mb = kex_run_last(r, s, 0, &len);
    r->ssa_len = s->ss;
    int ret = kex_derive_a(&r->a, &r->b, mb, len, r->ssa, &r->ssa_len);
    KEX_RUN_PUBLIC(&ret, sizeof ret);
    KEX_RUN_PUBLIC(&r->ssa_len, sizeof r->ssa_len);
    if (ret == 0) {
        kex_fits(r->ssa_len, s->ss, "kex_derive_ss_a", "ssa");
    }
    return ret;
}

static inline int kex_run_try_derive_b(kex_run *r, const kex_sizes *s) {
    ull len;
    u8 *ma = kex_run_last(r, s, 1, &len);
    r->ssb_len = s->ss;
    int ret = kex_derive_b(&r->a, &r->b, ma, len, r->ssb, &r->ssb_len);
    KEX_RUN_PUBLIC(&ret, sizeof ret);
    KEX_RUN_PUBLIC(&r->ssb_len, sizeof r->ssb_len);
    if (ret == 0) {
        kex_fits(r->ssb_len, s->ss, "kex_derive_ss_b", "ssb");
    }
    return ret;
}

static inline void kex_run_derive_a(kex_run *r, const kex_sizes *s) { must(kex_run_try_derive_a(r, s), "kex_derive_ss_a"); }

static inline void kex_run_derive_b(kex_run *r, const kex_sizes *s) { must(kex_run_try_derive_b(r, s), "kex_derive_ss_b"); }

/* init and passes 1..upto, each message length preset to `preset`. */
static inline void kex_run_upto(kex_run *r, const kex_sizes *s, int upto, ull preset) {
    int k;
    kex_run_init(r, s);
    for (k = 1; k <= upto; k++) {
        kex_run_pass(r, s, k, preset);
    }
}

/* The whole protocol. */
static inline void kex_run_all(kex_run *r, const kex_sizes *s, ull preset) {
    kex_run_upto(r, s, (int)s->passes, preset);
    kex_run_derive_a(r, s);
    kex_run_derive_b(r, s);
}

static inline int kex_run_agrees(const kex_run *r) {
    return r->ssa_len == r->ssb_len && memcmp(r->ssa, r->ssb, (size_t)r->ssa_len) == 0;
}

#endif
