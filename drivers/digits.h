/*
 * ngcc-repro hand-written number text shared by the drivers: hex fields in (sig_contract.c,
 * kem_replay.c), decimal digits out (bench_core.h's report, guard.h's fault handler,
 * which may call neither printf nor anything that allocates), upper-case hex fields out
 * (the KAT drivers' text). No strto*, scanf or printf (see bench_core.h's parse_dec).
 */
#ifndef NGCC_DIGITS_H
#define NGCC_DIGITS_H

#include <stdint.h>
#include <stdio.h>

/* The value of one hex digit (either case), or -1. */
static inline int hex_nibble(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;
}

/* Decode the 2n hex characters at s into out[0..n): 0, or -1 at a character that is not hex. */
static inline int hex_decode(const char *s, unsigned long long n, unsigned char *out) {
    unsigned long long i;
    for (i = 0; i < n; i++) {
        int hi = hex_nibble(s[2 * i]), lo = hex_nibble(s[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return -1;
        }
        out[i] = (unsigned char)(hi * 16 + lo);
    }
    return 0;
}

/* The decimal digits of v, most significant first, as a string in d; async-signal-safe. */
static inline void dec_digits(uint64_t v, char d[21]) {
    char r[20];
    int n = 0, i;
    do {
        r[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (i = 0; i < n; i++) {
        d[i] = r[n - 1 - i];
    }
    d[n] = '\0';
}

/* The upper-case hex of p[0..len) to f, in chunks (a KAT field can be megabytes). */
static inline void fput_hex(FILE *f, const unsigned char *p, unsigned long long len) {
    static const char digits[] = "0123456789ABCDEF";
    char chunk[8192];
    size_t n = 0;
    unsigned long long i;
    for (i = 0; i < len; i++) {
        chunk[n++] = digits[p[i] >> 4];
        chunk[n++] = digits[p[i] & 15];
        if (n == sizeof chunk) {
            fwrite(chunk, 1, n, f);
            n = 0;
        }
    }
    fwrite(chunk, 1, n, f);
}

#endif
