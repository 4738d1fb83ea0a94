/*
 * ngcc-repro ICCS signature KAT driver: replays the official ICCS KAT_SIG schedule and
 * text format for one instance library (the schedule is restated in drivers/README.md).
 *
 * Schedule: a seed DRNG seeded with "seed" x 16 and a message DRNG seeded with
 * "msg" x 21 + "m" (64 bytes each); ten records, message length 56 + 8i bytes; per
 * record the seed (512 bits), the message, init_random_number(&drng_algorithm, seed, 64),
 * sig_keygen, sig_sign and sig_verify, which must accept. The three lengths are set from
 * the getters once, before the loop, and carried over between records as the official
 * driver does (record k's sig_sign gets record k-1's signature length in *sn_len);
 * -DNGCC_KAT_RESET_LENGTHS=1 resets them to the claimed sizes before every record.
 * Template mode (OUTPUT_BLANK_TEST_VECTORS 1) prints PK_Len, SK_Len and Sn_Len empty.
 *
 * Compiled by the harness with `-include <the instance's API header>`; the library
 * provides sig_* and the ICCS DRNG (drng.h), and this driver owns drng_algorithm.
 * The KAT text goes to stdout through a private channel (channel.h): what the library
 * prints to stdout lands on stderr. Exit codes (see README.md):
 *   0 text produced;
 *   3 OVERFLOW: a call wrote outside a buffer (a band of at least max(claimed, 4096)
 *     bytes on each side, then a PROT_NONE page), or returned a length above the claim;
 *   2 CRYPTOFAIL: a call returned non-zero, verify rejected the record's own signature,
 *     a getter changed its answer, a claimed size is above 256 MiB, or sig_sign changed
 *     its message.
 * Every diagnostic is one stderr line `OVERFLOW: record=<k> call=<f> buffer=<b>
 * claimed=<n> overrun=<m>|underrun=<m>|returned=<m>` or `CRYPTOFAIL: record=<k>
 * call=<f> ...` (record -1: before the first record).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "channel.h"
#include "drng.h"
#include "guard.h"
#include "kat_schedule.h"

/* NGCC_NO_DRNG: the submission defines drng_algorithm itself (manifest: [build]
 * defines_drng), so the driver only declares it and seeds that one state. */
#ifdef NGCC_NO_DRNG
extern DRNG_ctx drng_algorithm;
#else
DRNG_ctx drng_algorithm;
#endif

/* --- claimed sizes --- */

static unsigned long long claimed(getter get, const char *name) { return claim(get, name, MAX_CLAIM); }

static void same_claim(getter get, const char *name, unsigned long long before) {
    unsigned long long now = get();
    if (now != before) {
        fprintf(stderr, "CRYPTOFAIL: record=%d call=%s returned=%llu then=%llu\n", record, name, before, now);
        exit(EXIT_CRYPTOFAIL);
    }
}

/* --- output --- */

static FILE *kat;

static void print_hex(const char *label, const unsigned char *p, unsigned long long len) {
    fprintf(kat, "%s = ", label);
    fput_hex(kat, p, len);
    fputc('\n', kat);
}

/* `<name>_Len = n` (empty in template mode) then `<name> = HEX`. */
static void print_field(const char *name, const unsigned char *p, unsigned long long len) {
    if (OUTPUT_BLANK_TEST_VECTORS) {
        fprintf(kat, "%s_Len = \n", name);
    } else {
        fprintf(kat, "%s_Len = %llu\n", name, len);
    }
    print_hex(name, p, len);
}

static void nonce(unsigned char out[SEED_BYTES], const char *text, char last) {
    size_t i, n = strlen(text);
    for (i = 0; i < SEED_BYTES; i++) {
        out[i] = (unsigned char)text[i % n];
    }
    if (last != '\0') {
        out[SEED_BYTES - 1] = (unsigned char)last;
    }
}

static void seed_drng(DRNG_ctx *ctx, unsigned char *seed, const char *call) {
    int ret = init_random_number(ctx, seed, SEED_BYTES);
    if (ret != 0) {
        cryptofail_ret(call, ret);
    }
}

static void draw(DRNG_ctx *ctx, unsigned char *out, unsigned long long bits, const char *call) {
    int ret = get_random_number(ctx, out, bits);
    if (ret != 0) {
        cryptofail_ret(call, ret);
    }
}

