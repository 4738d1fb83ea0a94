/*
 * ngcc-repro constant-time timer: process 1 of one timing container, which times one
 * secret-handling operation from outside the process that runs it (dudect-style: two
 * classes of secret input, interleaved at random). The ct driver runs as its child and
 * cannot reach its clock, its memory or its descriptors (non-dumpable, the namespace's
 * init); what the child controls is only when it answers.
 *
 * Built by the harness from this file and runner_io.h alone and mounted read-only; it
 * runs no candidate code itself.
 *
 * Protocol with the host (stdin, stdout):
 *   -> "ngcc-timer ready\n"
 *   <- "<nonce> <n> <program> <arg>...\n"       one timing run of n measurements
 *   -> "ngcc-timing <nonce> <kind> <value> <taken> <helpers> <errlen>\n"
 *      + taken × 4 bytes (little-endian: bit 31 the class, bits 0..30 the nanoseconds,
 *      saturated) + taken × 4 bytes of gaps (the nanoseconds from each done byte to the
 *      next measurement's ready byte, saturated; 0 after the last) + errlen bytes of the
 *      child's stdout and stderr (the first MAX_ERR). The gaps are where work moved out
 *      of a window would show: the host tests them by the class of the window before.
 *      kind: done | exited | signalled | protocol | no-exec; helpers: the most threads
 *      beyond the child's first and other processes seen at once (checked every
 *      CHECK_EVERY measurements and at the end), plus the processes still there after.
 * Protocol with the child (its fd 3 in, fd 4 out; fd 0 is /dev/null, 1 and 2 a pipe):
 *   timer '0' or '1' (the class) -> child prepares, 'r' -> timer starts the clock, 'g'
 *   -> child runs the operation, 'd' -> timer stops the clock. End of fd 3 ends it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner_io.h"

#define MAX_ARGS 32
#define MAX_N 1000000
#define MAX_ERR (64 << 10)
#define CHECK_EVERY 256

static uint32_t samples[MAX_N];
static uint32_t gaps[MAX_N];
static char err_buf[MAX_ERR];
static size_t err_len;

static void child(char **argv, int cmd, int reply, int err) {
    int null = open("/dev/null", O_RDONLY);
    /* Above 4 first, so that no dup2 below overwrites a pipe still needed. */
    cmd = fcntl(cmd, F_DUPFD, 10);
    reply = fcntl(reply, F_DUPFD, 10);
    if (null < 0 || cmd < 0 || reply < 0 || dup2(null, 0) != 0 || dup2(err, 1) != 1 || dup2(err, 2) != 2 ||
        dup2(cmd, 3) != 3 || dup2(reply, 4) != 4) {
        _exit(126);
    }
    for (int fd = 5; fd < 4096; fd++) {
        close(fd);
    }
    signal(SIGPIPE, SIG_DFL);
    execv(argv[0], argv);
    _exit(127);
}

/* What the child printed, kept up to MAX_ERR and the rest dropped. */
static void drain_err(int fd) {
    char scratch[4096];
    for (;;) {
        ssize_t r = read(fd, scratch, sizeof scratch);
        if (r <= 0) {
            return;
        }
        size_t keep = (size_t)r < MAX_ERR - err_len ? (size_t)r : MAX_ERR - err_len;
        memcpy(err_buf + err_len, scratch, keep);
        err_len += keep;
    }
}

