/* An independent timing of ML-KEM-768 keygen: a plain clock_gettime loop around the
 * same instance library that `cargo xtask bench` timed. Prints nanoseconds. */
#define _POSIX_C_SOURCE 199309L
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int PQCLEAN_MLKEM768_CLEAN_crypto_kem_keypair(uint8_t *pk, uint8_t *sk);

static uint64_t state = 1;
int PQCLEAN_randombytes(uint8_t *out, size_t n);
int PQCLEAN_randombytes(uint8_t *out, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        out[i] = (uint8_t)(state >> 56);
    }
    return 0;
}

int main(int argc, char **argv) {
    static uint8_t pk[1184], sk[2400];
    struct timespec a, b;
    long n = argc > 1 ? atol(argv[1]) : 1000, i;
    for (i = 0; i < 3; i++) {
        PQCLEAN_MLKEM768_CLEAN_crypto_kem_keypair(pk, sk);
    }
    clock_gettime(CLOCK_MONOTONIC_RAW, &a);
    for (i = 0; i < n; i++) {
        PQCLEAN_MLKEM768_CLEAN_crypto_kem_keypair(pk, sk);
    }
    clock_gettime(CLOCK_MONOTONIC_RAW, &b);
    printf("%lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
    return 0;
}
