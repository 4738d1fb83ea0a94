/* hash_bench adapter for the ICCS hash API (CryptHash; no DRNG inside the candidate).
 * The width is the manifest's (NGCC_DIGEST_BITS), else the header's DIGEST_BIT_LENGTH. */
#define BENCH_API "iccs"

#ifdef NGCC_DIGEST_BITS
#define BENCH_DIGEST_BITS NGCC_DIGEST_BITS
#else
#define BENCH_DIGEST_BITS DIGEST_BIT_LENGTH
#endif

static int bench_hash(const unsigned char *msg, unsigned long long bytes, unsigned char *digest) {
    return CryptHash(BENCH_DIGEST_BITS, msg, 8 * bytes, digest);
}

/* A hash function takes no randomness: the reference seed has nothing to seed. */
static int bench_seed(const unsigned char *seed, unsigned long long len) {
    (void)seed;
    (void)len;
    return 0;
}
