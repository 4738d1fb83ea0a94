/*
 * ngcc-repro timing core shared by the timing drivers (kem_bench.c, sig_bench.c) and the
 * raw result channel of sig_contract.c: the cycle counter (perf_event_open, else the
 * TSC / cntvct_el0), the clock, hand-written decimal parsing, resident memory from /proc,
 * the report buffer written by one raw system call, CPU pinning and the profile counts.
 * Functions are `static inline` so that a driver using part of them compiles without
 * unused-function warnings. Needs the API adapter (BENCH_API, bench_seed) included first.
 */
#ifndef NGCC_BENCH_CORE_H
#define NGCC_BENCH_CORE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* the harness also passes -D_GNU_SOURCE: force-included headers come first */
#endif
#include <errno.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The report goes through the private channel: a library printing to stdout cannot
 * put a report line of its own in front of the driver's. */
#include "channel.h"
#include "digits.h"
#include "rawsys.h"

static int perf_fd = -1;
static int perf_errno = 0; /* why hardware cycles are unavailable, for the record */

static inline const char *counter_open(void) {
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.type = PERF_TYPE_HARDWARE;
    attr.size = sizeof attr;
    attr.config = PERF_COUNT_HW_CPU_CYCLES;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    /* Raw, like every read of it: an interposed syscall() could hide the counter. */
    long fd = sys_perf_event_open(&attr, 0, -1, -1, 0);
    if (fd < 0) {
        perf_errno = (int)-fd;
    } else {
        uint64_t v = 0;
        long r;
        perf_fd = (int)fd;
        if ((r = sys_read(perf_fd, &v, sizeof v)) == (long)sizeof v) {
            return "perf-cycles";
        }
        perf_errno = r < 0 ? (int)-r : EIO;
        close(perf_fd);
        perf_fd = -1;
    }
#if defined(__x86_64__)
    return "tsc";
#else
    return "cntvct_el0";
#endif
}

/* The kernel's clock by a raw system call (rawsys.h), never libc's or the vDSO's. */
static inline uint64_t now_ns(void) { return sys_clock_ns(CLOCK_MONOTONIC_RAW); }

static inline uint64_t counter_read(void) {
    if (perf_fd >= 0) {
        uint64_t v = 0;
        if (sys_read(perf_fd, &v, sizeof v) != (long)sizeof v) {
            return 0;
        }
        return v;
    }
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc();
#else
    {
        uint64_t v;
        __asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
        return v;
    }
#endif
}

/* Nominal counter frequency where the architecture states one (AArch64), else 0. */
static inline uint64_t counter_nominal_hz(void) {
#if defined(__aarch64__)
    if (perf_fd < 0) {
        uint64_t f;
        __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
        return f;
    }
#endif
    return 0;
}

/* Decimal parsing by hand: under _GNU_SOURCE, glibc 2.38 redirects strto* and scanf
 * to new symbols, which would tie the driver to a newer libc than some hosts have. */
static inline long long parse_dec(const char **s) {
    long long v = 0;
    while (**s == ' ' || **s == '\t') {
        (*s)++;
    }
    if (**s < '0' || **s > '9') {
        return -1;
    }
    while (**s >= '0' && **s <= '9') {
        v = v * 10 + (**s - '0');
        (*s)++;
    }
    return v;
}

static inline long long arg_dec(const char *s) {
    long long v = parse_dec(&s);
    return *s == '\0' ? v : -1;
}

static inline long status_kib(const char *key) {
    char line[256];
    long v = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) {
        return -1;
    }
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, key, strlen(key)) == 0) {
            const char *p = line + strlen(key);
            v = (long)parse_dec(&p);
            break;
        }
    }
    fclose(f);
    return v;
}

static inline long resident_kib(void) {
    char line[256];
    const char *p = line;
    long long resident = -1;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL) {
        return -1;
    }
    if (fgets(line, sizeof line, f) != NULL && parse_dec(&p) >= 0) {
        resident = parse_dec(&p);
    }
    fclose(f);
    return resident < 0 ? -1 : (long)resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The report is composed here, right after the measurement, and written with one
 * system call: no stdio buffer that the library (a destructor, an interposed printf or
 * write) could rewrite, and _exit so that no destructor or atexit handler runs after. */
static char report[16384];
static size_t report_len;

static inline void put_str(const char *s) {
    while (*s != '\0' && report_len < sizeof report - 1) {
        report[report_len++] = *s++;
    }
}

static inline void put_u64(uint64_t v) {
    char d[21];
    dec_digits(v, d);
    put_str(d);
}

static inline void put_i64(long long v) {
    if (v < 0) {
        put_str("-");
        put_u64((uint64_t)0 - (uint64_t)v);
    } else {
        put_u64((uint64_t)v);
    }
}

