/* The ICCS hash API of the same-run baselines (submissions/baseline-hash.toml). */
#ifndef NGCC_CRYPTHASH_BASELINE_H
#define NGCC_CRYPTHASH_BASELINE_H

#include "drng.h"

#define OUTPUT_BLANK_TEST_VECTORS 0
#define ALGORITHM_INSTANCE "baseline"
#ifdef NGCC_DIGEST_BITS
#define DIGEST_BIT_LENGTH NGCC_DIGEST_BITS
#endif

int CryptHash(int digest_len_bits, const unsigned char *msg, unsigned long long msg_len_bits, unsigned char *digest);

#endif
