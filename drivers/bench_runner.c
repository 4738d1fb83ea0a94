/*
 * ngcc-repro trial runner: process 1 of one timing container, which runs the trials of
 * one (instance, operation) one after another, each in its own fresh process.
 *
 * Built by the harness from this file and runner_io.h alone (no candidate build can
 * replace it) and mounted read-only; it runs no candidate code itself. As the
 * namespace's init it cannot be killed or stopped from inside the container, and it is
 * non-dumpable, so a trial cannot open its descriptors or memory through /proc.
 *
 * Protocol (the host writes stdin, reads stdout; nothing else holds either):
 *   -> "ngcc-runner ready\n" once started
 *   <- "<nonce> <program> <arg>... [< <word>...]\n"   one trial (plain words, no spaces
 *      inside); the words after `<` are the trial's stdin, one line (a mode of the one
 *      program, drivers/candidate.c), else its stdin is /dev/null. The line is written
 *      into an empty pipe only once the trial waits for it in its own `main` (ready()),
 *      so the library's constructors cannot learn which run they are in from it.
 *   <- "<nonce> --exec <program> <arg>... [< <word>...]\n"   the container's one trial
 *      (a KAT run, a corroborating check): started and given its line as any other; its
 *      stdout and stderr pass through unchanged, and the runner then exits as the trial
 *      did (its code, or 128 + its signal), after killing whatever it left. So the engine
 *      sees the trial's own output and status, and the trial sees what every trial sees.
 *      A trial refused its line: "ngcc-runner: killed … (refused <why>)" on stderr, exit 64.
 *   <- "<nonce> --time <n> <program> <arg>... [< <word>...]\n"   a timed trial (ct's
 *      timing test): started and given its line as any other, then n measurements over
 *      the same stdin and stdout (timed() below), answered by the timing frame.
 *   -> "ngcc-trial <nonce> <kind> <value> <cpu_us> <leftovers> <residue> <len> <errlen>\n"
 *      + len bytes + errlen bytes. kind: exited | signalled | output-cap | no-exec |
 *      refused (the trial was killed instead of given its line; value: why, ready());
 *      cpu_us: the
 *      trial's own wait4 user + system time; leftovers: processes still there after
 *      the trial ended, all killed before the frame is written; residue: what it left
 *      for the next trial to find (entries of /tmp, /dev/shm, /dev/mqueue, System V
 *      IPC objects); the bytes: the trial's stdout, then its stderr (the first MAX_ERR
 *      bytes, the rest read and dropped). Both come in the one frame, so the host never
 *      takes a trial's diagnostics before they have arrived.
 *   -> "ngcc-timing <nonce> <kind> <value> <taken> <helpers> <errlen>\n"
 *      + taken × 4 bytes (little-endian: bit 31 the class, bits 0..30 the nanoseconds,
 *      saturated) + taken × 4 bytes of gaps (the nanoseconds from each done byte to the
 *      next measurement's ready byte, saturated; 0 after the last) + errlen bytes of its
 *      stderr. kind: done | exited | signalled | protocol | no-exec | refused; helpers:
 *      the most threads beyond the trial's first and other processes seen at once
 *      (checked every CHECK_EVERY measurements and at the end), plus those left after.
 *      The measurement protocol, after the trial's line: the runner writes the class '0'
 *      or '1' on its stdin -> the trial prepares and writes 'r' on its stdout (the
 *      private channel) -> the runner starts the clock and writes 'g' -> the trial runs
 *      the operation and writes 'd' -> the runner stops the clock. The end of its stdin
 *      ends the trial. Nothing before its line tells a timed trial from any other.
 * End of stdin ends the runner. Argument `emulated`: qemu-user runs the trials, whose
 * /proc shows qemu's threads and calls; each line is sent at once.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runner_io.h"

#define MAX_ARGS 32
#define MAX_OUT (1 << 20)
#define MAX_ERR (64 << 10)

static char out_buf[MAX_OUT];
static char err_buf[MAX_ERR];

/* The trial's stdin: a pipe, empty at the exec. Its line is written only when the
 * trial's own `main` waits for it (ready() below), so no constructor of the library can
 * read it ahead and replay it on a pipe of its own; the write end stays here until then.
 * Without a line the trial's stdin is /dev/null. */
