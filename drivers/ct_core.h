/* What the constant-time drivers (kem_ct.c, sig_ct.c, kex_ct.c) share: secrets marked
 * undefined for valgrind's memcheck (`ct_secret`), public outputs marked defined again
 * when an operation returns (`ct_public`), the DRNG's output poisoned while `ct_random(1)`
 * (the library's wrapper, ct_random.c, or the NIST adapter's randombytes), the seeding of
 * each run, and the one line of facts (a client message in memcheck's XML):
 *
 *   ngcc-ct op=<op> runs=<n> secret_bytes=<b> random_bytes=<b> declassified_bytes=<b>
 *
 * `<program> <op> <runs>` runs under valgrind (outside it the requests do nothing); built
 * with -DNGCC_CT and memcheck.h in the analysis image.
 *
 * `--time <op>` is the timing mode, built with -DNGCC_CT_TIMING into the build's own
 * program (the `ct` mode of drivers/candidate.c, beside the KAT and the timing modes) and
 * run by the trial runner like every other run of it: for each class byte on stdin ('0':
 * the fixed seed, '1': a random one) it seeds the DRNG, runs the setup in the clear and
 * wraps the operation itself in `ct_open`/`ct_close` (its one timed window), answering on
 * the private output channel. Exit 2: a call failed; 3: the runner's protocol broke;
 * 64: bad arguments. */
#ifndef NGCC_CT_CORE_H
#define NGCC_CT_CORE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rawsys.h"

#ifdef NGCC_CT_TIMING
/* No valgrind in the timing mode: nothing is poisoned, and the requests are no-ops. */
#include "channel.h"
#define VALGRIND_MAKE_MEM_UNDEFINED(p, n) ((void)(p), (void)(n))
#define VALGRIND_MAKE_MEM_DEFINED(p, n) ((void)(p), (void)(n))
#define VALGRIND_PRINTF(...) 0
static int ngcc_ct_poison_random;
static unsigned long long ngcc_ct_random_bytes;
/* Classes come on stdin after the mode's line; answers go on the private channel. */
#define CT_IN 0
#define CT_OUT channel_fd
#else
#include <valgrind/memcheck.h>
extern int ngcc_ct_poison_random;
extern unsigned long long ngcc_ct_random_bytes;
#define CT_IN 3
#define CT_OUT 4
#endif

static unsigned long long ct_secret_bytes;

static void ct_secret(const void *p, unsigned long long n) {
    VALGRIND_MAKE_MEM_UNDEFINED(p, n);
    ct_secret_bytes += n;
}

static void ct_public(const void *p, unsigned long long n) { VALGRIND_MAKE_MEM_DEFINED(p, n); }

static unsigned long long ct_declassified_bytes;

/* A secret key, less the bytes the manifest says are public (`ct_public_sk`, passed as
 * -DNGCC_CT_PUBLIC_SK={from,to},...): a copy of the public key inside it, say. */
static void ct_secret_key(const unsigned char *sk, unsigned long long len) {
    ct_secret(sk, len);
#ifdef NGCC_CT_PUBLIC_SK
    {
        static const unsigned long long ranges[][2] = {NGCC_CT_PUBLIC_SK};
        size_t i;
        for (i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
            if (ranges[i][1] > len) {
                fprintf(stderr, "ct_public_sk: %llu..%llu is beyond the %llu-byte secret key\n", ranges[i][0],
                        ranges[i][1], len);
                exit(64);
            }
            ct_public(sk + ranges[i][0], ranges[i][1] - ranges[i][0]);
            ct_secret_bytes -= ranges[i][1] - ranges[i][0];
            ct_declassified_bytes += ranges[i][1] - ranges[i][0];
        }
    }
#endif
}

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

/* A zeroed buffer of n bytes (one more, so that none is empty). */
static unsigned char *ct_alloc(unsigned long long n) {
    unsigned char *p = calloc(1, (size_t)n + 1);
    if (p == NULL) {
        fprintf(stderr, "out of memory for %llu bytes\n", n);
        exit(2);
    }
    return p;
}

static void ct_report(const char *op, int runs) {
    VALGRIND_PRINTF("ngcc-ct op=%s runs=%d secret_bytes=%llu random_bytes=%llu declassified_bytes=%llu\n", op, runs,
                    ct_secret_bytes, ngcc_ct_random_bytes, ct_declassified_bytes);
}

