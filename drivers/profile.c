/*
 * ngcc-repro symmetric-primitive profile: link-time wrappers (`-Wl,--wrap=<symbol>`)
 * around the symbols a manifest's [profile] groups name. Linked into the profiling
 * variant of the instance library; the timing driver (built with -DNGCC_PROFILE)
 * hands it its counter, resets it before the timed loop and prints what it counted.
 *
 * The symbol list comes from the manifest as -DNGCC_PROFILE_SYMBOLS="X(0,name) X(1,name)".
 * A wrapper passes six integer registers through and returns one: right for every
 * function whose arguments are at most six integers or pointers (x86-64 SysV, AAPCS64),
 * which is what the ICCS and PQClean hash and randomness entry points take.
 * Nested wrapped calls (a wrapped function calling another) count once, in the outer.
 * A manifest may list symbols a library does not have: their wrappers are never called.
 */
#include <stdint.h>

#ifndef NGCC_PROFILE_SYMBOLS
#error "NGCC_PROFILE_SYMBOLS lists the wrapped symbols"
#endif

typedef uint64_t (*ngcc_counter_fn)(void);
typedef uint64_t word;

static ngcc_counter_fn counter;
static unsigned depth;
static uint64_t started;

#define X(i, s) +1
enum { NGCC_PROFILE_N = 0 NGCC_PROFILE_SYMBOLS };
#undef X

static uint64_t calls[NGCC_PROFILE_N];
static uint64_t ticks[NGCC_PROFILE_N];

#define X(i, s) #s,
static const char *const names[NGCC_PROFILE_N] = {NGCC_PROFILE_SYMBOLS};
#undef X

static void enter(int i) {
    if (depth++ == 0) {
        calls[i]++;
        started = counter != 0 ? counter() : 0;
    }
}

static void leave(int i) {
    if (--depth == 0 && counter != 0) {
        ticks[i] += counter() - started;
    }
}

#define X(i, s)                                                                                                  \
    /* weak: a listed symbol the library lacks leaves no undefined reference at load */                        \
    extern word __real_##s(word, word, word, word, word, word) __attribute__((weak));                            \
    word __wrap_##s(word a, word b, word c, word d, word e, word f);                                             \
    word __wrap_##s(word a, word b, word c, word d, word e, word f) {                                            \
        word r;                                                                                                  \
        enter(i);                                                                                                \
        r = __real_##s(a, b, c, d, e, f);                                                                        \
        leave(i);                                                                                                \
        return r;                                                                                                \
    }
NGCC_PROFILE_SYMBOLS
#undef X

/* The driver's interface (declared in kem_bench.c). */
void ngcc_profile_begin(ngcc_counter_fn read) {
    int i;
    counter = read;
    for (i = 0; i < NGCC_PROFILE_N; i++) {
        calls[i] = 0;
        ticks[i] = 0;
    }
}

int ngcc_profile_count(void) { return NGCC_PROFILE_N; }
const char *ngcc_profile_name(int i) { return names[i]; }
uint64_t ngcc_profile_calls(int i) { return calls[i]; }
uint64_t ngcc_profile_ticks(int i) { return ticks[i]; }