static inline void put_field(const char *name, uint64_t v) {
    put_str(",\"");
    put_str(name);
    put_str("\":");
    put_u64(v);
}

/* Write the whole report to the channel (looping on partial writes) and empty it; the
 * process ends with exit 3 at once when the channel cannot be written. */
static inline void report_flush(void) {
    size_t done = 0;
    while (done < report_len) {
        long n = sys_write(channel_fd, report + done, report_len - done);
        if (n == -EINTR) {
            continue;
        }
        if (n <= 0) {
            sys_exit(3);
        }
        done += (size_t)n;
    }
    report_len = 0;
}

/* Write the whole report and end the process at once. */
static inline void report_and_exit(void) {
    report_flush();
    sys_exit(0);
}

#ifdef NGCC_PROFILE
/* The profiling variant of the library (drivers/profile.c) counts the wrapped calls. */
typedef uint64_t (*ngcc_counter_fn)(void);
void ngcc_profile_begin(ngcc_counter_fn read);
int ngcc_profile_count(void);
const char *ngcc_profile_name(int i);
uint64_t ngcc_profile_calls(int i);
uint64_t ngcc_profile_ticks(int i);

static inline void put_profile(void) {
    int i;
    put_str(",\"profile\":[");
    for (i = 0; i < ngcc_profile_count(); i++) {
        put_str(i ? ",{\"symbol\":\"" : "{\"symbol\":\"");
        put_str(ngcc_profile_name(i));
        put_str("\",\"calls\":");
        put_u64(ngcc_profile_calls(i));
        put_str(",\"ticks\":");
        put_u64(ngcc_profile_ticks(i));
        put_str("}");
    }
    put_str("]");
}
#endif

/* The end of a timing driver's report: the profile counts (NGCC_PROFILE builds), the
 * object's closing brace and the newline; then it is written and the process ends. */
static inline void finish_report_and_exit(void) {
#ifdef NGCC_PROFILE
    put_profile();
#endif
    put_str("}\n");
    report_and_exit();
}


/* A call that must succeed (setup, and every timed call but sign, which is retried). */
static inline void must(int ret, const char *what) {
    if (ret != 0) {
        fprintf(stderr, "CRYPTOFAIL: %s returned %d\n", what, ret);
        exit(2);
    }
}

/* What one timing run measured, for the family-neutral head of the report. */
typedef struct {
    const char *api, *op, *counter;
    unsigned long long iterations, warmups;
    int cpu;
    uint64_t t_start, t0, t1, c0, c1;
    /* Untimed work inside the window (kex_bench.c's later rounds of fresh inputs). */
    uint64_t excluded_ns, excluded_ticks;
    long baseline_rss_kib;
    struct rusage ru;
    /* A stack run (the word `stack` after the others): see stack_paint. */
    int stack, stack_exceeded;
    /* A calls run (the word `calls`): see call_begin. */
    int calls;
    uintptr_t stack_sp;
    uint64_t stack_painted, stack_used;
} bench_measurement;

/* ---- The stack high-water mark (a stack run: `<op> 1 0 [cpu] stack`), pqm4's method ----
 * Right before the timed window, stack_paint fills `stack_painted` bytes of stack below
 * the driver's frame with a pattern (its own frame, by alloca, volatile writes), and
 * returns: the operation's frames then lie over the painted bytes. Right after the
 * window, stack_scan looks from the deepest end for the first word that no longer holds
 * the pattern. `stack_used` is the distance from the driver's stack pointer at the call
 * to the start of that word: every frame of the call (the driver's call wrapper, some
 * tens of bytes, included; a leaf's red zone too). No painted word written: the gap
 * between the pointer and the painted region (an upper bound). The deepest painted word
 * written: `exceeded`, and the call used at least `stack_used` bytes. */
#define STACK_PATTERN 0x4e4743432d535441ULL
#define STACK_PAINT_MAX ((uint64_t)8 << 20)
#define STACK_RESERVE ((uint64_t)1 << 20)

static uintptr_t stack_low;

static inline __attribute__((always_inline)) uintptr_t stack_pointer(void) {
    uintptr_t sp;
#if defined(__x86_64__)
    __asm__ __volatile__("mov %%rsp, %0" : "=r"(sp));
#else
    __asm__ __volatile__("mov %0, sp" : "=r"(sp));
#endif
    return sp;
}

/* 8 MiB, or the stack limit less 1 MiB (what lies above the driver's frame) when the
 * limit is lower; read by a raw system call. */
