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
 *      program, drivers/candidate.c), else its stdin is /dev/null
 *   -> "ngcc-trial <nonce> <kind> <value> <cpu_us> <leftovers> <residue> <len> <errlen>\n"
 *      + len bytes + errlen bytes. kind: exited | signalled | output-cap | no-exec; cpu_us: the
 *      trial's own wait4 user + system time; leftovers: processes still there after
 *      the trial ended, all killed before the frame is written; residue: what it left
 *      for the next trial to find (entries of /tmp, /dev/shm, /dev/mqueue, System V
 *      IPC objects); the bytes: the trial's stdout, then its stderr (the first MAX_ERR
 *      bytes, the rest read and dropped). Both come in the one frame, so the host never
 *      takes a trial's diagnostics before they have arrived.
 * End of stdin ends the runner.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runner_io.h"

#define MAX_ARGS 32
#define MAX_OUT (1 << 20)
#define MAX_ERR (64 << 10)

static char out_buf[MAX_OUT];
static char err_buf[MAX_ERR];

/* The trial's stdin: `line` in a pipe written and closed before the exec (it fits the
 * pipe's buffer), else /dev/null. */
static int input(const char *line) {
    if (line == NULL) {
        return open("/dev/null", O_RDONLY);
    }
    int p[2];
    size_t n = strlen(line);
    if (n >= 4096 || pipe(p) != 0) {
        return -1;
    }
    write_all(p[1], line, n);
    write_all(p[1], "\n", 1);
    close(p[1]);
    return p[0];
}

static void child(char **argv, const char *line, int out, int err) {
    int in = input(line);
    if (in < 0 || dup2(in, 0) != 0 || dup2(out, 1) != 1 || dup2(err, 2) != 2) {
        _exit(126);
    }
    for (int fd = 3; fd < 4096; fd++) {
        close(fd);
    }
    signal(SIGPIPE, SIG_DFL);
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

/* Both pipes read until the trial has been reaped, then what is left in them. */
static void collect(stream *out, stream *err, pid_t pid, int *status, struct rusage *ru) {
    for (;;) {
        struct pollfd pf[2] = {{out->open_ ? out->fd : -1, POLLIN, 0}, {err->open_ ? err->fd : -1, POLLIN, 0}};
        if ((out->open_ || err->open_) && poll(pf, 2, 10) > 0) {
            if (out->open_ && pf[0].revents != 0) {
                out->open_ = drain(out, pid, 1);
            }
            if (err->open_ && pf[1].revents != 0) {
                err->open_ = drain(err, pid, 0);
            }
        }
        /* Closed by every writer: the trial has ended or is about to. */
        pid_t w = wait4(pid, status, out->open_ || err->open_ ? WNOHANG : 0, ru);
        if (w == pid) {
            break;
        }
        if (w < 0 && errno != EINTR) {
            _exit(75);
        }
    }
    if (out->open_) {
        drain(out, pid, 1);
    }
    if (err->open_) {
        drain(err, pid, 0);
    }
    close(out->fd);
    close(err->fd);
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
    pid = fork();
    if (pid < 0) {
        _exit(74);
    }
    if (pid == 0) {
        child(argv, line, po[1], pe[1]);
    }
    close(po[1]);
    close(pe[1]);
    collect(&out, &err, pid, &status, &ru);
    unsigned left = leftovers();
    unsigned now = residue();
    unsigned residue_n = now > baseline ? now - baseline : 0;
    unsigned long long cpu_us = (unsigned long long)ru.ru_utime.tv_sec * 1000000u + ru.ru_utime.tv_usec +
                                (unsigned long long)ru.ru_stime.tv_sec * 1000000u + ru.ru_stime.tv_usec;
    const char *kind = "exited";
    int value = 0;
    if (out.over) {
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

int main(void) {
    static char line[MAX_LINE];
    become_init("bench_runner", "ngcc-runner ready\n");
    baseline = residue();
    while (read_line(line)) {
        char *argv[MAX_ARGS + 1];
        int argc = 0;
        char *save = NULL;
        char *nonce = strtok_r(line, " ", &save);
        char *w = NULL;
        while (argc < MAX_ARGS && (w = strtok_r(NULL, " ", &save)) != NULL && strcmp(w, "<") != 0) {
            argv[argc++] = w;
        }
        argv[argc] = NULL;
        if (nonce == NULL || argc == 0) {
            _exit(76);
        }
        /* The rest of the line after `<`, its words as the host sent them. */
        trial(nonce, argv, w != NULL ? save : NULL);
    }
    return 0;
}
