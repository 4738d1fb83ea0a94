/*
 * The same-run baselines of hash pages: CryptHash over the pinned PQClean tree's
 * common/ SHA-2 and SHA-3 (sha2.c, fips202.c), chosen by NGCC_BASELINE (1 SHA-256,
 * 2 SHA-512, 3 SHA3-256, 4 SHA3-512). SHA-2 takes messages of any bit length (FIPS 180-4
 * §5.1: whole blocks through PQClean's incremental API, the padded tail built here);
 * SHA-3 whole bytes only (FIPS 202 orders bits within a byte otherwise than ICCS
 * messages do). Another bit length, or another width than the function's, returns -1.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "CryptHash_baseline.h"
#include "fips202.h"
#include "sha2.h"

#if NGCC_BASELINE == 1 || NGCC_BASELINE == 3
#define WIDTH 256
#else
#define WIDTH 512
#endif

#if NGCC_BASELINE == 1 || NGCC_BASELINE == 2
/* The tail of a message of `bits` bits after its whole blocks of `block` bytes: its last
 * bits (the high bits of their byte), a 1 bit, zeros, and the length in bits in the last
 * 8 bytes (SHA-512's 128-bit field has zero high bytes here). One or two blocks. */
static size_t sha2_tail(unsigned char *tail, const unsigned char *msg, unsigned long long bits, size_t block,
                        size_t length_bytes) {
    unsigned long long whole = bits / (8ull * block) * block;
    size_t rest = (size_t)(bits - 8 * whole), n = rest / 8, r = rest % 8, total, i;
    memset(tail, 0, 2 * block);
    memcpy(tail, msg + whole, n + (r ? 1 : 0));
    if (r) {
        tail[n] &= (unsigned char)(0xFFu << (8 - r));
    }
    tail[n] |= (unsigned char)(0x80u >> r);
    total = n + 1 + length_bytes <= block ? block : 2 * block;
    for (i = 0; i < 8; i++) {
        tail[total - 1 - i] = (unsigned char)(bits >> (8 * i));
    }
    return total;
}

/* PQClean keeps the state first in its context, big-endian: its own finalize copies it
 * out the same way after the last block. */
static void sha2_bits(const unsigned char *msg, unsigned long long bits, unsigned char *digest) {
    unsigned char tail[256];
#if NGCC_BASELINE == 1
    const size_t block = 64;
    size_t total = sha2_tail(tail, msg, bits, block, 8);
    sha256ctx s;
    sha256_inc_init(&s);
    sha256_inc_blocks(&s, msg, (size_t)(bits / (8 * block)));
    sha256_inc_blocks(&s, tail, total / block);
    memcpy(digest, s.ctx, 32);
    sha256_inc_ctx_release(&s);
#else
    const size_t block = 128;
    size_t total = sha2_tail(tail, msg, bits, block, 16);
    sha512ctx s;
    sha512_inc_init(&s);
    sha512_inc_blocks(&s, msg, (size_t)(bits / (8 * block)));
    sha512_inc_blocks(&s, tail, total / block);
    memcpy(digest, s.ctx, 64);
    sha512_inc_ctx_release(&s);
#endif
}
#endif

int CryptHash(int digest_len_bits, const unsigned char *msg, unsigned long long msg_len_bits, unsigned char *digest) {
    size_t n = (size_t)(msg_len_bits / 8);
    if (digest_len_bits != WIDTH) {
        return -1;
    }
#if NGCC_BASELINE == 1 || NGCC_BASELINE == 2
    (void)n;
    sha2_bits(msg, msg_len_bits, digest);
#elif NGCC_BASELINE == 3
    if (msg_len_bits % 8 != 0) {
        return -1;
    }
    sha3_256(digest, msg, n);
#elif NGCC_BASELINE == 4
    if (msg_len_bits % 8 != 0) {
        return -1;
    }
    sha3_512(digest, msg, n);
#else
#error "NGCC_BASELINE must be 1 to 4"
#endif
    return 0;
}

int init_random_number(DRNG_ctx *drng, const unsigned char *seed, unsigned long long seed_len_bytes) {
    unsigned long long i, h = 0xcbf29ce484222325ULL;
    for (i = 0; i < seed_len_bytes; i++) {
        h = (h ^ seed[i]) * 0x100000001b3ULL;
    }
    drng->state = h;
    return 0;
}

int get_random_number(DRNG_ctx *drng, unsigned char *out, unsigned long long bits) {
    unsigned long long i, n = (bits + 7) / 8;
    for (i = 0; i < n; i++) {
        uint64_t z = (drng->state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        out[i] = (unsigned char)(z ^ (z >> 31));
    }
    if (bits % 8 != 0) {
        out[n - 1] &= (unsigned char)(0xFFu << (8 - bits % 8));
    }
    return 0;
}