static inline uint64_t stack_budget(void) {
    uint64_t lim[2] = {0, 0}, b;
    if (raw_syscall6(SYS_prlimit64, 0, RLIMIT_STACK, 0, (long)lim, 0, 0) != 0) {
        lim[0] = STACK_PAINT_MAX;
    }
    b = lim[0] > 2 * STACK_RESERVE ? lim[0] - STACK_RESERVE : lim[0] / 2;
    b = b < STACK_PAINT_MAX ? b : STACK_PAINT_MAX;
    return b & ~(uint64_t)4095;
}

static inline __attribute__((noinline)) void stack_paint(uint64_t bytes) {
    volatile uint64_t *region = (volatile uint64_t *)__builtin_alloca((size_t)bytes);
    uint64_t i = bytes / 8;
    /* From the top down, so that the stack grows one page after another. */
    while (i > 0) {
        region[--i] = STACK_PATTERN;
    }
    stack_low = (uintptr_t)region;
}

/* The start of the deepest word that no longer holds the pattern; 0 for none. */
static inline __attribute__((noinline)) uintptr_t stack_scan(uintptr_t low, uint64_t bytes) {
    const volatile uint64_t *p = (const volatile uint64_t *)low;
    uint64_t i;
    for (i = 0; i < bytes / 8; i++) {
        if (p[i] != STACK_PATTERN) {
            return low + 8 * i;
        }
    }
    return 0;
}

/* ---- Per-call samples (a calls run: `<op> <n> <warmups> [cpu] calls`, n <= CALLS_MAX) ----
 * Each timed call is bracketed by counter reads (call_begin/call_end in the driver's
 * loop; in other runs they read nothing). Before the window, as many reads around an
 * empty call through a volatile pointer: the counter's own overhead, which the host
 * subtracts. The host derives the quantiles; the samples are sent as they are. */
#define CALLS_MAX 1001
static uint64_t call_ticks[CALLS_MAX], call_overhead[CALLS_MAX];
static void bench_empty(void) {}
static void (*volatile bench_empty_fn)(void) = bench_empty;

static inline __attribute__((always_inline)) uint64_t call_begin(const bench_measurement *m) {
    return m->calls ? counter_read() : 0;
}

static inline __attribute__((always_inline)) void call_end(const bench_measurement *m, uint64_t c0,
                                                           unsigned long long i) {
    if (m->calls && i < CALLS_MAX) {
        call_ticks[i] = counter_read() - c0;
    }
}

static inline void calls_overhead(const bench_measurement *m) {
    unsigned long long i;
    for (i = 0; i < m->iterations && i < CALLS_MAX; i++) {
        uint64_t c0 = counter_read();
        bench_empty_fn();
        call_overhead[i] = counter_read() - c0;
    }
}

static inline void put_samples(const char *name, const uint64_t *v, unsigned long long n) {
    unsigned long long i;
    put_str(",\"");
    put_str(name);
    put_str("\":[");
    for (i = 0; i < n; i++) {
        if (report_len > sizeof report - 64) {
            report_flush();
        }
        if (i) {
            put_str(",");
        }
        put_u64(v[i]);
    }
    put_str("]");
}

/* The command line of a timing driver: `<op> <iterations> <warmups> [cpu]`, where <op>
 * is one of `ops` (`op_list` is how the usage line spells them). Pins the process to
 * [cpu] when given, and records the adapter's api, op, iterations, warmups and cpu in
 * `m` as well. Returns 0, or 64 after saying why on stderr.
 * `start` alone exits 0 at once, by a raw exit, having called nothing of the library:
 * what the host reads of such a run is what every trial spends outside its accounted
 * time (exec, loading, the library's constructors, the exit). */
