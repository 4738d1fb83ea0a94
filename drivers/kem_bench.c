/*
 * ngcc-repro timing driver: times one KEM operation in this process and prints one
 * JSON object on stdout. The harness runs it once per trial (a fresh process each time).
 *
 *   kem_bench <keygen|enc|dec|nop> <iterations> <warmups> [cpu]
 *
 * Built with `-include <API header> -include bench_<api>.h`; the adapter maps the
 * submission's API onto bench_* and owns its randomness, seeded with bytes 00..2f.
 * Counter: hardware cycles (perf_event_open, user space only) when the machine has
 * them, else the TSC (x86-64) or cntvct_el0 (AArch64); time from CLOCK_MONOTONIC_RAW.
 * Exit codes as the KAT programs: 2 a KEM call failed or decapsulation disagreed;
 * 3 the report could not be written. The report is written by one raw system call
 * and the process ends at once (see report_and_exit).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* the harness also passes -D_GNU_SOURCE: force-included headers come first */
#endif
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

#include <errno.h>

static long raw_syscall3(long nr, long a, long b, long c);

static int perf_fd = -1;
static int perf_errno = 0; /* why hardware cycles are unavailable, for the record */

static const char *counter_open(void) {
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.type = PERF_TYPE_HARDWARE;
    attr.size = sizeof attr;
    attr.config = PERF_COUNT_HW_CPU_CYCLES;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    perf_fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
    if (perf_fd < 0) {
        perf_errno = errno;
    } else {
        uint64_t v = 0;
        if (raw_syscall3(SYS_read, perf_fd, (long)&v, (long)sizeof v) == (long)sizeof v) {
            return "perf-cycles";
        }
        perf_errno = errno;
        close(perf_fd);
        perf_fd = -1;
    }
#if defined(__x86_64__)
    return "tsc";
#elif defined(__aarch64__)
    return "cntvct_el0";
#else
    return "monotonic-ns";
#endif
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t counter_read(void) {
    if (perf_fd >= 0) {
        uint64_t v = 0;
        if (raw_syscall3(SYS_read, perf_fd, (long)&v, (long)sizeof v) != (long)sizeof v) {
            return 0;
        }
        return v;
    }
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
    {
        uint64_t v;
        __asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
        return v;
    }
#else
    return now_ns();
#endif
}

/* Nominal counter frequency where the architecture states one (AArch64), else 0. */
static uint64_t counter_nominal_hz(void) {
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
static long long parse_dec(const char **s) {
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

static long long arg_dec(const char *s) {
    long long v = parse_dec(&s);
    return *s == '\0' ? v : -1;
}

static long status_kib(const char *key) {
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

static long resident_kib(void) {
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
static char report[8192];
static size_t report_len;

static void put_str(const char *s) {
    while (*s != '\0' && report_len < sizeof report - 1) {
        report[report_len++] = *s++;
    }
}

static void put_u64(uint64_t v) {
    char d[24];
    int n = 0;
    do {
        d[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0 && report_len < sizeof report - 1) {
        report[report_len++] = d[--n];
    }
}

static void put_i64(long long v) {
    if (v < 0) {
        put_str("-");
        put_u64((uint64_t)0 - (uint64_t)v);
    } else {
        put_u64((uint64_t)v);
    }
}

static void put_field(const char *name, uint64_t v) {
    put_str(",\"");
    put_str(name);
    put_str("\":");
    put_u64(v);
}

/* Raw system calls where the architecture is known: the library cannot interpose them. */
static long raw_syscall3(long nr, long a, long b, long c) {
#if defined(__x86_64__)
    long r;
    __asm__ __volatile__("syscall" : "=a"(r) : "0"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return r;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    __asm__ __volatile__("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory", "cc");
    return x0;
#else
    long r = syscall(nr, a, b, c);
    return r < 0 ? -errno : r;
#endif
}

static long sys_write(int fd, const void *buf, size_t n) { return raw_syscall3(SYS_write, fd, (long)buf, (long)n); }

static void sys_exit(int code) {
#if defined(__x86_64__)
    __asm__ __volatile__("syscall" : : "a"((long)SYS_exit_group), "D"((long)code) : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = SYS_exit_group;
    register long x0 __asm__("x0") = code;
    __asm__ __volatile__("svc 0" : : "r"(x8), "r"(x0) : "memory", "cc");
#endif
    _exit(code);
}

/* Write the whole report (looping on partial writes) and end the process at once. */
static void report_and_exit(void) {
    size_t done = 0;
    while (done < report_len) {
        long n = sys_write(1, report + done, report_len - done);
        if (n == -EINTR) {
            continue;
        }
        if (n <= 0) {
            sys_exit(3);
        }
        done += (size_t)n;
    }
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

static void put_profile(void) {
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

static void nop(void) {}
static void (*volatile nop_fn)(void) = nop;

static unsigned char *pk, *sk, *ct, *ss, *ss2;
static unsigned long long pk_len, sk_len, ct_len, ss_len, ss2_len;
static unsigned long long pk_max, sk_max, ct_max, ss_max;

static void must(int ret, const char *what) {
    if (ret != 0) {
        fprintf(stderr, "CRYPTOFAIL: %s returned %d\n", what, ret);
        exit(2);
    }
}

static void run_op(int op) {
    switch (op) {
    case 0:
        pk_len = pk_max;
        sk_len = sk_max;
        must(bench_keygen(pk, &pk_len, sk, &sk_len), "keygen");
        break;
    case 1:
        ct_len = ct_max;
        ss_len = ss_max;
        must(bench_enc(pk, pk_len, ss, &ss_len, ct, &ct_len), "enc");
        break;
    case 2:
        ss2_len = ss_max;
        must(bench_dec(sk, sk_len, ct, ct_len, ss2, &ss2_len), "dec");
        break;
    default:
        nop_fn();
    }
}

int main(int argc, char **argv) {
    static const char *ops[] = {"keygen", "enc", "dec", "nop"};
    unsigned char seed[48];
    unsigned long long iterations, warmups, i;
    uint64_t t_start, t0, t1, c0, c1;
    long baseline;
    const char *counter;
    int op = -1, cpu = -1;
    struct rusage ru;

    if (argc < 4) {
        fprintf(stderr, "usage: %s <keygen|enc|dec|nop> <iterations> <warmups> [cpu]\n", argv[0]);
        return 64;
    }
    for (i = 0; i < 4; i++) {
        if (strcmp(argv[1], ops[i]) == 0) {
            op = (int)i;
        }
    }
    if (op < 0 || arg_dec(argv[2]) <= 0 || arg_dec(argv[3]) < 0 || (argc > 4 && arg_dec(argv[4]) < 0)) {
        fprintf(stderr, "bad operation, iteration count, warm-up count or cpu\n");
        return 64;
    }
    iterations = (unsigned long long)arg_dec(argv[2]);
    warmups = (unsigned long long)arg_dec(argv[3]);
    if (argc > 4) {
        cpu_set_t set;
        cpu = (int)arg_dec(argv[4]);
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            perror("sched_setaffinity");
            return 64;
        }
    }

    t_start = now_ns();
    pk_max = bench_pk_max();
    sk_max = bench_sk_max();
    ct_max = bench_ct_max();
    ss_max = bench_ss_max();
    pk = malloc(pk_max);
    sk = malloc(sk_max);
    ct = malloc(ct_max);
    ss = malloc(ss_max);
    ss2 = malloc(ss_max);
    if (!pk || !sk || !ct || !ss || !ss2) {
        fprintf(stderr, "out of memory\n");
        return 2;
    }
    for (i = 0; i < sizeof seed; i++) {
        seed[i] = (unsigned char)i;
    }
    must(bench_seed(seed, sizeof seed), "seeding the DRNG");
    /* Inputs for enc and dec, and the one correctness check before timing. */
    run_op(0);
    run_op(1);
    run_op(2);
    if (ss2_len != ss_len || memcmp(ss, ss2, (size_t)ss_len) != 0) {
        fprintf(stderr, "CRYPTOFAIL: decapsulation disagrees with encapsulation\n");
        return 2;
    }
    counter = counter_open();
    baseline = resident_kib();

    for (i = 0; i < warmups; i++) {
        run_op(op);
    }
#ifdef NGCC_PROFILE
    ngcc_profile_begin(counter_read);
#endif
    t0 = now_ns();
    c0 = counter_read();
    for (i = 0; i < iterations; i++) {
        run_op(op);
    }
    c1 = counter_read();
    t1 = now_ns();
    getrusage(RUSAGE_SELF, &ru);

    put_str("{\"api\":\"" BENCH_API "\",\"op\":\"");
    put_str(ops[op]);
    put_str("\"");
    put_field("iterations", iterations);
    put_field("warmups", warmups);
    put_str(",\"cpu\":");
    put_i64(cpu);
    put_field("ns", t1 - t0);
    put_field("ticks", c1 - c0);
    /* Everything spent on operations in this process: setup, the check, warm-ups and
     * the timed loop; the host compares it with the CPU time it reads from outside. */
    put_field("accounted_ns", t1 - t_start);
    put_str(",\"counter\":\"");
    put_str(counter);
    put_str("\"");
    put_field("counter_nominal_hz", counter_nominal_hz());
    put_str(",\"perf_errno\":");
    put_i64(perf_errno);
    put_str(",\"baseline_rss_kib\":");
    put_i64(baseline);
    put_str(",\"peak_rss_kib\":");
    put_i64(status_kib("VmHWM:"));
    put_str(",\"ru_maxrss_kib\":");
    put_i64(ru.ru_maxrss);
    put_str(",\"api_sizes\":{\"pk\":");
    put_u64(pk_max);
    put_field("sk", sk_max);
    put_field("ct", ct_max);
    put_field("ss", ss_max);
    put_str("},\"returned_sizes\":{\"pk\":");
    put_u64(pk_len);
    put_field("sk", sk_len);
    put_field("ct", ct_len);
    put_field("ss", ss_len);
    put_str("}");
#ifdef NGCC_PROFILE
    put_profile();
#endif
    put_str("}\n");
    report_and_exit();
    return 0;
}