static void setup(void) {
    guard_setup();
    kat = fdopen(channel_fd, "w");
    if (kat == NULL) {
        perror("fdopen");
        exit(EXIT_CRYPTOFAIL);
    }
}

int main(void) {
    unsigned char seed_nonce[SEED_BYTES], msg_nonce[SEED_BYTES], seed[SEED_BYTES];
    unsigned char copy[56 + 8 * (RECORDS - 1)];
    DRNG_ctx seed_ctx, msg_ctx;
    guarded pk, sk, sn, m;
    unsigned long long pk_max, sk_max, sn_max, pk_len, sk_len, sn_len, m_len;
    int ret;

    setup();
    pk_max = claimed(sig_get_pk_len_bytes, "sig_get_pk_len_bytes");
    sk_max = claimed(sig_get_sk_len_bytes, "sig_get_sk_len_bytes");
    sn_max = claimed(sig_get_sn_len_bytes, "sig_get_sn_len_bytes");
    guarded_alloc(&pk, "pk", pk_max);
    guarded_alloc(&sk, "sk", sk_max);
    guarded_alloc(&sn, "sn", sn_max);
    nonce(seed_nonce, "seed", '\0');
    nonce(msg_nonce, "msg", 'm');
    seed_drng(&seed_ctx, seed_nonce, "init_random_number(seed)");
    seed_drng(&msg_ctx, msg_nonce, "init_random_number(msg)");
    pk_len = pk_max;
    sk_len = sk_max;
    sn_len = sn_max;

    for (record = 0; record < RECORDS; record++) {
        if (NGCC_KAT_RESET_LENGTHS) {
            pk_len = pk_max;
            sk_len = sk_max;
            sn_len = sn_max;
        }
        m_len = 56 + 8 * (unsigned long long)record;
        guarded_alloc(&m, "m", m_len);
        draw(&seed_ctx, seed, 8 * SEED_BYTES, "get_random_number(seed)");
        draw(&msg_ctx, m.data, 8 * m_len, "get_random_number(msg)");
        check_bands(&m);
        memcpy(copy, m.data, (size_t)m_len);
        seed_drng(&drng_algorithm, seed, "init_random_number(drng_algorithm)");

        current_call = "sig_keygen";
        ret = sig_keygen(pk.data, &pk_len, sk.data, &sk_len);
        check_all_bands();
        if (ret != 0) {
            cryptofail_ret(current_call, ret);
        }
        check_returned(&pk, pk_len);
        check_returned(&sk, sk_len);

        current_call = "sig_sign";
        ret = sig_sign(sk.data, sk_len, m.data, m_len, sn.data, &sn_len);
        check_all_bands();
        if (ret != 0) {
            cryptofail_ret(current_call, ret);
        }
        check_returned(&sn, sn_len);
        if (memcmp(copy, m.data, (size_t)m_len) != 0) {
            fprintf(stderr, "CRYPTOFAIL: record=%d call=sig_sign modified=m (it wrote into the message it signs)\n", record);
            return EXIT_CRYPTOFAIL;
        }

        current_call = "sig_verify";
        ret = sig_verify(pk.data, pk_len, sn.data, sn_len, m.data, m_len);
        check_all_bands();
        if (ret != 0) {
            cryptofail_ret("sig_verify(own signature)", ret);
        }
        current_call = "none";

        fprintf(kat, "Count = %d\n", record);
        fprintf(kat, "Seed_Len = %d\n", SEED_BYTES);
        print_hex("Seed", seed, SEED_BYTES);
        print_field("PK", pk.data, pk_len);
        print_field("SK", sk.data, sk_len);
        fprintf(kat, "M_Len = %llu\n", m_len);
        print_hex("M", copy, m_len);
        print_field("Sn", sn.data, sn_len);
        fprintf(kat, "\n");
        fflush(kat);
        guarded_free(&m);
    }
    record = -1;
    same_claim(sig_get_pk_len_bytes, "sig_get_pk_len_bytes", pk_max);
    same_claim(sig_get_sk_len_bytes, "sig_get_sk_len_bytes", sk_max);
    same_claim(sig_get_sn_len_bytes, "sig_get_sn_len_bytes", sn_max);
    if (fclose(kat) != 0) {
        perror("writing the KAT text");
        return EXIT_CRYPTOFAIL;
    }
    return 0;
}
