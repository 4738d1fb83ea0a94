/*
 * ngcc-repro ICCS hash KAT driver: writes one of the four files of the official
 * KAT_CryptHash schedule per run (the schedule is restated in drivers/README.md), for one instance library:
 *
 *   kat 2_12 | 2_23 | 2_33 | Loop
 *
 * Each file has its own DRNG, seeded with the first 8 characters of its name ("KAT_2_12")
 * repeated 8 times. 2_12: message lengths 0..4096 bits, one draw per length (also 0) into
 * zeroed bytes. 2_23 and 2_33: three messages of 2^23 / 2^33 bits (all zero, all one,
 * drawn), printed as Msg_Seed and Msg_Exp. Loop: an 8192-bit message m0, h = H(m0), then
 * 10^6 times: rotate the message left by digest_bits/8 bytes, XOR the digest into its
 * first bytes, h = H(m); the record is m0 and the last digest. Fields `Msg_Len Msg|
 * Msg_Seed Msg_Exp Dst_Len Dst` and a blank line, upper-case hex; template mode
 * (OUTPUT_BLANK_TEST_VECTORS 1) prints `Dst = ` empty.
 *
 * Beyond the official driver: the digest width is the manifest's (NGCC_DIGEST_BITS,
 * else the header's DIGEST_BIT_LENGTH) and must be whole bytes; every CryptHash return
 * is checked, also inside the Loop; the message ends at a PROT_NONE page and is read-only
 * during the call (an access past its ceil(bits/8) bytes, or a write into it, is caught);
 * the digest has guard bands (guard.h), checked after every call (in the Loop the 64
 * bytes next to the digest every call, the whole bands every 4096 calls and at the end);
 * before the schedule, one probe hashes a separate message twice into differently
 * filled digest buffers, so a library that writes fewer bytes than the width asks is
 * caught instead of printing stale bytes.
 *
 * Compiled with `-include <the instance's API header>`; the library provides CryptHash
 * and the DRNG (drng.h). The text goes to stdout through channel.h. Exit codes
 * (README.md): 0 text produced; 2 CRYPTOFAIL (a non-zero return, a write into the
 * message, unwritten digest bytes, a DRNG failure); 3 OVERFLOW; 4 the driver could not
 * map its message; 64 bad arguments.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "channel.h"
#include "drng.h"
#include "guard.h"

/* NGCC_NO_DRNG: the submission defines drng_algorithm itself (manifest: [build]
 * defines_drng), so the driver only declares it and seeds that one state. */
#ifdef NGCC_NO_DRNG
extern DRNG_ctx drng_algorithm;
#else
DRNG_ctx drng_algorithm;
#endif

#ifdef NGCC_DIGEST_BITS
#define DBITS NGCC_DIGEST_BITS
#else
#define DBITS DIGEST_BIT_LENGTH
#endif
#if DBITS <= 0 || DBITS % 8 != 0 || DBITS > 8192
#error "the digest width must be a positive multiple of 8 bits, at most 8192"
#endif
#define DBYTES (DBITS / 8)
#ifndef OUTPUT_BLANK_TEST_VECTORS
#define OUTPUT_BLANK_TEST_VECTORS 0
#endif

#define SEED_BYTES 64
#define SHORT_MAX_BITS 4096ull
#define LOOP_BITS 8192ull
#define LOOP_ROUNDS 1000000
#define LOOP_FULL_CHECK 4096
#define NEAR_BAND 64

static FILE *kat;
static guarded dig;
static input_buf msg;

static void print_hex(const unsigned char *p, unsigned long long len) { fput_hex(kat, p, len); }

/* "KAT_<part>" cut to 8 characters, 8 times. */
static void file_seed(unsigned char seed[SEED_BYTES], const char *part) {
    char name[16];
    int i;
    snprintf(name, sizeof name, "KAT_%s", part);
    for (i = 0; i < SEED_BYTES; i++) {
        seed[i] = (unsigned char)name[i % 8];
    }
}

