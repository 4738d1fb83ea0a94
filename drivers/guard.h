/*
 * ngcc-repro guarded buffers for the KAT drivers (iccs_sig_kat.c, iccs_hash_kat.c,
 * iccs_kex_kat.c): a buffer the library writes has a patterned band of at least
 * max(len, 4096) bytes on each side, checked after every call, and a PROT_NONE page
 * beyond each band; an input the library only reads ends at a PROT_NONE page and is
 * read-only during the call.
 * A fault on a guard page or a read-only input is reported from the signal handler with
 * raw writes only. Diagnostics: one stderr line, `OVERFLOW: record=<k> call=<f>
 * buffer=<b> claimed=<n> overrun=<m>|underrun=<m>|returned=<m>[ guard-page]`, or
 * `CRYPTOFAIL: record=<k> call=<f> ...`; exit 3 and 2.
 */
#ifndef NGCC_GUARD_H
#define NGCC_GUARD_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "digits.h"

#define MIN_BAND 4096u
#define MAX_BUFFERS 20

enum { EXIT_CRYPTOFAIL = 2, EXIT_OVERFLOW = 3, EXIT_NOMEM = 4 };

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

/* --- claimed sizes --- */

/* The largest size a getter may claim. */
#define MAX_CLAIM (256ull << 20)

typedef unsigned long long (*getter)(void);

/* Ask twice; a getter whose answer changes, or a claim above `limit`, is CRYPTOFAIL. */
__attribute__((unused)) static unsigned long long claim(getter get, const char *name, unsigned long long limit) {
    unsigned long long a = get(), b = get();
    if (a != b) {
        fprintf(stderr, "CRYPTOFAIL: record=%d call=%s returned=%llu then=%llu\n", record, name, a, b);
        exit(EXIT_CRYPTOFAIL);
    }
    if (a > limit) {
        fprintf(stderr, "CRYPTOFAIL: record=%d call=%s returned=%llu limit=%llu\n", record, name, a, limit);
        exit(EXIT_CRYPTOFAIL);
    }
    return a;
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

static void put_err_record(void) {
    put_err("record=");
    if (record < 0) {
        put_err("-1");
    } else {
        put_err_u64((unsigned long long)record);
    }
}

/* An input the library only reads: [data ending at a page boundary][PROT_NONE page],
 * read-only while the library has it. A fault on the page after it is an access past
 * its end; a fault inside it is a write into an input. */
typedef struct {
    const char *name;
    unsigned char *map, *data;
    size_t map_len;
    unsigned long long len;
} input_buf;

static input_buf *live_message;

static void on_message_fault(const input_buf *m, const unsigned char *a) {
    const unsigned char *end = m->map + m->map_len - page;
    if (a >= end && a < end + page) {
        put_err("OVERFLOW: ");
        put_err_record();
        put_err(" call=");
        put_err(current_call);
        put_err(" buffer=");
        put_err(m->name);
        put_err(" claimed=");
        put_err_u64(m->len);
        put_err(" overrun=");
        put_err_u64((unsigned long long)(a - m->data) + 1);
        put_err(" guard-page (an access past the end of an input)\n");
        _exit(EXIT_OVERFLOW);
    }
    if (a >= m->map && a < end) {
        put_err("CRYPTOFAIL: ");
        put_err_record();
        put_err(" call=");
        put_err(current_call);
        put_err(" modified=");
        put_err(m->name);
        put_err(" (it wrote into an input it may only read)\n");
        _exit(EXIT_CRYPTOFAIL);
    }
}

/* Async-signal-safe: raw writes only, then _exit. Any other fault returns with the
 * default action restored (SA_RESETHAND), so it kills the process as a crash. */
static void on_fault(int sig, siginfo_t *info, void *context) {
    const unsigned char *a = (const unsigned char *)info->si_addr;
    int i;
    (void)sig;
    (void)context;
    if (live_message != NULL) {
        on_message_fault(live_message, a);
    }
    for (i = 0; i < MAX_BUFFERS; i++) {
        const guarded *g = live[i];
        int before, after;
        if (g == NULL) {
            continue;
        }
        before = a >= g->map && a < g->map + page;
        after = a >= g->map + g->map_len - page && a < g->map + g->map_len;
        if (before || after) {
            put_err("OVERFLOW: ");
            put_err_record();
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

__attribute__((unused)) static void guarded_free(guarded *g) {
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

/* The `near` band bytes next to the data on each side: a cheap check for hot loops,
 * with the whole bands checked every so often. */
__attribute__((unused)) static void check_bands_near(const guarded *g, size_t near) {
    size_t i, front = near < g->front_len ? near : g->front_len, back = near < g->back_len ? near : g->back_len;
    for (i = g->front_len - front; i < g->front_len; i++) {
        if (g->data[-(ptrdiff_t)g->front_len + (ptrdiff_t)i] != pattern(i)) {
            overflow(g, "underrun", g->front_len - i);
        }
    }
    for (i = back; i > 0; i--) {
        if (g->data[g->len + i - 1] != pattern(g->front_len + i - 1)) {
            overflow(g, "overrun", g->len + i);
        }
    }
}

__attribute__((unused)) static void check_all_bands(void) {
    int i;
    for (i = 0; i < MAX_BUFFERS; i++) {
        if (live[i] != NULL) {
            check_bands(live[i]);
        }
    }
}

__attribute__((unused)) static void check_returned(const guarded *g, unsigned long long returned) {
    if (returned > g->len) {
        overflow(g, "returned", returned);
    }
}


/* --- inputs --- */

/* Map an input of `len` bytes that ends at a page boundary before a PROT_NONE page.
 * Exit 4 when the driver cannot map it (the harness reports the memory limit). */
__attribute__((unused)) static void input_alloc(input_buf *m, const char *name, unsigned long long len) {
    size_t data_pages = round_up((size_t)len);
    m->name = name;
    m->len = len;
    m->map_len = data_pages + page;
    m->map = mmap(NULL, m->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m->map == MAP_FAILED) {
        fprintf(stderr, "NOMEM: record=%d buffer=%s claimed=%llu (the driver could not map its input)\n", record, name,
                len);
        exit(EXIT_NOMEM);
    }
    if (mprotect(m->map + data_pages, page, PROT_NONE) != 0) {
        perror("mprotect");
        exit(EXIT_NOMEM);
    }
    m->data = m->map + (data_pages - (size_t)len);
    live_message = m;
}

/* Use the last `len` bytes before the guard page (at most the mapped capacity). */
__attribute__((unused)) static void input_set_len(input_buf *m, unsigned long long len) {
    size_t data_pages = m->map_len - page;
    m->len = len;
    m->data = m->map + (data_pages - (size_t)len);
}

/* Read-only while the library has it; writable again for the driver. */
__attribute__((unused)) static void input_lend(input_buf *m, int lent) {
    size_t data_pages = m->map_len - page;
    if (data_pages > 0 && mprotect(m->map, data_pages, lent ? PROT_READ : PROT_READ | PROT_WRITE) != 0) {
        perror("mprotect");
        exit(EXIT_NOMEM);
    }
}

/* Common start: the page size, the run's band salt, the fault handler. */
static void guard_setup(void) {
    long p = sysconf(_SC_PAGESIZE);
    struct timespec ts;
    page = p > 0 ? (size_t)p : 4096;
    clock_gettime(CLOCK_REALTIME, &ts);
    salt = (unsigned char)(ts.tv_nsec ^ (ts.tv_nsec >> 8) ^ getpid());
    if (salt == 0) {
        salt = 0xA5;
    }
    install_fault_handler();
}

#endif