typedef struct {
    int fd;
    const char *line;
    /* A timed trial's stdin stays open after its line; `sent` once it is written. */
    int keep, sent;
    unsigned long ino;
    /* When /proc was first refused in a row (0: not refused). Between the fork and the
     * exec the trial is still this runner's non-dumpable copy: a refusal counts only once
     * it has lasted HIDDEN_NS. */
    unsigned long long refused_since;
} pending;

#define HIDDEN_NS 1000000000ULL

static unsigned long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

/* The trial's stdin: /dev/null, or a pipe for its line; a timed trial's (keep) is a pipe
 * in any case, which stays open for the measurements (with no line, there is none to
 * send). -1 when no pipe can be made. */
static int input(const char *line, pending *p, int keep) {
    *p = (pending){-1, line, keep, 0, 0, 0};
    if (line == NULL && !keep) {
        return open("/dev/null", O_RDONLY);
    }
    int fds[2];
    struct stat st;
    if ((line != NULL && strlen(line) >= 4096) || pipe2(fds, O_CLOEXEC) != 0 || fstat(fds[1], &st) != 0) {
        return -1;
    }
    *p = (pending){fds[1], line, keep, line == NULL, (unsigned long)st.st_ino, 0};
    return fds[0];
}

/* Under qemu-user /proc shows qemu's threads and system calls, not the guest's: the
 * line is sent at once (the runner's argument `emulated`). */
static int emulated;

/* /proc/<pid>/<what> into buf; -2 when the kernel refuses (the trial made itself
 * non-dumpable), -1 when it cannot be read otherwise. */
static int proc_read(pid_t pid, const char *what, char *buf, size_t cap) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, what);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, cap - 1);
    int refused = n < 0 && (errno == EACCES || errno == EPERM);
    if (fd >= 0) {
        close(fd);
    }
    if (n < 0) {
        return refused ? -2 : -1;
    }
    buf[n] = 0;
    return (int)n;
}

static unsigned long long field(const char *text, const char *name, int base) {
    const char *at = strstr(text, name);
    return at == NULL ? ~0ULL : strtoull(at + strlen(name), NULL, base);
}

/* Every signal but SIGKILL and SIGSTOP, which cannot be blocked. */
#define ALL_BLOCKED (~0ULL & ~(1ULL << (SIGKILL - 1)) & ~(1ULL << (SIGSTOP - 1)))

/* No process in the namespace but this runner and the trial (zombies count). */
static int alone(pid_t pid) {
    DIR *d = opendir("/proc");
    struct dirent *e;
    int others = 0;
    while (d != NULL && (e = readdir(d)) != NULL) {
        long n = strtol(e->d_name, NULL, 10);
        others += n > 1 && n != pid;
    }
    if (d != NULL) {
        closedir(d);
    }
    return d != NULL && others == 0;
}

/* The address pc lies in an executable mapping of the trial's program itself. */
static int in_program(pid_t pid, unsigned long long pc, const char *program) {
    static char maps[1 << 16];
    if (proc_read(pid, "maps", maps, sizeof maps) < 0) {
        return 0;
    }
    for (char *l = maps; l != NULL && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        unsigned long long lo, hi;
        char perms[8], path[512];
        path[0] = 0;
        if (sscanf(l, "%llx-%llx %7s %*s %*s %*s %511s", &lo, &hi, perms, path) >= 3 && perms[2] == 'x' &&
            lo <= pc && pc < hi) {
            return strcmp(path, program) == 0;
        }
    }
    return 0;
}

