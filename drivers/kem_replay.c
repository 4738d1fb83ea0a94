/*
 * ngcc-repro replay driver: one KEM operation over records the harness sends on stdin,
 * one output line per record on stdout. The harness runs keygen, enc and dec in three
 * separate processes on seeds it draws at run time and compares the shared secrets
 * itself, so text printed without computing it cannot pass.
 *
 *   kem_replay keygen   stdin: <seed>          stdout: <pk> <sk>
 *   kem_replay enc      stdin: <seed> <pk>     stdout: <ct> <ss>
 *   kem_replay dec      stdin: <sk> <ct>       stdout: <ss>
 *   kem_replay reject   stdin: <sk> <ct>       stdout: <ss>, or REJECTED when dec fails
 *
 * `reject` decapsulates ciphertexts the harness tampered with: a failed call there is
 * an explicit rejection, not a failure of the run.
 *
 * Fields are upper-case hex. Built like kem_bench.c (`-include <API header> -include
 * bench_<api>.h`), so it reaches the API through the same adapter. Exit codes: 2 a KEM
 * call failed, 3 a reported length beyond the API maximum, 64 malformed input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "digits.h"

/* The result lines go to the private channel (channel.h), not the library's stdout. */
static FILE *out;

#define MAX_INPUT (64u << 20)

static void die(int code, const char *what, int record) {
    fprintf(stderr, "%s in record %d\n", what, record);
    exit(code);
}

static unsigned char *buffer(unsigned long long len, int record) {
    unsigned char *p = malloc((size_t)len + 1);
    if (p == NULL) {
        die(2, "out of memory", record);
    }
    return p;
}

/* Decode the hex field at *p (ended by a space or the end of the line) into a fresh buffer
 * of at least `room` bytes. */
static unsigned char *field(char **p, unsigned long long room, unsigned long long *len, int record) {
    char *s = *p;
    unsigned long long n = 0;
    unsigned char *out;
    while (s[n] != '\0' && s[n] != ' ') {
        n++;
    }
    if (n % 2 != 0) {
        die(64, "a hex field of odd length", record);
    }
    *len = n / 2;
    out = buffer(*len > room ? *len : room, record);
    if (hex_decode(s, *len, out) != 0) {
        die(64, "a character that is not hex", record);
    }
    *p = s[n] == ' ' ? s + n + 1 : s + n;
    return out;
}

static void put(const unsigned char *p, unsigned long long len, const char *end) {
    unsigned long long i;
    for (i = 0; i < len; i++) {
        fprintf(out, "%02X", p[i]);
    }
    fputs(end, out);
}

static void check_len(unsigned long long got, unsigned long long max, int record) {
    if (got > max) {
        die(3, "OVERFLOW: a reported length beyond the API maximum", record);
    }
}

static void seed_from(char **p, int record) {
    unsigned long long len;
    unsigned char *seed = field(p, 0, &len, record);
    if (bench_seed(seed, len) != 0) {
        die(2, "CRYPTOFAIL: seeding the DRNG failed", record);
    }
    free(seed);
}

static void keygen(char *line, int record) {
    unsigned long long pk_len = bench_pk_max(), sk_len = bench_sk_max();
    unsigned char *pk = buffer(pk_len, record), *sk = buffer(sk_len, record);
    seed_from(&line, record);
    if (bench_keygen(pk, &pk_len, sk, &sk_len) != 0) {
        die(2, "CRYPTOFAIL: keygen failed", record);
    }
    check_len(pk_len, bench_pk_max(), record);
    check_len(sk_len, bench_sk_max(), record);
    put(pk, pk_len, " ");
    put(sk, sk_len, "\n");
    free(pk);
    free(sk);
}

static void enc(char *line, int record) {
    unsigned long long pk_len, ct_len = bench_ct_max(), ss_len = bench_ss_max();
    unsigned char *pk, *ct = buffer(ct_len, record), *ss = buffer(ss_len, record);
    seed_from(&line, record);
    pk = field(&line, bench_pk_max(), &pk_len, record);
    if (bench_enc(pk, pk_len, ss, &ss_len, ct, &ct_len) != 0) {
        die(2, "CRYPTOFAIL: enc failed", record);
    }
    check_len(ct_len, bench_ct_max(), record);
    check_len(ss_len, bench_ss_max(), record);
    put(ct, ct_len, " ");
    put(ss, ss_len, "\n");
    free(pk);
    free(ct);
    free(ss);
}

static void decapsulate(char *line, int record, int rejecting) {
    unsigned long long sk_len, ct_len, ss_len = bench_ss_max();
    unsigned char *sk = field(&line, bench_sk_max(), &sk_len, record);
    unsigned char *ct = field(&line, bench_ct_max(), &ct_len, record);
    unsigned char *ss = buffer(ss_len, record);
    if (bench_dec(sk, sk_len, ct, ct_len, ss, &ss_len) != 0) {
        if (!rejecting) {
            die(2, "CRYPTOFAIL: dec failed", record);
        }
        fputs("REJECTED\n", out);
    } else {
        check_len(ss_len, bench_ss_max(), record);
        put(ss, ss_len, "\n");
    }
    free(sk);
    free(ct);
    free(ss);
}

static void dec(char *line, int record) { decapsulate(line, record, 0); }

static void reject(char *line, int record) { decapsulate(line, record, 1); }

int main(int argc, char **argv) {
    static char input[MAX_INPUT + 1];
    size_t n = 0, got;
    char *line;
    int record = 0;
    void (*op)(char *, int) = NULL;

    if (argc == 2 && strcmp(argv[1], "keygen") == 0) {
        op = keygen;
    } else if (argc == 2 && strcmp(argv[1], "enc") == 0) {
        op = enc;
    } else if (argc == 2 && strcmp(argv[1], "dec") == 0) {
        op = dec;
    } else if (argc == 2 && strcmp(argv[1], "reject") == 0) {
        op = reject;
    } else {
        fprintf(stderr, "usage: %s <keygen|enc|dec|reject> < records\n", argv[0]);
        return 64;
    }
    if ((out = fdopen(channel_fd, "w")) == NULL) {
        perror("fdopen");
        return 70;
    }
    while (n < MAX_INPUT && (got = fread(input + n, 1, MAX_INPUT - n, stdin)) > 0) {
        n += got;
    }
    input[n] = '\0';
    for (line = strtok(input, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        op(line, record++);
        fflush(out);
    }
    return 0;
}
