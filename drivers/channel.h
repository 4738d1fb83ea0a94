/*
 * ngcc-repro private output channel: before any constructor of the instance library
 * runs (the executable's .preinit_array runs before the initialisers of the shared
 * objects it loads), the driver's standard output is duplicated to a private
 * descriptor and fd 1 is pointed at stderr. Whatever the library prints to stdout
 * (printf, puts, write(1, ...)) lands on stderr; only the driver writes to the channel.
 */
#ifndef NGCC_CHANNEL_H
#define NGCC_CHANNEL_H

#include <unistd.h>

#ifdef NGCC_ONE_PROGRAM
/* One channel for every mode of the one program: the dispatcher's (candidate.c). */
extern int ngcc_channel_fd;
#define channel_fd ngcc_channel_fd
#else
static int channel_fd = -1;
#endif

static void channel_open(void) {
    if (channel_fd < 0) {
        channel_fd = dup(1);
        if (channel_fd < 0 || dup2(2, 1) != 1) {
            static const char msg[] = "cannot set up the output channel\n";
            if (write(2, msg, sizeof msg - 1) < 0) {
                _exit(70);
            }
            _exit(70);
        }
    }
}

#if !defined(NGCC_ONE_PROGRAM) || defined(NGCC_CHANNEL_OWNER)
__attribute__((section(".preinit_array"), used)) static void (*const channel_preinit)(void) = channel_open;
#endif

#endif