/* Why a trial was killed instead of given its line (the frame's kind `refused`, value). */
#define READY 1
#define HIDDEN 2    /* it made /proc unreadable */
#define CROWDED 3   /* other processes were about (one could relay the line) */
#define THREADS 4   /* other threads were about */
#define REPLACED 5  /* its fd 0 was no longer the runner's pipe */
#define UNBLOCKED 6 /* signals could be delivered (a handler could take the line) */
#define EARLY 7     /* it waited for its input outside the program (a constructor) */

/* READY when the trial is where its line may be sent, 0 not yet, else why not (above).
 * It is due once the trial is blocked in read(0) from the program's own code (its
 * `main`, drivers/candidate.c); then it must be the only thread, with every signal
 * blocked, fd 0 still the runner's pipe and no other process about. */
static int ready(pid_t pid, const pending *p, const char *program) {
    char status[4096], call[256], fd0[64], want[64];
    int c = proc_read(pid, "syscall", call, sizeof call);
    if (c < 0) {
        return c == -2 ? HIDDEN : 0;
    }
    unsigned long long nr, fd, a[5], sp, pc;
    if (sscanf(call, "%llu %llx %llx %llx %llx %llx %llx %llx %llx", &nr, &fd, &a[0], &a[1], &a[2], &a[3], &a[4], &sp,
               &pc) != 9 ||
        nr != SYS_read || fd != 0) {
        return 0;
    }
    /* Only the program's own `main` reads the line; a library's constructor that waits
     * for it would wait for ever. */
    if (!in_program(pid, pc, program)) {
        return EARLY;
    }
    int s = proc_read(pid, "status", status, sizeof status);
    snprintf(want, sizeof want, "pipe:[%lu]", p->ino);
    snprintf(call, sizeof call, "/proc/%d/fd/0", (int)pid);
    ssize_t n = readlink(call, fd0, sizeof fd0 - 1);
    if (s < 0 || n < 0) {
        return s == -2 || (n < 0 && (errno == EACCES || errno == EPERM)) ? HIDDEN : 0;
    }
    fd0[n] = 0;
    if (field(status, "\nThreads:", 10) != 1) {
        return THREADS;
    }
    if (field(status, "\nSigBlk:", 16) != ALL_BLOCKED) {
        return UNBLOCKED;
    }
    if (strcmp(fd0, want) != 0) {
        return REPLACED;
    }
    return alone(pid) ? READY : CROWDED;
}

/* Send the pending line once the trial is ready. 0, or why the trial was killed
 * instead. */
static int deliver(pending *p, pid_t pid, const char *program) {
    if (p->fd < 0 || p->sent) {
        return 0;
    }
    int r = emulated ? READY : ready(pid, p, program);
    if (r == HIDDEN) {
        unsigned long long t = now_ns();
        p->refused_since = p->refused_since ? p->refused_since : t;
        r = t - p->refused_since >= HIDDEN_NS ? HIDDEN : 0;
    } else {
        p->refused_since = 0;
    }
    if (r == READY) {
        write_all(p->fd, p->line, strlen(p->line));
        write_all(p->fd, "\n", 1);
        p->sent = 1;
    }
    if (r > READY || (r == READY && !p->keep)) {
        close(p->fd);
        p->fd = -1;
    }
    if (r > READY) {
        kill(pid, SIGKILL);
    }
    return r == READY ? 0 : r;
}

static void child(char **argv, int in, int out, int err) {
    if (in < 0 || dup2(in, 0) != 0 || dup2(out, 1) != 1 || dup2(err, 2) != 2) {
        _exit(126);
    }
    for (int fd = 3; fd < 4096; fd++) {
        close(fd);
    }
    signal(SIGPIPE, SIG_DFL);
    /* Readable by the runner from the fork on (the exec keeps it so): only a trial that
     * turns it off itself is `hidden`. */
    prctl(PR_SET_DUMPABLE, 1);
    execv(argv[0], argv);
    _exit(127);
}

