/* The hash baselines' DRNG: the ICCS names and prototypes, so that the hash KAT driver
 * links against a baseline library. Not the ICCS algorithm (a splitmix64 stream); the
 * baselines' KAT texts are not checked (kat/baseline-hash/kat.sha256 has no line). */
#ifndef NGCC_BASELINE_DRNG_H
#define NGCC_BASELINE_DRNG_H

typedef struct {
    unsigned long long state;
} DRNG_ctx;

int init_random_number(DRNG_ctx *drng, const unsigned char *seed, unsigned long long seed_len_bytes);
int get_random_number(DRNG_ctx *drng, unsigned char *random_number, unsigned long long random_number_len_bits);

#endif