static void seed_file(DRNG_ctx *ctx, unsigned char seed[SEED_BYTES], const char *part) {
    int ret;
    file_seed(seed, part);
    current_call = "init_random_number";
    ret = init_random_number(ctx, seed, SEED_BYTES);
    if (ret != 0) {
        cryptofail_ret(current_call, ret);
    }
    current_call = "none";
}

static void draw(DRNG_ctx *ctx, unsigned char *out, unsigned long long bits) {
    int ret;
    current_call = "get_random_number";
    ret = get_random_number(ctx, out, bits);
    if (ret != 0) {
        cryptofail_ret(current_call, ret);
    }
    current_call = "none";
}

/* One CryptHash of the message's first `bits` bits into the digest, checked. The Loop
 * calls it with `hot`: the message stays writable (two mprotect calls per round would
 * dominate; a write into it changes the chained result) and only the band bytes next
 * to the digest are checked, except every LOOP_FULL_CHECK rounds. */
static void hash(unsigned long long bits, int hot, int full_check) {
    int ret;
    current_call = "CryptHash";
    if (!hot) {
        input_lend(&msg, 1);
    }
    ret = CryptHash(DBITS, msg.data, bits, dig.data);
    if (!hot) {
        input_lend(&msg, 0);
    }
    if (full_check) {
        check_bands(&dig);
    } else {
        check_bands_near(&dig, NEAR_BAND);
    }
    if (ret != 0) {
        cryptofail_ret(current_call, ret);
    }
    current_call = "none";
}

static void print_full(unsigned long long bits) {
    unsigned long long whole = bits / 8;
    fprintf(kat, "Msg_Len = %llu\nMsg = ", bits);
    print_hex(msg.data, whole);
    if (bits % 8) {
        unsigned char last = (unsigned char)(msg.data[whole] & (unsigned char)(0xFFu << (8 - bits % 8)));
        print_hex(&last, 1);
    }
    fputc('\n', kat);
}

static void print_partial(unsigned long long bits, const unsigned char *seed) {
    fprintf(kat, "Msg_Len = %llu\nMsg_Seed = ", bits);
    if (seed != NULL) {
        print_hex(seed, SEED_BYTES);
    }
    fputs("\nMsg_Exp = ", kat);
    print_hex(msg.data, 8);
    fputs(" .... ", kat);
    print_hex(msg.data + bits / 8 - 8, 8);
    fputc('\n', kat);
}

static void print_digest(void) {
    fprintf(kat, "Dst_Len = %d\nDst = ", DBITS);
    if (!OUTPUT_BLANK_TEST_VECTORS) {
        print_hex(dig.data, DBYTES);
    }
    fputs("\n\n", kat);
}

/* A library writing fewer digest bytes than the width asks leaves bytes that differ
 * between a digest buffer filled with 0x00 and one filled with 0xFF. */
static void probe_width(void) {
    static const unsigned char text[3] = {0x61, 0x62, 0x63};
    unsigned char first[DBYTES];
    input_buf probe;
    int i, unwritten = 0;
    input_alloc(&probe, "probe", sizeof text);
    memcpy(probe.data, text, sizeof text);
    for (i = 0; i < 2; i++) {
        int ret;
        memset(dig.data, i == 0 ? 0x00 : 0xFF, DBYTES);
        current_call = "CryptHash";
        input_lend(&probe, 1);
        ret = CryptHash(DBITS, probe.data, 8 * sizeof text, dig.data);
        input_lend(&probe, 0);
        check_bands(&dig);
        if (ret != 0) {
            cryptofail_ret("CryptHash(probe)", ret);
        }
        if (i == 0) {
            memcpy(first, dig.data, DBYTES);
        }
    }
    for (i = 0; i < DBYTES; i++) {
        unwritten += first[i] != dig.data[i];
    }
    if (unwritten > 0) {
        fprintf(stderr,
                "CRYPTOFAIL: record=-1 call=CryptHash unwritten=%d digest_bytes=%d (digest_bits=%d: it wrote fewer "
                "bytes than the width asks)\n",
                unwritten, DBYTES, DBITS);
        exit(EXIT_CRYPTOFAIL);
    }
    live_message = NULL;
    munmap(probe.map, probe.map_len);
    current_call = "none";
}