/* One pipe of a trial: its buffer, what it holds, whether it is still open and full. */
typedef struct {
    int fd, open_, over;
    char *buf;
    size_t cap, len;
} stream;

/* Read what the trial printed. Past the cap of stdout the trial is killed (output-cap);
 * stderr past its cap is read and dropped. 0 once every writer has closed the pipe. */
static int drain(stream *s, pid_t pid, int kill_when_full) {
    for (;;) {
        char scratch[4096];
        char *to = s->over ? scratch : s->buf + s->len;
        size_t room = s->over ? sizeof scratch : s->cap - s->len;
        ssize_t r = read(s->fd, to, room);
        if (r < 0) {
            return errno == EINTR || errno == EAGAIN;
        }
        if (r == 0) {
            return 0;
        }
        if (!s->over) {
            s->len += (size_t)r;
            if (s->len == s->cap) {
                s->over = 1;
                if (kill_when_full) {
                    kill(pid, SIGKILL);
                }
            }
        }
        if (r < (ssize_t)room) {
            return 1;
        }
    }
}

static void stream_open(stream *s, int p[2], char *buf, size_t cap) {
    if (pipe2(p, O_CLOEXEC) != 0) {
        _exit(73);
    }
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    *s = (stream){p[0], 1, 0, buf, cap, 0};
}

/* Both pipes read, and the trial's line sent when it is ready for it, until the trial
 * has been reaped, then what is left in the pipes. 0, or why the line was not sent. */
static int collect(stream *out, stream *err, pid_t pid, pending *in, const char *program, int *status,
                   struct rusage *ru) {
    int refused = 0;
    for (;;) {
        struct pollfd pf[2] = {{out->open_ ? out->fd : -1, POLLIN, 0}, {err->open_ ? err->fd : -1, POLLIN, 0}};
        int wait_ms = in->fd >= 0 ? 1 : 10;
        if ((out->open_ || err->open_) && poll(pf, 2, wait_ms) > 0) {
            if (out->open_ && pf[0].revents != 0) {
                out->open_ = drain(out, pid, 1);
            }
            if (err->open_ && pf[1].revents != 0) {
                err->open_ = drain(err, pid, 0);
            }
        } else if (!out->open_ && !err->open_ && in->fd >= 0) {
            usleep(1000);
        }
        int r = deliver(in, pid, program);
        refused = r != 0 ? r : refused;
        /* Closed by every writer: the trial has ended or is about to. */
        pid_t w = wait4(pid, status, out->open_ || err->open_ || in->fd >= 0 ? WNOHANG : 0, ru);
        if (w == pid) {
            break;
        }
        if (w < 0 && errno != EINTR) {
            _exit(75);
        }
    }
    if (in->fd >= 0) {
        close(in->fd);
        in->fd = -1;
    }
    if (out->open_) {
        drain(out, pid, 1);
    }
    if (err->open_) {
        drain(err, pid, 0);
    }
    close(out->fd);
    close(err->fd);
    return refused;
}

/* What a trial could leave for the next: the entries of the writable folders and the
 * System V IPC objects of the container's namespace (a header line each). */
static unsigned residue(void) {
    static const char *const dirs[] = {"/tmp", "/dev/shm", "/dev/mqueue"};
    static const char *const ipc[] = {"/proc/sysvipc/shm", "/proc/sysvipc/sem", "/proc/sysvipc/msg"};
    unsigned n = 0;
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        DIR *d = opendir(dirs[i]);
        struct dirent *e;
        while (d != NULL && (e = readdir(d)) != NULL) {
            n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
        }
        if (d != NULL) {
            closedir(d);
        }
    }
    for (size_t i = 0; i < sizeof ipc / sizeof *ipc; i++) {
        FILE *f = fopen(ipc[i], "r");
        int c;
        while (f != NULL && (c = fgetc(f)) != EOF) {
            n += c == '\n';
        }
        if (f != NULL) {
            fclose(f);
        }
    }
    return n;
}

