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

static int input(const char *line, pending *p) {
    *p = (pending){-1, line, 0, 0};
    if (line == NULL) {
        return open("/dev/null", O_RDONLY);
    }
    int fds[2];
    struct stat st;
    if (strlen(line) >= 4096 || pipe2(fds, O_CLOEXEC) != 0 || fstat(fds[1], &st) != 0) {
        return -1;
    }
    *p = (pending){fds[1], line, (unsigned long)st.st_ino, 0};
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
        nr != SYS_read || fd != 0 || !in_program(pid, pc, program)) {
        return 0;
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
    if (p->fd < 0) {
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
    }
    if (r != 0) {
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

static void trial(const char *nonce, char **argv, const char *line) {
    int po[2], pe[2];
    char head[256];
    stream out, err;
    int status = 0;
    struct rusage ru;
    pid_t pid;

    memset(&ru, 0, sizeof ru);
    stream_open(&out, po, out_buf, MAX_OUT);
    stream_open(&err, pe, err_buf, MAX_ERR);
    pending in;
    int in_fd = input(line, &in);
    pid = fork();
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

int main(int argc, char **argv) {
    static char line[MAX_LINE];
    emulated = argc > 1 && strcmp(argv[1], "emulated") == 0;
    become_init("bench_runner", "ngcc-runner ready\n");
    baseline = residue();
    while (read_line(line)) {
        char *args[MAX_ARGS + 1];
        int n_args = 0;
        char *save = NULL;
        char *nonce = strtok_r(line, " ", &save);
        char *w = NULL;
        while (n_args < MAX_ARGS && (w = strtok_r(NULL, " ", &save)) != NULL && strcmp(w, "<") != 0) {
            args[n_args++] = w;
        }
        args[n_args] = NULL;
        if (nonce == NULL || n_args == 0) {
            _exit(76);
        }
        /* The rest of the line after `<`, its words as the host sent them. */
        trial(nonce, args, w != NULL ? save : NULL);
    }
    return 0;
}
