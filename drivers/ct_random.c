/* Linked into the constant-time variant of an instance's library (recipe::ct_plan, with
 * -Wl,--wrap=get_random_number): the ICCS DRNG's output is marked undefined for memcheck
 * while the ct driver asks for it, so every secret derived from it is tracked. The NIST
 * adapters poison in their own randombytes (nist_shared.h) and use the flags here. */
#include <valgrind/memcheck.h>

int ngcc_ct_poison_random;
unsigned long long ngcc_ct_random_bytes;

struct ngcc_drng;
/* Weak: a library without the ICCS DRNG links all the same. */
int __real_get_random_number(struct ngcc_drng *drng, unsigned char *out, unsigned long long bits)
    __attribute__((weak));
int __wrap_get_random_number(struct ngcc_drng *drng, unsigned char *out, unsigned long long bits);

int __wrap_get_random_number(struct ngcc_drng *drng, unsigned char *out, unsigned long long bits) {
    int ret = __real_get_random_number(drng, out, bits);
    if (ngcc_ct_poison_random) {
        VALGRIND_MAKE_MEM_UNDEFINED(out, (bits + 7) / 8);
        ngcc_ct_random_bytes += (bits + 7) / 8;
    }
    return ret;
}