static unsigned baseline;

/* Start a trial the same way for every kind: its stdout and stderr pipes, its stdin
 * (`keep`: a pipe that stays open after the line), the fork and the exec. */
static pid_t start(char **argv, const char *line, int keep, stream *out, stream *err, pending *in) {
    int po[2], pe[2];
    stream_open(out, po, out_buf, MAX_OUT);
    stream_open(err, pe, err_buf, MAX_ERR);
    int in_fd = input(line, in, keep);
    pid_t pid = fork();
    if (pid < 0) {
        _exit(74);
    }
    if (pid == 0) {
        child(argv, in_fd, po[1], pe[1]);
    }
    close(po[1]);
    close(pe[1]);
    if (in_fd >= 0) {
        close(in_fd);
    }
    return pid;
}

static void trial(const char *nonce, char **argv, const char *line) {
    char head[256];
    stream out, err;
    pending in;
    int status = 0;
    struct rusage ru;

    memset(&ru, 0, sizeof ru);
    pid_t pid = start(argv, line, 0, &out, &err, &in);
    int refused = collect(&out, &err, pid, &in, argv[0], &status, &ru);
    unsigned left = leftovers();
    unsigned now = residue();
    unsigned residue_n = now > baseline ? now - baseline : 0;
    unsigned long long cpu_us = (unsigned long long)ru.ru_utime.tv_sec * 1000000u + ru.ru_utime.tv_usec +
                                (unsigned long long)ru.ru_stime.tv_sec * 1000000u + ru.ru_stime.tv_usec;
    const char *kind = "exited";
    int value = 0;
    if (refused != 0) {
        kind = "refused";
        value = refused;
    } else if (out.over) {
        kind = "output-cap";
    } else if (WIFSIGNALED(status)) {
        kind = "signalled";
        value = WTERMSIG(status);
    } else if (WEXITSTATUS(status) == 127 && out.len == 0) {
        kind = "no-exec";
        value = 127;
    } else {
        value = WEXITSTATUS(status);
    }
    int n = snprintf(head, sizeof head, "ngcc-trial %s %s %d %llu %u %u %zu %zu\n", nonce, kind, value, cpu_us, left,
                     residue_n, out.len, err.len);
    write_all(1, head, (size_t)n);
    write_all(1, out_buf, out.len);
    write_all(1, err_buf, err.len);
}

/* ---- Timed trials: ct's timing test, dudect-style, timed from outside the trial ---- */

#define MAX_N 1000000
#define CHECK_EVERY 256

static uint32_t samples[MAX_N];
static uint32_t gaps[MAX_N];
static unsigned char class_bits[4096];

/* Measurement i's class, drawn from the kernel's random source. */
static int next_class(long i) {
    long bits = (long)(8 * sizeof class_bits), bit = i % bits;
    if (bit == 0 && getrandom(class_bits, sizeof class_bits, 0) != sizeof class_bits) {
        _exit(77);
    }
    return (class_bits[bit / 8] >> (bit % 8)) & 1;
}

static uint32_t saturated(uint64_t ns) { return (uint32_t)(ns < 0x7fffffffu ? ns : 0x7fffffffu); }

static unsigned count_dir(const char *path, int numeric) {
    unsigned n = 0;
    DIR *d = opendir(path);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        n += numeric ? (e->d_name[0] >= '0' && e->d_name[0] <= '9') : e->d_name[0] != '.';
    }
    if (d != NULL) {
        closedir(d);
    }
    return n;
}

/* Threads beyond the trial's first and processes beyond the runner and the trial. */
static unsigned helpers_now(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    unsigned threads = count_dir(path, 0), procs = count_dir("/proc", 1);
    return (threads > 1 ? threads - 1 : 0) + (procs > 2 ? procs - 2 : 0);
}

