/*
 * ngcc-repro verify-contract program: does the instance's verify reject what it must?
 * Built like sig_bench.c (`-include <API header> -include sig_bench_<api>.h`).
 *
 *   stdin:  line 1 a nonce (32 hex characters), then one record per line, at least two
 *           (so that "another key" exists): <seed hex> <message hex> (message >= 1 byte)
 *   stdout: per record k, in order:
 *           <nonce> <k> <good> <bad_msg> <bad_sig> <other_key> <sig_len>
 *
 * All keys are made first (record k: bench_seed(seed_k), keygen); then record k signs
 * its message (*sig_len = capacity) and prints the return values of verify on
 * (own pk, own sig, own msg), (msg[0] ^= 0x80), (sig[sig_len-1] ^= 0x01; unchanged when
 * sig_len is 0) and (pk of record k+1 mod n), and the signature length. Every verify
 * gets fresh copies of the message and signature. A sign that returns non-zero is
 * retried, as the timing driver does; more than 1000 failures in a row is a failure.
 *
 * The result channel is a private descriptor set up before any library constructor
 * runs (channel.h: fd 1 then points at stderr, so the library's printf or write(1)
 * cannot reach it); lines are written there with raw write(2) and the process ends
 * with exit_group, so no destructor runs after. Nothing else is written to it.
 * Exit codes: 0 all lines written; 2 keygen or sign failed (stderr `CRYPTOFAIL:
 * record=<k> call=<keygen|sign> returned=<r>`); 3 a returned length above the API
 * maximum (stderr `OVERFLOW: record=<k> call=<f> buffer=<b> claimed=<n> returned=<m>`)
 * or the channel could not be written; 64 malformed input.
 */
#include "bench_core.h"
#include "channel.h"
#include "digits.h"

#define MAX_INPUT (64u << 20)
#define NONCE_HEX 32
#define MAX_FAILS_IN_A_ROW 1000

typedef struct {
    unsigned char *seed, *msg, *pk, *sk;
    unsigned long long seed_len, msg_len, pk_len, sk_len;
} record_t;

static void die(int code) { sys_exit(code); }

static void malformed(const char *what, long line) {
    fprintf(stderr, "malformed input, line %ld: %s\n", line, what);
    die(64);
}

static void *memory(unsigned long long n) {
    void *p = malloc((size_t)n + 1);
    if (p == NULL) {
        fprintf(stderr, "out of memory (%llu bytes)\n", n);
        die(2);
    }
    return p;
}

/* Decode the hex field at *p, ended by `end`, into a fresh buffer. */
static unsigned char *hex_field(char **p, char end, unsigned long long *len, long line) {
    char *s = *p;
    unsigned long long n = 0;
    unsigned char *out;
    while (s[n] != '\0' && s[n] != end) {
        n++;
    }
    if (s[n] != end || n % 2 != 0) {
        malformed("a hex field of odd length or a missing separator", line);
    }
    *len = n / 2;
    out = memory(*len);
    if (hex_decode(s, *len, out) != 0) {
        malformed("a character that is not hex", line);
    }
    *p = s + n + (s[n] != '\0');
    return out;
}

static char *read_input(size_t *n) {
    static char input[MAX_INPUT + 1];
    size_t got;
    *n = 0;
    while (*n < MAX_INPUT && (got = fread(input + *n, 1, MAX_INPUT - *n, stdin)) > 0) {
        *n += got;
    }
    if (*n == MAX_INPUT) {
        malformed("more than 64 MiB of input", 0);
    }
    input[*n] = '\0';
    return input;
}

/* Split the input into the nonce and the records; every line ends with '\n'. */
static record_t *parse(char *input, char nonce[NONCE_HEX + 1], long *n_records) {
    char *p = input, *nl = strchr(p, '\n');
    record_t *r;
    long lines = 0, i;
    for (i = 0; input[i] != '\0'; i++) {
        lines += input[i] == '\n';
    }
    if (nl == NULL || nl - p != NONCE_HEX) {
        malformed("the first line is not a 32-character nonce", 1);
    }
    for (i = 0; i < NONCE_HEX; i++) {
        if (hex_nibble(p[i]) < 0) {
            malformed("the nonce is not hex", 1);
        }
        nonce[i] = p[i];
    }
    nonce[NONCE_HEX] = '\0';
    p = nl + 1;
    *n_records = lines - 1;
    if (*n_records < 2 || input[strlen(input) - 1] != '\n') {
        malformed("fewer than two records, or a last line without a newline", lines + 1);
    }
    r = memory(sizeof *r * (unsigned long long)*n_records);
    for (i = 0; i < *n_records; i++) {
        r[i].seed = hex_field(&p, ' ', &r[i].seed_len, i + 2);
        r[i].msg = hex_field(&p, '\n', &r[i].msg_len, i + 2);
        if (r[i].msg_len == 0) {
            malformed("an empty message", i + 2);
        }
    }
    return r;
}

