/* What the harness's process-1 tools (bench_runner.c) share: whole writes,
 * the host's command lines, and the end of every process but process 1. Each tool is
 * built from its source and this header (measure/runner.rs keys the build on both). */
#ifndef NGCC_RUNNER_IO_H
#define NGCC_RUNNER_IO_H

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_LINE 4096

/* All of p to fd, or exit 71. */
static void write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            _exit(71);
        }
        p += w;
        n -= (size_t)w;
    }
}

/* One line of stdin without its newline; 0 at end of input. */
static int read_line(char *line) {
    size_t n = 0;
    for (;;) {
        char c;
        ssize_t r = read(0, &c, 1);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return 0;
        }
        if (c == '\n') {
            line[n] = 0;
            return 1;
        }
        if (n + 1 >= MAX_LINE) {
            _exit(72);
        }
        line[n++] = c;
    }
}

/* Kill every process of the container but this one, and reap them all. */
static unsigned leftovers(void) {
    unsigned n = 0;
    kill(-1, SIGKILL);
    for (;;) {
        pid_t w = waitpid(-1, NULL, 0);
        if (w > 0) {
            n++;
        } else if (errno != EINTR) {
            return n;
        }
    }
}

/* A tool's protections hold only as the namespace's init (which every orphan is
 * reparented to already; no PR_SET_CHILD_SUBREAPER: qemu-user refuses it) and
 * non-dumpable; otherwise it exits 70. Then it says `ready` to the host. */
static void become_init(const char *name, const char *ready) {
    if (getpid() != 1 || prctl(PR_SET_DUMPABLE, 0) != 0) {
        static const char msg[] = ": must run as process 1 of its container, non-dumpable\n";
        if (write(2, name, strlen(name)) >= 0 && write(2, msg, sizeof msg - 1) >= 0) {
            _exit(70);
        }
        _exit(70);
    }
    signal(SIGPIPE, SIG_IGN);
    write_all(1, ready, strlen(ready));
}

#endif