/* One byte to the trial's stdin; 0 once it no longer reads it. */
static int tell(int fd, unsigned char c) {
    ssize_t w;
    while ((w = write(fd, &c, 1)) < 0 && errno == EINTR) {
    }
    return w == 1;
}

/* The trial's next byte on its stdout (its answers), its stderr read meanwhile; -1 once
 * it has closed its stdout. */
static int answer(stream *out, stream *err, pid_t pid) {
    for (;;) {
        struct pollfd pf[2] = {{out->fd, POLLIN, 0}, {err->open_ ? err->fd : -1, POLLIN, 0}};
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            _exit(75);
        }
        if (err->open_ && pf[1].revents != 0) {
            err->open_ = drain(err, pid, 0);
        }
        if (pf[0].revents != 0) {
            unsigned char c;
            ssize_t r = read(out->fd, &c, 1);
            if (r == 1) {
                return c;
            }
            if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
                return -1;
            }
        }
    }
}

typedef struct {
    const char *kind;
    int value;
    long taken;
    unsigned helpers;
} timed_result;

static void note_helpers(timed_result *res, pid_t pid) {
    unsigned h = helpers_now(pid);
    res->helpers = h > res->helpers ? h : res->helpers;
}

/* n measurements, or fewer when the trial stops answering as agreed. */
static void measure(timed_result *res, long n, pid_t pid, int cmd, stream *out, stream *err) {
    uint64_t done_at = 0;
    for (long i = 0; i < n; i++) {
        unsigned char c = (unsigned char)('0' + next_class(i));
        if (i % CHECK_EVERY == 0) {
            note_helpers(res, pid);
        }
        int r = tell(cmd, c) ? answer(out, err, pid) : -1;
        if (r != 'r') {
            res->kind = r < 0 ? "ended" : "protocol";
            return;
        }
        uint64_t t0 = now_ns();
        if (i > 0) {
            gaps[i - 1] = saturated(t0 - done_at);
        }
        r = tell(cmd, 'g') ? answer(out, err, pid) : -1;
        done_at = now_ns();
        if (r != 'd') {
            res->kind = r < 0 ? "ended" : "protocol";
            return;
        }
        samples[i] = (uint32_t)(c - '0') << 31 | saturated(done_at - t0);
        gaps[i] = 0;
        res->taken = i + 1;
    }
    note_helpers(res, pid);
}

/* Until the trial's line is sent: 0, why it was refused instead, or -1 when the trial
 * ended first. Its stderr is read meanwhile. */
static int await_line(stream *err, pid_t pid, pending *in, const char *program) {
    for (;;) {
        struct pollfd pf = {err->open_ ? err->fd : -1, POLLIN, 0};
        if (poll(&pf, 1, 1) > 0 && pf.revents != 0) {
            err->open_ = drain(err, pid, 0);
        }
        int r = deliver(in, pid, program);
        if (r != 0 || in->sent) {
            return r;
        }
        siginfo_t info;
        info.si_pid = 0;
        if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
            return -1;
        }
    }
}

/* The trial ends at the end of its input (within 5 s, or it is killed); its output is
 * read until it has. */
static void finish(pid_t pid, stream *out, stream *err, int *status) {
    for (int waited = 0; waitpid(pid, status, WNOHANG) == 0; waited++) {
        struct pollfd pf[2] = {{out->open_ ? out->fd : -1, POLLIN, 0}, {err->open_ ? err->fd : -1, POLLIN, 0}};
        if (waited == 500) {
            kill(pid, SIGKILL);
        }
        if (poll(pf, 2, 10) > 0) {
            if (out->open_ && pf[0].revents != 0) {
                out->open_ = drain(out, pid, 0);
            }
            if (err->open_ && pf[1].revents != 0) {
                err->open_ = drain(err, pid, 0);
            }
        }
    }
    if (err->open_) {
        drain(err, pid, 0);
    }
    close(out->fd);
    close(err->fd);
}

