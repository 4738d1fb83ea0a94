/*
 * ngcc-repro's one program per candidate build: the KAT driver, the timing driver and
 * the corroborating check (replay or contract) linked into one executable with one name,
 * so that nothing the library can see at load time (its program's path, name, argv,
 * symbols, size or digest) tells one run from another. Every run starts the same way:
 * `candidate` with no argument; the mode and its words come as the first line of stdin,
 * read here after the library's constructors have run, one byte at a time by raw
 * system calls (nothing is buffered for the library to see), so the mode's own reads of
 * stdin start on the next line.
 *
 *   stdin line 1: kat [part] | bench <op> <iterations> <warmups> [cpu] | check [args]
 *                 | ct --time <op>
 *
 * Each mode is its driver's source compiled with `-Dmain=ngcc_mode_<mode>`; a driver's
 * helpers are static, so drivers may share helper names. A mode whose driver did not
 * build (the timing and ct drivers are optional) is absent: weak here.
 * The modes share one private output channel (channel.h), set up here before any
 * constructor of the library runs. Exit 64: no or unknown mode, or a mode this build lacks.
 */
#define _GNU_SOURCE 1
#include <signal.h>
#include <stddef.h>

#define NGCC_ONE_PROGRAM 1
#define NGCC_CHANNEL_OWNER 1
#include "channel.h"
#include "rawsys.h"

/* The private output channel every mode writes its results to (channel.h). */
int ngcc_channel_fd = -1;

#define MAX_LINE 512
#define MAX_WORDS 16

int ngcc_mode_kat(int argc, char **argv) __attribute__((weak));
int ngcc_mode_bench(int argc, char **argv) __attribute__((weak));
int ngcc_mode_check(int argc, char **argv) __attribute__((weak));
int ngcc_mode_ct(int argc, char **argv) __attribute__((weak));

static void say(const char *s) {
    size_t n = 0;
    while (s[n]) {
        n++;
    }
    sys_write(2, s, n);
}

/* By hand: a libc strcmp could be the library's (the program links libc first anyway). */
static int same(const char *a, const char *b) {
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

/* Line 1 of stdin, without its newline; -1 when it is missing, too long or not ended. */
static int first_line(char *line) {
    for (int n = 0; n < MAX_LINE; n++) {
        if (sys_read(0, line + n, 1) != 1) {
            return -1;
        }
        if (line[n] == '\n') {
            line[n] = 0;
            return n;
        }
    }
    return -1;
}

/* Every signal blocked (SIG_SETMASK) or none. While the mode line is read, no handler a
 * constructor installed can run and take it; the trial runner sends the line only once
 * it has seen, in /proc, this thread alone, blocked here in read(0) with every signal
 * blocked. Synchronous faults need handlers (guard.h), so they are unblocked after. */
static void block_signals(int all) {
    unsigned long mask = all ? ~0UL : 0UL;
    raw_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&mask, 0, sizeof mask, 0, 0);
}

int main(void) {
    static char line[MAX_LINE + 1];
    static char *words[MAX_WORDS + 2];
    block_signals(1);
    int got = first_line(line);
    block_signals(0);
    if (got < 0) {
        say("candidate: no mode line on stdin\n");
        sys_exit(64);
    }
    /* argv[0] is the program's name in every mode; the mode's words follow it. */
    int argc = 1;
    words[0] = "candidate";
    const char *mode = NULL;
    for (char *p = line; *p;) {
        while (*p == ' ') {
            *p++ = 0;
        }
        if (!*p) {
            break;
        }
        if (argc > MAX_WORDS) {
            say("candidate: too many words on the mode line\n");
            sys_exit(64);
        }
        if (!mode) {
            mode = p;
        } else {
            words[argc++] = p;
        }
        while (*p && *p != ' ') {
            p++;
        }
    }
    words[argc] = NULL;
    int (*entry)(int, char **) = NULL;
    if (!mode) {
        entry = NULL;
    } else if (same(mode, "kat")) {
        entry = ngcc_mode_kat;
    } else if (same(mode, "bench")) {
        entry = ngcc_mode_bench;
    } else if (same(mode, "check")) {
        entry = ngcc_mode_check;
    } else if (same(mode, "ct")) {
        entry = ngcc_mode_ct;
    }
    if (!entry) {
        say("candidate: unknown mode, or a mode this build lacks\n");
        sys_exit(64);
    }
    return entry(argc, words);
}
