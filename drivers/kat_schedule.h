/*
 * ngcc-repro what the official ICCS public-key KAT drivers (KEM, signature, key
 * exchange) share: ten records unless the manifest sets the instance's count
 * (-DNGCC_KAT_RECORDS), 64-byte seeds, and the defaults of the switches the API header or
 * the harness may set (OUTPUT_BLANK_TEST_VECTORS, -DNGCC_KAT_RESET_LENGTHS).
 */
#ifndef NGCC_KAT_SCHEDULE_H
#define NGCC_KAT_SCHEDULE_H

#ifdef NGCC_KAT_RECORDS
#define RECORDS NGCC_KAT_RECORDS
#else
#define RECORDS 10
#endif
#define SEED_BYTES 64
#ifndef OUTPUT_BLANK_TEST_VECTORS
#define OUTPUT_BLANK_TEST_VECTORS 0
#endif
#ifndef NGCC_KAT_RESET_LENGTHS
#define NGCC_KAT_RESET_LENGTHS 0
#endif

#endif