/* The frame's kind and value. A broken protocol or a refusal is what the host hears of,
 * whatever the trial died of after. */
static void classify(timed_result *res, int refused, int status) {
    if (refused > 0) {
        res->kind = "refused";
        res->value = refused;
    } else if (strcmp(res->kind, "protocol") == 0) {
        res->value = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        res->kind = "signalled";
        res->value = WTERMSIG(status);
    } else if (WEXITSTATUS(status) == 127 && res->taken == 0) {
        res->kind = "no-exec";
        res->value = 127;
    } else {
        res->value = WEXITSTATUS(status);
        if (strcmp(res->kind, "ended") == 0 || (strcmp(res->kind, "done") == 0 && res->value != 0)) {
            res->kind = "exited";
        }
    }
}

static void put_words(const uint32_t *w, long n) {
    for (long i = 0; i < n; i++) {
        unsigned char le[4] = {(unsigned char)w[i], (unsigned char)(w[i] >> 8), (unsigned char)(w[i] >> 16),
                               (unsigned char)(w[i] >> 24)};
        write_all(1, le, 4);
    }
}

/* A timed trial: started as any other (its line sent only once it waits for it in its
 * own `main`), then n measurements over the same stdin and stdout. */
static void timed(const char *nonce, long n, char **argv, const char *line) {
    int status = 0;
    char head[256];
    stream out, err;
    pending in;
    timed_result res = {"done", 0, 0, 0};
    pid_t pid = start(argv, line, 1, &out, &err, &in);
    int refused = await_line(&err, pid, &in, argv[0]);
    if (refused == 0) {
        measure(&res, n, pid, in.fd, &out, &err);
    } else if (refused < 0) {
        res.kind = "ended";
    }
    if (in.fd >= 0) {
        close(in.fd);
    }
    finish(pid, &out, &err, &status);
    res.helpers += leftovers();
    classify(&res, refused, status);
    int len = snprintf(head, sizeof head, "ngcc-timing %s %s %d %ld %u %zu\n", nonce, res.kind, res.value, res.taken,
                       res.helpers, err.len);
    write_all(1, head, (size_t)len);
    put_words(samples, res.taken);
    put_words(gaps, res.taken);
    write_all(1, err_buf, err.len);
}

/* Copy what is readable on fd to `to`, until it would block; 0 once every writer has
 * closed the pipe. */
static int pass(int fd, int to) {
    for (;;) {
        char buf[65536];
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0) {
            return errno == EINTR || errno == EAGAIN;
        }
        if (r == 0) {
            return 0;
        }
        write_all(to, buf, (size_t)r);
    }
}

/* The rest of the runner's own stdin after the request line, copied to the trial's
 * stdin once its line is sent (a check's seeds), through a small buffer so that neither
 * side blocks the other. */
typedef struct {
    char buf[4096];
    size_t len, off;
    int eof;
} relay;

/* Move what can move from fd 0 to the trial's stdin; its end closed once all is sent. */
static void forward(relay *r, pending *in, int ready0, int ready_in) {
    if (in->fd < 0 || !in->sent) {
        return;
    }
    if (r->len == r->off && !r->eof && ready0) {
        ssize_t n = read(0, r->buf, sizeof r->buf);
        r->eof = n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN);
        r->len = n > 0 ? (size_t)n : 0;
        r->off = 0;
    }
    if (r->len > r->off && ready_in) {
        ssize_t n = write(in->fd, r->buf + r->off, r->len - r->off);
        if (n < 0 && errno != EINTR && errno != EAGAIN) {
            r->eof = 1;
            r->off = r->len;
        }
        r->off += n > 0 ? (size_t)n : 0;
    }
    if (r->eof && r->len == r->off) {
        close(in->fd);
        in->fd = -1;
    }
}