/* The child's next reply byte; -1 once its end of the pipe is closed. */
static int reply_byte(int reply, int err) {
    for (;;) {
        struct pollfd pf[2] = {{reply, POLLIN, 0}, {err, POLLIN, 0}};
        if (poll(pf, err >= 0 ? 2 : 1, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            _exit(75);
        }
        if (err >= 0 && pf[1].revents != 0) {
            drain_err(err);
        }
        if (pf[0].revents != 0) {
            unsigned char c;
            ssize_t r = read(reply, &c, 1);
            if (r == 1) {
                return c;
            }
            if (r == 0 || errno != EINTR) {
                return -1;
            }
        }
    }
}

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

/* Threads beyond the child's first and processes beyond the timer and the child. */
static unsigned helpers_now(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    unsigned threads = count_dir(path, 0), procs = count_dir("/proc", 1);
    return (threads > 1 ? threads - 1 : 0) + (procs > 2 ? procs - 2 : 0);
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static unsigned char class_bits[4096];

static int next_class(long i) {
    if (i % (long)(8 * sizeof class_bits) == 0 && getrandom(class_bits, sizeof class_bits, 0) != sizeof class_bits) {
        _exit(77);
    }
    long bit = i % (long)(8 * sizeof class_bits);
    return (class_bits[bit / 8] >> (bit % 8)) & 1;
}

typedef struct {
    const char *kind;
    int value;
    long taken;
    unsigned helpers;
} result;

/* n measurements, or fewer when the child stops answering as agreed. */
static uint32_t saturated(uint64_t ns) { return (uint32_t)(ns < 0x7fffffffu ? ns : 0x7fffffffu); }

static void measure(result *res, long n, pid_t pid, int cmd, int reply, int err) {
    uint64_t done_at = 0;
    for (long i = 0; i < n; i++) {
        unsigned char c = (unsigned char)('0' + next_class(i)), go = 'g';
        if (i % CHECK_EVERY == 0) {
            unsigned h = helpers_now(pid);
            res->helpers = h > res->helpers ? h : res->helpers;
        }
        write_all(cmd, &c, 1);
        int r = reply_byte(reply, err);
        if (r != 'r') {
            res->kind = r < 0 ? "ended" : "protocol";
            return;
        }
        uint64_t t0 = now_ns();
        if (i > 0) {
            gaps[i - 1] = saturated(t0 - done_at);
        }
        write_all(cmd, &go, 1);
        r = reply_byte(reply, err);
        done_at = now_ns();
        if (r != 'd') {
            res->kind = r < 0 ? "ended" : "protocol";
            return;
        }
        samples[i] = (uint32_t)(c - '0') << 31 | saturated(done_at - t0);
        gaps[i] = 0;
        res->taken = i + 1;
    }
    unsigned h = helpers_now(pid);
    res->helpers = h > res->helpers ? h : res->helpers;
}

static void pipe_or_die(int p[2]) {
    if (pipe2(p, O_CLOEXEC) != 0) {
        _exit(73);
    }
}

static void put_words(const uint32_t *w, long n) {
    for (long i = 0; i < n; i++) {
        unsigned char le[4] = {(unsigned char)w[i], (unsigned char)(w[i] >> 8), (unsigned char)(w[i] >> 16),
                               (unsigned char)(w[i] >> 24)};
        write_all(1, le, 4);
    }
}

static void timing(const char *nonce, long n, char **argv) {
    int cmd[2], reply[2], err[2], status = 0;
    char head[256];
    result res = {"done", 0, 0, 0};
    pipe_or_die(cmd);
    pipe_or_die(reply);
    pipe_or_die(err);
    err_len = 0;
    pid_t pid = fork();
    if (pid < 0) {
        _exit(74);
    }
    if (pid == 0) {
        child(argv, cmd[0], reply[1], err[1]);
    }
    close(cmd[0]);
    close(reply[1]);
    close(err[1]);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    measure(&res, n, pid, cmd[1], reply[0], err[0]);
    close(cmd[1]);
    close(reply[0]);
    /* The child ends at the end of its input (within 5 s, or it is killed); its
     * output is read until it has. */
    for (int waited = 0; waitpid(pid, &status, WNOHANG) == 0; waited++) {
        struct pollfd pf = {err[0], POLLIN, 0};
        if (waited == 500) {
            kill(pid, SIGKILL);
        }
        if (poll(&pf, 1, 10) > 0) {
            drain_err(err[0]);
        }
    }
    drain_err(err[0]);
    close(err[0]);
    res.helpers += leftovers();
    /* A broken protocol is what the host hears of, whatever the child died of after. */
    if (strcmp(res.kind, "protocol") == 0) {
        res.value = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        res.kind = "signalled";
        res.value = WTERMSIG(status);
    } else if (WEXITSTATUS(status) == 127 && res.taken == 0) {
        res.kind = "no-exec";
        res.value = 127;
    } else {
        res.value = WEXITSTATUS(status);
        if (strcmp(res.kind, "ended") == 0 || (strcmp(res.kind, "done") == 0 && res.value != 0)) {
            res.kind = "exited";
        }
    }
    int len = snprintf(head, sizeof head, "ngcc-timing %s %s %d %ld %u %zu\n", nonce, res.kind, res.value, res.taken,
                       res.helpers, err_len);
    write_all(1, head, (size_t)len);
    put_words(samples, res.taken);
    put_words(gaps, res.taken);
    write_all(1, err_buf, err_len);
}

int main(void) {
    static char line[MAX_LINE];
    become_init("ct_timer", "ngcc-timer ready\n");
    while (read_line(line)) {
        char *argv[MAX_ARGS + 1], *save = NULL, *end = NULL;
        int argc = 0;
        char *nonce = strtok_r(line, " ", &save), *count = strtok_r(NULL, " ", &save);
        long n = count != NULL ? strtol(count, &end, 10) : 0;
        for (char *w; argc < MAX_ARGS && (w = strtok_r(NULL, " ", &save)) != NULL;) {
            argv[argc++] = w;
        }
        argv[argc] = NULL;
        if (nonce == NULL || end == NULL || *end != 0 || n < 1 || n > MAX_N || argc == 0) {
            _exit(76);
        }
        timing(nonce, n, argv);
    }
    return 0;
}