static inline int bench_args(int argc, char **argv, const char *const *ops, int n_ops, const char *op_list,
                             int *op, unsigned long long *iterations, unsigned long long *warmups,
                             bench_measurement *m) {
    int i;
    if (argc == 2) {
        const char *a = argv[1], *b = "start";
        while (*a && *a == *b) {
            a++;
            b++;
        }
        if (*a == 0 && *b == 0) {
            sys_exit(0);
        }
    }
    *op = -1;
    m->cpu = -1;
    m->excluded_ns = 0;
    m->excluded_ticks = 0;
    m->stack = 0;
    m->calls = 0;
    if (argc > 4 && strcmp(argv[argc - 1], "stack") == 0) {
        m->stack = 1;
        argc--;
    } else if (argc > 4 && strcmp(argv[argc - 1], "calls") == 0) {
        m->calls = 1;
        argc--;
    }
    if (argc < 4) {
        fprintf(stderr, "usage: %s <%s> <iterations> <warmups> [cpu] [stack|calls]\n", argv[0], op_list);
        return 64;
    }
    for (i = 0; i < n_ops; i++) {
        if (strcmp(argv[1], ops[i]) == 0) {
            *op = i;
        }
    }
    if (*op < 0 || arg_dec(argv[2]) <= 0 || arg_dec(argv[3]) < 0 || (argc > 4 && arg_dec(argv[4]) < 0)) {
        fprintf(stderr, "bad operation, iteration count, warm-up count or cpu\n");
        return 64;
    }
    *iterations = (unsigned long long)arg_dec(argv[2]);
    if (m->calls && *iterations > CALLS_MAX) {
        fprintf(stderr, "a calls run takes at most %d calls\n", CALLS_MAX);
        return 64;
    }
    *warmups = (unsigned long long)arg_dec(argv[3]);
    m->api = BENCH_API;
    m->op = ops[*op];
    m->iterations = *iterations;
    m->warmups = *warmups;
    if (argc > 4) {
        cpu_set_t set;
        m->cpu = (int)arg_dec(argv[4]);
        CPU_ZERO(&set);
        CPU_SET(m->cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            perror("sched_setaffinity");
            return 64;
        }
    }
    return 0;
}

/* The reference method's randomness: the adapter's seeded once with bytes 00..2f. */
static inline void bench_reference_seed(void) {
    unsigned char seed[48];
    size_t i;
    for (i = 0; i < sizeof seed; i++) {
        seed[i] = (unsigned char)i;
    }
    must(bench_seed(seed, sizeof seed), "seeding the DRNG");
}

/* Right before the timed loop: the profile counts start (NGCC_PROFILE), then the clock
 * and the counter. Always inlined, so the timed region is the driver's own code. */
static inline __attribute__((always_inline)) void timing_start(bench_measurement *m) {
    if (m->stack) {
        m->stack_painted = stack_budget();
        m->stack_sp = stack_pointer();
        stack_paint(m->stack_painted);
    }
    if (m->calls) {
        calls_overhead(m);
    }
#ifdef NGCC_PROFILE
    ngcc_profile_begin(counter_read);
#endif
    m->t0 = now_ns();
    m->c0 = counter_read();
}

/* Right after it: the counter, the clock, then the resource usage. */
static inline __attribute__((always_inline)) void timing_stop(bench_measurement *m) {
    m->c1 = counter_read();
    m->t1 = now_ns();
    sys_getrusage(&m->ru);
    if (m->stack) {
        uintptr_t deepest = stack_scan(stack_low, m->stack_painted);
        uintptr_t end = deepest ? deepest : stack_low + m->stack_painted;
        m->stack_exceeded = deepest != 0 && deepest == stack_low;
        m->stack_used = m->stack_sp > end ? m->stack_sp - end : 0;
    }
}

/* The report from `{"api":` through `"ru_maxrss_kib"`; the family adds its sizes and
 * closes the object. */
static inline void put_measurement(const bench_measurement *m) {
    put_str("{\"api\":\"");
    put_str(m->api);
    put_str("\",\"op\":\"");
    put_str(m->op);
    put_str("\"");
    put_field("iterations", m->iterations);
    put_field("warmups", m->warmups);
    put_str(",\"cpu\":");
    put_i64(m->cpu);
    put_field("ns", m->t1 - m->t0 - m->excluded_ns);
    put_field("ticks", m->c1 - m->c0 - m->excluded_ticks);
    put_field("excluded_ns", m->excluded_ns);
    /* Everything spent on operations in this process: setup, the check, warm-ups and
     * the timed loop; the host compares it with the CPU time it reads from outside. */
    put_field("accounted_ns", m->t1 - m->t_start);
    put_str(",\"counter\":\"");
    put_str(m->counter);
    put_str("\"");
    put_field("counter_nominal_hz", counter_nominal_hz());
    put_str(",\"perf_errno\":");
    put_i64(perf_errno);
    put_str(",\"baseline_rss_kib\":");
    put_i64(m->baseline_rss_kib);
    put_str(",\"peak_rss_kib\":");
    put_i64(status_kib("VmHWM:"));
    put_str(",\"ru_maxrss_kib\":");
    put_i64(m->ru.ru_maxrss);
    if (m->stack) {
        put_str(",\"stack\":{\"painted\":");
        put_u64(m->stack_painted);
        put_field("used", m->stack_used);
        put_str(m->stack_exceeded ? ",\"exceeded\":true}" : ",\"exceeded\":false}");
    }
    if (m->calls) {
        put_str(",\"calls\":{\"n\":");
        put_u64(m->iterations);
        put_samples("overhead", call_overhead, m->iterations);
        put_samples("ticks", call_ticks, m->iterations);
        put_str("}");
    }
}

#endif