static void file_short(void) {
    unsigned char seed[SEED_BYTES];
    DRNG_ctx ctx;
    unsigned long long bits;
    seed_file(&ctx, seed, "2_12");
    input_alloc(&msg, "msg", SHORT_MAX_BITS / 8);
    for (bits = 0; bits <= SHORT_MAX_BITS; bits++) {
        record = (int)bits;
        input_set_len(&msg, (bits + 7) / 8);
        memset(msg.data, 0, (size_t)msg.len);
        draw(&ctx, msg.data, bits);
        print_full(bits);
        hash(bits, 0, 1);
        print_digest();
    }
}

static void file_large(const char *part, unsigned long long bits) {
    unsigned char seed[SEED_BYTES];
    DRNG_ctx ctx;
    seed_file(&ctx, seed, part);
    input_alloc(&msg, "msg", bits / 8);
    /* A fresh mapping reads as zeros without being touched. */
    record = 0;
    print_partial(bits, NULL);
    hash(bits, 0, 1);
    print_digest();
    record = 1;
    memset(msg.data, 0xFF, (size_t)(bits / 8));
    print_partial(bits, NULL);
    hash(bits, 0, 1);
    print_digest();
    record = 2;
    memset(msg.data, 0, (size_t)(bits / 8));
    draw(&ctx, msg.data, bits);
    print_partial(bits, seed);
    hash(bits, 0, 1);
    print_digest();
}

static void file_loop(void) {
    unsigned char seed[SEED_BYTES], head[DBYTES];
    const size_t n = LOOP_BITS / 8, d = DBYTES;
    DRNG_ctx ctx;
    long i;
    size_t j;
    seed_file(&ctx, seed, "Loop");
    input_alloc(&msg, "msg", n);
    draw(&ctx, msg.data, LOOP_BITS);
    record = 0;
    print_full(LOOP_BITS);
    hash(LOOP_BITS, 0, 1);
    for (i = 0; i < LOOP_ROUNDS; i++) {
        record = (int)(i + 1);
        memcpy(head, msg.data, d);
        memmove(msg.data, msg.data + d, n - d);
        memcpy(msg.data + n - d, head, d);
        for (j = 0; j < d; j++) {
            msg.data[j] ^= dig.data[j];
        }
        hash(LOOP_BITS, 1, (i + 1) % LOOP_FULL_CHECK == 0 || i + 1 == LOOP_ROUNDS);
    }
    print_digest();
}

int main(int argc, char **argv) {
    const char *part = argc == 2 ? argv[1] : "";
    guard_setup();
    kat = fdopen(channel_fd, "w");
    if (kat == NULL) {
        perror("fdopen");
        return EXIT_CRYPTOFAIL;
    }
    if (strcmp(part, "2_12") && strcmp(part, "2_23") && strcmp(part, "2_33") && strcmp(part, "Loop")) {
        fprintf(stderr, "usage: kat 2_12|2_23|2_33|Loop\n");
        return 64;
    }
    guarded_alloc(&dig, "digest", DBYTES);
    probe_width();
    if (!strcmp(part, "2_12")) {
        file_short();
    } else if (!strcmp(part, "2_23")) {
        file_large(part, 1ull << 23);
    } else if (!strcmp(part, "2_33")) {
        file_large(part, 1ull << 33);
    } else {
        file_loop();
    }
    record = -1;
    if (fclose(kat) != 0) {
        perror("writing the KAT text");
        return EXIT_CRYPTOFAIL;
    }
    return 0;
}