static void check_len(long k, const char *call, const char *buffer, unsigned long long got, unsigned long long max) {
    if (got > max) {
        fprintf(stderr, "OVERFLOW: record=%ld call=%s buffer=%s claimed=%llu returned=%llu\n", k, call, buffer, max,
                got);
        die(3);
    }
}

static void keygen(record_t *r, long k) {
    int ret;
    r->pk = memory(bench_pk_max());
    r->sk = memory(bench_sk_max());
    r->pk_len = bench_pk_max();
    r->sk_len = bench_sk_max();
    if ((ret = bench_seed(r->seed, r->seed_len)) != 0 || (ret = bench_keygen(r->pk, &r->pk_len, r->sk, &r->sk_len)) != 0) {
        fprintf(stderr, "CRYPTOFAIL: record=%ld call=keygen returned=%d\n", k, ret);
        die(2);
    }
    check_len(k, "keygen", "pk", r->pk_len, bench_pk_max());
    check_len(k, "keygen", "sk", r->sk_len, bench_sk_max());
}

static unsigned long long sign(const record_t *r, long k, unsigned char *sig, unsigned char *m) {
    unsigned long long sig_len, in_a_row = 0;
    int ret;
    for (;;) {
        memcpy(m, r->msg, (size_t)r->msg_len);
        sig_len = bench_sig_max();
        if ((ret = bench_sign(r->sk, r->sk_len, m, r->msg_len, sig, &sig_len)) == 0) {
            break;
        }
        if (++in_a_row > MAX_FAILS_IN_A_ROW) {
            fprintf(stderr, "CRYPTOFAIL: record=%ld call=sign returned=%d\n", k, ret);
            die(2);
        }
    }
    check_len(k, "sign", "sig", sig_len, bench_sig_max());
    return sig_len;
}

/* verify on fresh copies; flip_msg / flip_sig modify one bit of the copies. */
static int verify(const record_t *key, const record_t *r, const unsigned char *sig, unsigned long long sig_len,
                  unsigned char *m, unsigned char *s, int flip_msg, int flip_sig) {
    memcpy(m, r->msg, (size_t)r->msg_len);
    memcpy(s, sig, (size_t)sig_len);
    if (flip_msg) {
        m[0] ^= 0x80;
    }
    if (flip_sig && sig_len > 0) {
        s[sig_len - 1] ^= 0x01;
    }
    return bench_verify(key->pk, key->pk_len, s, sig_len, m, r->msg_len);
}

int main(void) {
    char nonce[NONCE_HEX + 1];
    size_t input_len;
    long n, k;
    record_t *r = parse(read_input(&input_len), nonce, &n);
    unsigned long long max_msg = 0;
    unsigned char *sig = memory(bench_sig_max()), *s = memory(bench_sig_max()), *m;

    for (k = 0; k < n; k++) {
        max_msg = r[k].msg_len > max_msg ? r[k].msg_len : max_msg;
    }
    m = memory(max_msg);
    for (k = 0; k < n; k++) {
        keygen(&r[k], k);
    }
    for (k = 0; k < n; k++) {
        unsigned long long sig_len = sign(&r[k], k, sig, m);
        const record_t *other = &r[(k + 1) % n];
        put_str(nonce);
        put_str(" ");
        put_i64(k);
        put_str(" ");
        put_i64(verify(&r[k], &r[k], sig, sig_len, m, s, 0, 0));
        put_str(" ");
        put_i64(verify(&r[k], &r[k], sig, sig_len, m, s, 1, 0));
        put_str(" ");
        put_i64(verify(&r[k], &r[k], sig, sig_len, m, s, 0, 1));
        put_str(" ");
        put_i64(verify(other, &r[k], sig, sig_len, m, s, 0, 0));
        put_str(" ");
        put_u64(sig_len);
        put_str("\n");
        report_flush();
    }
    die(0);
    return 0;
}