/* The container's one trial, its output passed through; the runner ends as it did. */
static void passthrough(char **argv, const char *line) {
    int status = 0, refused = 0;
    stream out, err;
    struct rusage ru;
    pending in;
    static relay rest;
    pid_t pid = start(argv, line, 1, &out, &err, &in);
    if (in.fd >= 0) {
        fcntl(in.fd, F_SETFL, O_NONBLOCK);
    }
    for (;;) {
        int relaying = in.fd >= 0 && in.sent;
        struct pollfd pf[4] = {{out.open_ ? out.fd : -1, POLLIN, 0},
                               {err.open_ ? err.fd : -1, POLLIN, 0},
                               {relaying && rest.len == rest.off && !rest.eof ? 0 : -1, POLLIN, 0},
                               {relaying && rest.len > rest.off ? in.fd : -1, POLLOUT, 0}};
        if (poll(pf, 4, in.fd >= 0 && !in.sent ? 1 : 10) > 0) {
            out.open_ = out.open_ && (pf[0].revents == 0 || pass(out.fd, 1));
            err.open_ = err.open_ && (pf[1].revents == 0 || pass(err.fd, 2));
        }
        int r = deliver(&in, pid, argv[0]);
        refused = r != 0 ? r : refused;
        forward(&rest, &in, pf[2].revents != 0, 1);
        pid_t w = wait4(pid, &status, out.open_ || err.open_ || in.fd >= 0 ? WNOHANG : 0, &ru);
        if (w == pid) {
            break;
        }
        if (w < 0 && errno != EINTR) {
            _exit(75);
        }
    }
    /* What it left is killed first: a leftover could hold the pipes open. */
    leftovers();
    while (out.open_ && pass(out.fd, 1)) {
    }
    while (err.open_ && pass(err.fd, 2)) {
    }
    if (refused != 0) {
        static const char *const why[] = {"", "", "made /proc unreadable", "had other processes about",
                                          "had other threads", "read from a stdin that was not the runner's",
                                          "could receive signals", "waited for it outside its main (a constructor)"};
        char msg[160];
        int n = snprintf(msg, sizeof msg, "ngcc-runner: killed before its input was sent: it %s (refused %d)\n",
                         why[refused], refused);
        write_all(2, msg, (size_t)n);
        /* The program broke the protocol, as one that never read its line does. */
        _exit(64);
    }
    _exit(WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status));
}

int main(int argc, char **argv) {
    static char line[MAX_LINE];
    emulated = argc > 1 && strcmp(argv[1], "emulated") == 0;
    become_init("bench_runner", "ngcc-runner ready\n");
    baseline = residue();
    while (read_line(line)) {
        char *args[MAX_ARGS + 1];
        int n_args = 0;
        char *save = NULL, *end = NULL;
        char *nonce = strtok_r(line, " ", &save);
        char *w = strtok_r(NULL, " ", &save);
        long n = 0;
        int exec_one = w != NULL && strcmp(w, "--exec") == 0;
        if (exec_one) {
            w = strtok_r(NULL, " ", &save);
        } else if (w != NULL && strcmp(w, "--time") == 0) {
            char *count = strtok_r(NULL, " ", &save);
            n = count != NULL ? strtol(count, &end, 10) : 0;
            if (end == NULL || *end != 0 || n < 1 || n > MAX_N) {
                _exit(76);
            }
            w = strtok_r(NULL, " ", &save);
        }
        for (; n_args < MAX_ARGS && w != NULL && strcmp(w, "<") != 0; w = strtok_r(NULL, " ", &save)) {
            args[n_args++] = w;
        }
        args[n_args] = NULL;
        if (nonce == NULL || n_args == 0) {
            _exit(76);
        }
        /* The rest of the line after `<`, its words as the host sent them. */
        const char *input_line = w != NULL ? save : NULL;
        if (exec_one) {
            passthrough(args, input_line);
        } else if (n > 0) {
            timed(nonce, n, args, input_line);
        } else {
            trial(nonce, args, input_line);
        }
    }
    return 0;
}
