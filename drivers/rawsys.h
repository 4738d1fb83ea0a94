/*
 * ngcc-repro raw system calls: what lies between a measured window and its report (the
 * clock, the counter's read, the window protocol's reads and writes, the report's write,
 * the resource usage and the exit) goes to the kernel by an inline `syscall` (x86-64) or
 * `svc #0` (AArch64). No libc symbol a library could interpose, and no vDSO page it could
 * rewrite, sits in between. Every function returns the kernel's result (-errno on error).
 * The sandbox's seccomp filter refuses what could still intercept a raw call from inside
 * the process (`seccomp`, `prctl(PR_SET_SECCOMP)`, `prctl(PR_SET_TSC)`).
 */
#ifndef NGCC_RAWSYS_H
#define NGCC_RAWSYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "rawsys.h: raw system calls are written for x86-64 and AArch64 only"
#endif

static inline long raw_syscall6(long nr, long a, long b, long c, long d, long e, long f) {
#if defined(__x86_64__)
    long r;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ __volatile__("syscall"
                         : "=a"(r)
                         : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                         : "rcx", "r11", "memory");
    return r;
#else
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    register long x4 __asm__("x4") = e;
    register long x5 __asm__("x5") = f;
    __asm__ __volatile__("svc #0"
                         : "+r"(x0)
                         : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                         : "memory", "cc");
    return x0;
#endif
}

static inline long raw_syscall3(long nr, long a, long b, long c) { return raw_syscall6(nr, a, b, c, 0, 0, 0); }

static inline long sys_read(int fd, void *buf, size_t n) { return raw_syscall3(SYS_read, fd, (long)buf, (long)n); }

static inline long sys_write(int fd, const void *buf, size_t n) {
    return raw_syscall3(SYS_write, fd, (long)buf, (long)n);
}

/* The clock by the kernel itself: slower than the vDSO (a system call, some 50-300 ns
 * more per read), read only at a window's edges. */
static inline uint64_t sys_clock_ns(clockid_t clock) {
    struct timespec ts = {0, 0};
    if (raw_syscall3(SYS_clock_gettime, clock, (long)&ts, 0) != 0) {
        return 0;
    }
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline long sys_getrusage(struct rusage *ru) { return raw_syscall3(SYS_getrusage, RUSAGE_SELF, (long)ru, 0); }

static inline long sys_perf_event_open(void *attr, int pid, int cpu, int group, unsigned long flags) {
    return raw_syscall6(SYS_perf_event_open, (long)attr, pid, cpu, group, (long)flags, 0);
}

/* exit_group: no atexit handler, no destructor, no stdio flush. */
__attribute__((noreturn)) static inline void sys_exit(int code) {
    for (;;) {
        raw_syscall3(SYS_exit_group, code, 0, 0);
    }
}

#endif
