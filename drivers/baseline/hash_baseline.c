/*
 * The same-run baselines of hash pages: CryptHash over the pinned PQClean tree's
 * common/ SHA-2 and SHA-3 (sha2.c, fips202.c), chosen by NGCC_BASELINE (1 SHA-256,
 * 2 SHA-512, 3 SHA3-256, 4 SHA3-512). Whole-byte messages only (those functions take
 * bytes): another bit length, or another width than the function's, returns -1.
 */
#include <stddef.h>
#include <stdint.h>

#include "CryptHash_baseline.h"
#include "fips202.h"
#include "sha2.h"

#if NGCC_BASELINE == 1 || NGCC_BASELINE == 3
#define WIDTH 256
#else
#define WIDTH 512
#endif

int CryptHash(int digest_len_bits, const unsigned char *msg, unsigned long long msg_len_bits, unsigned char *digest) {
    size_t n = (size_t)(msg_len_bits / 8);
    if (digest_len_bits != WIDTH || msg_len_bits % 8 != 0) {
        return -1;
    }
#if NGCC_BASELINE == 1
    sha256(digest, msg, n);
#elif NGCC_BASELINE == 2
    sha512(digest, msg, n);
#elif NGCC_BASELINE == 3
    sha3_256(digest, msg, n);
#elif NGCC_BASELINE == 4
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