static int ct_timing, ct_windows;

static void ct_broken(const char *why) {
    fprintf(stderr, "ct driver: the timer's protocol broke: %s\n", why);
    exit(3);
}

/* The window protocol by raw system calls (rawsys.h): an interposed write() or read()
 * could close the window early or late. */
static void ct_tell(char c) {
    long r;
    while ((r = sys_write(CT_OUT, &c, 1)) == -EINTR) {
    }
    if (r != 1) {
        ct_broken("cannot answer the runner");
    }
}

/* The timer's next byte; -1 at the end of its input. */
static int ct_hear(void) {
    unsigned char c;
    long r;
    while ((r = sys_read(CT_IN, &c, 1)) == -EINTR) {
    }
    return r == 1 ? c : -1;
}

/* The timed window around the operation itself, in timing mode. */
static void ct_open(int timed) {
    if (ct_timing && timed) {
        ct_windows++;
        ct_tell('r');
        if (ct_hear() != 'g') {
            ct_broken("no go");
        }
    }
}

static void ct_close(int timed) {
    if (ct_timing && timed) {
        ct_tell('d');
    }
}

/* Run r's seed in memcheck mode, and the fixed class's in timing mode. */
static void ct_seed_pattern(unsigned char *seed, int run) {
    int i;
    for (i = 0; i < 48; i++) {
        seed[i] = (unsigned char)(i + 17 * run);
    }
}

/* The `<program> <op> <runs>` and `<program> --time <op>` loops; one(op, run) runs the
 * setup and the operation once, on the seeded DRNG. */
static void ct_loop(int op, int runs, const char *name, void (*one)(int op, int run)) {
    static unsigned char pool[1024][48];
    unsigned char fixed[48], cur[48];
    long i;
    int c, ret, run;
    FILE *urandom;
    if (!ct_timing) {
        for (run = 0; run < runs; run++) {
            ct_seed_pattern(cur, run);
            ret = bench_seed(cur, sizeof cur);
            ct_must(&ret, "seeding the DRNG");
            one(op, run);
        }
        ct_report(name, runs);
        return;
    }
    /* Both classes copy their seed from memory, so that their setup differs only in values. */
    urandom = fopen("/dev/urandom", "rb");
    if (urandom == NULL || fread(pool, sizeof pool, 1, urandom) != 1) {
        fprintf(stderr, "cannot read /dev/urandom\n");
        exit(2);
    }
    fclose(urandom);
    ct_seed_pattern(fixed, 0);
    for (i = 0; (c = ct_hear()) >= 0; i++) {
        if (c != '0' && c != '1') {
            ct_broken("a class byte other than 0 or 1");
        }
        memcpy(cur, c == '0' ? fixed : pool[i % 1024], sizeof cur);
        ret = bench_seed(cur, sizeof cur);
        ct_must(&ret, "seeding the DRNG");
        ct_windows = 0;
        one(op, 0);
        if (ct_windows != 1) {
            ct_broken("the operation opened no timed window, or more than one");
        }
    }
}

/* The index of `name` in ops, or -1. */
static int ct_op(const char *name, const char *const *ops, int n_ops) {
    int i;
    for (i = 0; i < n_ops; i++) {
        if (strcmp(name, ops[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* The timing build takes `--time <op>`, the memcheck build `<op> <runs 1..1000>`: the
 * index of op in ops, and runs (0 in timing mode). */
static int ct_args(int argc, char **argv, const char *const *ops, int n_ops, int *op, int *runs) {
#ifdef NGCC_CT_TIMING
    if (argc == 3 && strcmp(argv[1], "--time") == 0 && (*op = ct_op(argv[2], ops, n_ops)) >= 0) {
        ct_timing = 1;
        *runs = 0;
        return 0;
    }
    fprintf(stderr, "usage: %s --time <op>\n", argv[0]);
#else
    char *end;
    long r = argc == 3 ? strtol(argv[2], &end, 10) : 0;
    if (argc == 3 && (*op = ct_op(argv[1], ops, n_ops)) >= 0 && *end == '\0' && r >= 1 && r <= 1000) {
        *runs = (int)r;
        return 0;
    }
    fprintf(stderr, "usage: %s <op> <runs 1..1000>\n", argv[0]);
#endif
    return 64;
}

#endif
