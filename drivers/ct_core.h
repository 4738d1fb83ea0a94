/* What the constant-time drivers (kem_ct.c, sig_ct.c, kex_ct.c) share: secrets marked
 * undefined for valgrind's memcheck (`ct_secret`), public outputs marked defined again
 * when an operation returns (`ct_public`), the DRNG's output poisoned while `ct_random(1)`
 * (the library's wrapper, ct_random.c, or the NIST adapter's randombytes), the seeding of
 * each run, and the one line of facts (a client message in memcheck's XML):
 *
 *   ngcc-ct op=<op> runs=<n> secret_bytes=<b> random_bytes=<b>
 *
 * Built with -DNGCC_CT and memcheck.h from the analysis image; run only under valgrind
 * (outside it the requests do nothing). Exit 2: a call failed; 64: bad arguments. */
#ifndef NGCC_CT_CORE_H
#define NGCC_CT_CORE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/memcheck.h>

extern int ngcc_ct_poison_random;
extern unsigned long long ngcc_ct_random_bytes;

static unsigned long long ct_secret_bytes;

static void ct_secret(const void *p, unsigned long long n) {
    VALGRIND_MAKE_MEM_UNDEFINED(p, n);
    ct_secret_bytes += n;
}

static void ct_public(const void *p, unsigned long long n) { VALGRIND_MAKE_MEM_DEFINED(p, n); }

static void ct_random(int on) { ngcc_ct_poison_random = on; }

/* A return value or length is public (the API says whether a call failed); declassified
 * before the driver looks at it, so that its own test is never a finding. */
static void ct_must(int *ret, const char *what) {
    ct_public(ret, sizeof *ret);
    if (*ret != 0) {
        fprintf(stderr, "CRYPTOFAIL: %s returned %d\n", what, *ret);
        exit(2);
    }
}

/* Run r's DRNG seed: 48 bytes (i + 17 r) mod 256, each run its own inputs. */
static void ct_seed(int run) {
    unsigned char seed[48];
    int i, ret;
    for (i = 0; i < (int)sizeof seed; i++) {
        seed[i] = (unsigned char)(i + 17 * run);
    }
    ret = bench_seed(seed, sizeof seed);
    ct_must(&ret, "seeding the DRNG");
}

/* A zeroed buffer of n bytes (one more, so that none is empty). */
static unsigned char *ct_alloc(unsigned long long n) {
    unsigned char *p = calloc(1, (size_t)n + 1);
    if (p == NULL) {
        fprintf(stderr, "out of memory for %llu bytes\n", n);
        exit(2);
    }
    return p;
}

/* `<program> <op> <runs>`: the index of op in ops, runs in 1..1000. */
static int ct_args(int argc, char **argv, const char *const *ops, int n_ops, int *op, int *runs) {
    char *end;
    long r;
    if (argc == 3) {
        for (*op = 0; *op < n_ops; (*op)++) {
            if (strcmp(argv[1], ops[*op]) == 0) {
                r = strtol(argv[2], &end, 10);
                if (*end == '\0' && r >= 1 && r <= 1000) {
                    *runs = (int)r;
                    return 0;
                }
            }
        }
    }
    fprintf(stderr, "usage: %s <op> <runs 1..1000>\n", argv[0]);
    return 64;
}

static void ct_report(const char *op, int runs) {
    VALGRIND_PRINTF("ngcc-ct op=%s runs=%d secret_bytes=%llu random_bytes=%llu\n", op, runs, ct_secret_bytes,
                    ngcc_ct_random_bytes);
}

#endif
